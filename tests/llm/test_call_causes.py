"""A call's cause says the HTTP status once (issue 25: "HTTP 503: HTTP 503: ...")."""

from __future__ import annotations

from halugen.errors import RetryableError
from halugen.llm.calls import _describe
from halugen.llm.client import error_for
from halugen.llm.transport import HttpResponse


def test_a_cause_names_the_status_once() -> None:
    body = b'{"error": {"message": "the model is overloaded"}}'
    cause = _describe(error_for(HttpResponse(503, {}, body), "sk-secret"))
    assert cause == "HTTP 503: the model is overloaded"
    assert _describe(error_for(HttpResponse(502, {}, b""), "sk-secret")) == "HTTP 502"
    # a message that does not begin with its status keeps it in front
    assert _describe(RetryableError("upstream reset", status=500)) == "HTTP 500: upstream reset"
    assert _describe(RetryableError("connection failed: reset")) == (
        "RetryableError: connection failed: reset"
    )
