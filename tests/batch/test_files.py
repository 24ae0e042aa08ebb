"""The batch file format: input lines, splitting at the limits, reading output lines."""

from __future__ import annotations

import orjson
import pytest

from halugen.batch.files import input_line, read_output, read_output_lenient, split_lines
from halugen.errors import InputError

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


def test_an_input_line_carries_the_body_bytes_unchanged():
    body = b'{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":5}'
    line = input_line("k" * 64, body)
    assert line.endswith(b"\n")
    data = orjson.loads(line)
    assert data == {
        "custom_id": "k" * 64,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": orjson.loads(body),
    }
    assert body in line


def test_groups_stay_within_both_limits():
    items = [(i, b"x" * (10 if i % 3 else 30) + b"\n") for i in range(20)]
    groups = list(split_lines(items, max_requests=4, max_bytes=60))
    assert [i for g in groups for i, _ in g] == list(range(20))  # order kept, nothing lost
    for g in groups:
        assert len(g) <= 4
        assert sum(len(line) for _, line in g) <= 60
    big = list(split_lines([(0, b"y" * 100)], max_requests=4, max_bytes=60))
    assert big == [[(0, b"y" * 100)]]  # alone: the caller refuses it


def test_openai_success_error_and_expired_lines():
    data = b"\n".join(
        orjson.dumps(x)
        for x in (
            {
                "id": "batch_req_1",
                "custom_id": "a",
                "response": {"status_code": 200, "request_id": "r", "body": COMPLETION},
                "error": None,
            },
            {
                "id": "batch_req_2",
                "custom_id": "b",
                "response": {
                    "status_code": 400,
                    "request_id": "r",
                    "body": {"error": {"message": "too long", "code": "context_length_exceeded"}},
                },
                "error": None,
            },
            {
                "id": "batch_req_3",
                "custom_id": "c",
                "response": None,
                "error": {"code": "batch_expired", "message": "not run in time"},
            },
            {
                "id": "batch_req_4",
                "custom_id": "d",
                "response": {"status_code": 500, "request_id": "r", "body": {"error": {}}},
                "error": None,
            },
        )
    )
    a, b, c, d = read_output(data, "out.jsonl")
    assert a.ok and a.completion is not None and not a.retryable
    assert a.completion.texts == ("hi",) and orjson.loads(a.completion.raw) == COMPLETION
    assert not b.ok and b.error == "too long" and b.code == "context_length_exceeded"
    assert not b.retryable
    assert c.retryable and c.code == "batch_expired" and c.status_code == 0
    assert d.retryable and d.status_code == 500


def test_vllm_run_batch_lines_are_read():
    # vLLM writes one file: successes and errors, error as a string or an error object
    ok = {
        "id": "vllm-1",
        "custom_id": "a",
        "response": {"status_code": 200, "request_id": "vllm-batch-1", "body": COMPLETION},
        "error": None,
    }
    as_text = {
        "id": "vllm-2",
        "custom_id": "b",
        "response": {"status_code": 400, "request_id": "vllm-batch-2", "body": None},
        "error": "Request must not be sent in stream mode",
    }
    as_object = {
        "id": "vllm-3",
        "custom_id": "c",
        "response": {"status_code": 404, "request_id": "vllm-batch-3", "body": None},
        "error": {"error": {"message": "The model `x` does not exist.", "code": 404}},
    }
    data = b"\n".join(orjson.dumps(x) for x in (ok, as_text, as_object)) + b"\n"
    a, b, c = read_output(data, "results.jsonl")
    assert a.ok
    assert b.error == "Request must not be sent in stream mode" and not b.retryable
    assert c.error == "The model `x` does not exist." and c.status_code == 404


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b"{oops", "line 2: not a JSON object"),
        (b'{"response": {"status_code": 200, "body": {}}}', "line 2: no custom_id"),
        (b'{"custom_id": "x", "method": "POST", "body": {}}', "line 2: neither"),
        (b'{"custom_id": "x", "response": {"status_code": 200, "body": {}}}', "without a chat"),
        (b'{"custom_id": "x", "response": {"status_code": "200"}}', "not an integer"),
    ],
)
def test_a_malformed_line_is_named(line, words):
    good = orjson.dumps(
        {"custom_id": "a", "response": {"status_code": 200, "body": COMPLETION}, "error": None}
    )
    with pytest.raises(InputError) as exc:
        list(read_output(good + b"\n" + line, "results.jsonl"))
    assert "results.jsonl" in str(exc.value) and words in str(exc.value)
    readable, bad = read_output_lenient(good + b"\n" + line, "f")
    assert len(readable) == 1 and bad == 1
