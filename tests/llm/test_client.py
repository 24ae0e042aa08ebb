"""The chat client over the in-process transport: request shape, parsing, error classes."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from halugen.config import Timeouts
from halugen.errors import AuthError, FatalCallError, RateLimited, RetryableError
from halugen.llm.client import ChatClient, read_completion, stored_result
from halugen.llm.transport import HandlerTransport, HttpResponse
from halugen.records import ChatRequest

REQ = ChatRequest(
    model="gpt-4o-mini",
    messages=({"role": "user", "content": "hi"},),
    temperature=0.0,
    max_tokens=16,
    seed=3,
    stop=("\n\n",),
)


def ok_body(content: str = "Choice: 1", usage: dict | None = None, finish: str = "stop") -> bytes:
    data: dict = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "model": "gpt-4o-mini-2024-07-18",
    }
    if usage is not None:
        data["usage"] = usage
    return orjson.dumps(data)


def client_for(
    status: int, body: bytes, headers: dict | None = None, seen: list | None = None, **kw
) -> ChatClient:
    async def handler(path, hdrs, raw):
        if seen is not None:
            seen.append((path, hdrs, orjson.loads(raw)))
        return HttpResponse(status, headers or {}, body)

    return ChatClient(
        base_url="http://x/v1",
        api_key="sk-secret",
        transport=HandlerTransport(handler),
        timeouts=Timeouts(total=1),
        **kw,
    )


def send(client: ChatClient, request: ChatRequest = REQ):
    return asyncio.run(client.send(request))


def test_request_shape_and_usage():
    seen: list = []
    c = client_for(
        200,
        ok_body(
            usage={
                "prompt_tokens": 12,
                "completion_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 4},
            }
        ),
        seen=seen,
    )
    result = send(c)
    path, headers, payload = seen[0]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-secret"
    assert payload == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.0,
        "max_tokens": 16,
        "seed": 3,
        "stop": ["\n\n"],
    }
    assert result.text == "Choice: 1" and result.finish_reason == "stop"
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (12, 3, 4)
    assert not result.usage_estimated


def test_missing_usage_is_counted_and_flagged():
    result = send(client_for(200, ok_body("some words here")))
    assert result.usage_estimated
    assert result.prompt_tokens > 0 and result.completion_tokens > 0


def test_reasoning_models_get_max_completion_tokens():
    seen: list = []
    c = client_for(200, ok_body(usage={"prompt_tokens": 1, "completion_tokens": 1}), seen=seen)
    send(c, ChatRequest(model="o4-mini", messages=REQ.messages, temperature=0.0, max_tokens=99))
    payload = seen[0][2]
    assert payload["max_completion_tokens"] == 99 and "max_tokens" not in payload
    assert "temperature" not in payload


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind", "retry_after"),
    [
        (
            429,
            b'{"error":{"message":"slow down","code":"rate_limit_exceeded"}}',
            {"retry-after-ms": "1500"},
            RateLimited,
            1.5,
        ),
        (429, b'{"error":{"message":"no money","code":"insufficient_quota"}}', {}, AuthError, None),
        (500, b"oops", {}, RetryableError, None),
        (503, b"", {"retry-after": "2"}, RetryableError, 2.0),
        (408, b"", {}, RetryableError, None),
        (409, b"", {}, RetryableError, None),
        (401, b'{"error":{"message":"bad key sk-secret"}}', {}, AuthError, None),
        (
            400,
            b'{"error":{"message":"too long","code":"context_length_exceeded"}}',
            {},
            FatalCallError,
            None,
        ),
        (404, b'{"error":{"message":"no such model"}}', {}, FatalCallError, None),
        (422, b"{}", {}, FatalCallError, None),
        (403, b"forbidden", {}, FatalCallError, None),
    ],
)
def test_error_classes(status, body, headers, kind, retry_after):
    with pytest.raises(kind) as info:
        send(client_for(status, body, headers))
    err = info.value
    assert type(err) is kind or isinstance(err, kind)
    if kind is not AuthError and issubclass(kind, RetryableError):
        assert err.retry_after == retry_after
        assert not err.billed_maybe  # an error answer was not billed
    if status == 401:
        assert "API key" in str(err)
        assert "sk-secret" not in str(err)  # the key never reaches a message
    if status == 400:
        assert "context" in str(err)


def test_malformed_200_is_retryable_and_maybe_billed():
    for body in (b"{not json", b'{"choices": []}', b'{"id": 1}', b"[]"):
        with pytest.raises(RetryableError) as info:
            send(client_for(200, body))
        assert info.value.billed_maybe


def test_content_filter_is_an_outcome_not_an_error():
    result = send(
        client_for(
            200,
            ok_body(
                "", finish="content_filter", usage={"prompt_tokens": 5, "completion_tokens": 0}
            ),
        )
    )
    assert result.finish_reason == "content_filter"


def test_transport_timeout_is_retryable_and_maybe_billed():
    async def slow(path, headers, body):
        await asyncio.sleep(10)

    c = ChatClient(
        base_url="http://x/v1",
        api_key=None,
        transport=HandlerTransport(slow),
        timeouts=Timeouts(total=0.01),
    )
    with pytest.raises(RetryableError) as info:
        asyncio.run(c.send(REQ))
    assert info.value.billed_maybe


def test_one_reader_of_chat_completions_for_answers_stored_answers_and_batch_lines():
    body = {
        "model": "m-2024",
        "choices": [
            {"index": 1, "message": {"content": [{"type": "text", "text": "b"}]}},
            {"index": 0, "message": {"content": "a"}, "finish_reason": "stop", "logprobs": {}},
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                  "prompt_tokens_details": {"cached_tokens": 3}},
    }  # fmt: skip
    for given in (body, orjson.dumps(body), orjson.dumps(body).decode()):
        read = read_completion(given)
        assert read.texts == ("a", "b") and read.finish_reasons == ("stop", "")
        assert read.usage == (7, 2, 3) and read.model == "m-2024"
        result = read.result(model="m", messages=[], count_tokens=len)
        assert (result.prompt_tokens, result.cached_tokens, result.model) == (7, 3, "m-2024")
        assert not result.usage_estimated and result.logprobs == ({}, None)
    # no usage (or a null count): counted by us from the request, and said so
    bare = {"choices": [{"message": {"content": "four"}}], "usage": {"prompt_tokens": None}}
    result = read_completion(bare).result(
        model="m", messages=[{"content": "abc"}], count_tokens=len
    )
    assert result.usage_estimated and result.prompt_tokens == 3 + 4 + 3
    assert result.completion_tokens == 4 and result.model == "m"
    # a stored answer keeps the stored counts
    stored = stored_result((orjson.dumps(body).decode(), 9, 1, 0, False), "m")
    assert stored is not None and stored.from_cache and stored.texts == ("a", "b")
    assert (stored.prompt_tokens, stored.completion_tokens, stored.model) == (9, 1, "m")
    assert stored_result(("{not json", 1, 1, 0, False), "m") is None
    assert stored_result(('{"choices": ["x"]}', 1, 1, 0, False), "m") is None


def test_observe_sees_every_response():
    seen = []
    c = client_for(
        429, b"{}", {"x-ratelimit-limit-requests": "100"}, observe=lambda s, h: seen.append((s, h))
    )
    with pytest.raises(RateLimited):
        send(c)
    assert seen == [(429, {"x-ratelimit-limit-requests": "100"})]


def test_request_key_is_stable_and_sensitive():
    a = ChatRequest(model="m", messages=({"role": "user", "content": "x"},))
    b = ChatRequest(model="m", messages=({"role": "user", "content": "x"},))
    assert a.key == b.key and len(a.key) == 64
    assert ChatRequest(model="m", messages=a.messages, index=1).key != a.key
    assert ChatRequest(model="m", messages=a.messages, temperature=0.5).key != a.key
    assert ChatRequest(model="m2", messages=a.messages).key != a.key
    assert ChatRequest(model="m", messages=({"role": "user", "content": "y"},)).key != a.key


def test_azure_style_gateways_get_the_key_in_an_api_key_header():
    seen: list = []
    send(client_for(200, ok_body(), seen=seen, auth="api-key"))
    _, headers, _ = seen[0]
    assert headers["api-key"] == "sk-secret"
    assert "authorization" not in headers


def test_prompt_cache_keys_name_their_template_and_stay_within_64_characters() -> None:
    from halugen.llm.endpoint import prompt_cache_key, takes_cache_key
    from halugen.records import ChatRequest

    assert prompt_cache_key("qa/filter") == "halugen/qa/filter"
    long = prompt_cache_key("my-very-long-task-name-from-a-folder/" + "x" * 80)
    assert len(long) <= 64 and long.startswith("halugen/")
    assert long != prompt_cache_key("my-very-long-task-name-from-a-folder/" + "y" * 80)
    assert takes_cache_key("https://api.openai.com/v1")
    assert not takes_cache_key("http://127.0.0.1:8080/v1")
    plain = ChatRequest(model="m", messages=({"role": "user", "content": "hi"},))
    keyed = ChatRequest(model="m", messages=plain.messages, cache_key="halugen/qa/filter")
    assert "prompt_cache_key" not in plain.payload()
    assert keyed.payload()["prompt_cache_key"] == "halugen/qa/filter"
    # a routing hint: the same question, the same key (an answer is found whichever
    # endpoint asked for it: a batch file exported for OpenAI, a run on another server)
    assert keyed.key == plain.key
