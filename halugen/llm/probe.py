"""Capability probes: small requests with fixed bodies, and how their answers are read.

A probe asks for one feature in a request a few tokens long whose body never changes, so its
key (and a stored answer) is reused, and it is reserved under the budget like any call. It
gets one attempt at the feature:

- a 4xx means "not supported";
- a 5xx is either the feature's fault (llama-cpp-python answers a JSON schema with a 500) or
  a fault of the server's: the same probe without the feature (a fixed body too) tells
  them apart. When it is answered and the feature gets the same 5xx once more, the feature
  is not supported; otherwise the server is in trouble and the probe has no answer yet. (A
  single 5xx would let a passing fault decide for every later run of the endpoint);
- a 200 that ignores the feature (a text reply to a JSON schema, one choice for ``n=2``, no
  logprobs) means "not supported"; one that honours it means "supported";
- no answer at all (429, 408, 409, 502-504, a timeout, a dropped connection, a body that is
  not a chat completion, a content filter) says nothing about the feature: the probe is
  tried again under the run's retry policy, and when it still has no answer
  ``ProbeUnanswered`` carries the last failure to the call that waited for it.

The schema asks for a word the prompt does not ask for, so a model that follows the prompt
and ignores the schema cannot look like one that honours it.
"""

from __future__ import annotations

import random
from dataclasses import replace

from ..errors import RetryableError
from ..records import ChatRequest, ChatResult
from ..reply_text import json_object, visible_text
from ..structured_outputs import json_schema_format
from .calls import CallFailure, CallRunner
from .retrying import retrying

__all__ = ["PROBE_STAGE", "ProbeUnanswered", "control_request", "probe", "probe_request"]

PROBE_STAGE = "probe"  # the stage the probes' calls are logged under
_MESSAGES = ({"role": "user", "content": "Say OK."},)
_FORMAT = json_schema_format("probe", {"probe": {"type": "string", "enum": ["halugen"]}})
# what says nothing about the feature: no answer, or an answer that is not one
_NO_ANSWER = frozenset({0, 200, 408, 409, 429, 502, 503, 504})
TOP_LOGPROBS = 5  # what eval asks for with --scoring logprobs
_N_PROBED = 2  # choices the n probe asks for when the caller names no number


class ProbeUnanswered(Exception):
    """The probe got no answer within its attempts; ``failure`` is the last one."""

    def __init__(self, failure: CallFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class _NoAnswer(RetryableError):
    def __init__(self, failure: CallFailure) -> None:
        super().__init__(failure.message, status=failure.status)
        self.failure = failure


def control_request(model: str) -> ChatRequest:
    """The probe without any feature: what tells a refusal from a failing server."""
    return ChatRequest(model=model, messages=_MESSAGES, temperature=0.0, max_tokens=16)


def probe_request(capability: str, model: str, value: int | None = None) -> ChatRequest:
    """The fixed request that asks ``model`` for ``capability`` (``n``: ``value`` choices,
    the number the run will ask for; 2 when not given)."""
    base = control_request(model)
    if capability == "json_schema":
        return replace(base, response_format=_FORMAT)
    if capability == "n":
        # some servers refuse n > 1 when greedy
        return replace(base, temperature=1.0, n=value or _N_PROBED)
    if capability == "logprobs":
        return replace(base, logprobs=True, top_logprobs=TOP_LOGPROBS)
    raise ValueError(f"no probe for {capability!r}")


async def probe(
    runner: CallRunner,
    capability: str,
    model: str,
    *,
    task: str,
    rng: random.Random,
    value: int | None = None,
) -> tuple[bool, str]:
    """(supported, how that was found out). Raises ``ProbeUnanswered`` (see the module)."""
    request = probe_request(capability, model, value)

    async def once() -> ChatResult | CallFailure:
        return await runner.call(request, stage=PROBE_STAGE, task=task, max_attempts=1)

    async def ask() -> tuple[bool, str]:
        result = await once()
        if isinstance(result, CallFailure) and result.status >= 500:
            if result.status in _NO_ANSWER:
                raise _NoAnswer(result)
            # the feature's fault, or the server's? the plain twin, then the feature once more
            control = await runner.call(
                control_request(model), stage=PROBE_STAGE, task=task, max_attempts=1
            )
            if isinstance(control, CallFailure):
                raise _NoAnswer(result)
            again = await once()
            if isinstance(again, CallFailure) and again.status == result.status:
                return False, f"HTTP {result.status} twice with {capability}, 200 without it"
            result = again
        if isinstance(result, CallFailure):
            if result.status in _NO_ANSWER or result.status >= 500:
                raise _NoAnswer(result)
            return False, f"HTTP {result.status} to the probe: {result.message}"[:300]
        if "content_filter" in result.finish_reasons:
            raise _NoAnswer(
                CallFailure(request.key, "ContentFilter", "the probe was filtered", 200)
            )
        return _read(capability, result, request.n)

    try:
        return await retrying(ask, policy=runner.retry, rng=rng)
    except _NoAnswer as exc:
        raise ProbeUnanswered(exc.failure) from None


def _read(capability: str, result: ChatResult, n: int) -> tuple[bool, str]:
    """Whether a 200 reply honoured the feature."""
    if capability == "json_schema":
        text = visible_text(result.text)
        reply = json_object(text)
        if (isinstance(reply, dict) and "probe" in reply) or (
            result.finish_reason == "length" and text.lstrip().startswith("{")
        ):
            return True, "accepted"
        return False, "ignored: the reply was text"
    if capability == "n":
        got = len(result.texts)
        told = f"{got} choice{'s' if got != 1 else ''} for n={n}"
        return got >= n, told
    if result.logprobs and result.logprobs[0]:
        return True, "given"
    return False, "ignored: the reply had no logprobs"
