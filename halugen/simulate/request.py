"""Reading a chat-completions request body, and OpenAI-style error bodies.

Checks follow OpenAI's: a JSON object with ``model`` and a non-empty ``messages`` array;
``n``, ``max_tokens``/``max_completion_tokens``, ``temperature``, ``stop``, ``logprobs`` and
``top_logprobs`` within their ranges; ``response_format`` of a known type;
``prompt_cache_key`` a string and ``prompt_cache_retention`` "in_memory" or "24h". Message content
may be a string or an array of content parts (their text parts are joined). A failed check
raises ``BadRequest``, which the simulator answers with a 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..llm.transport import HttpResponse
from .structured import check_response_format
from .tokens import TokenRule, count_prompt

__all__ = ["MAX_N", "BadRequest", "ChatBody", "error_response", "parse_body"]

MAX_N = 128
_JSON = "application/json"


@dataclass(frozen=True, slots=True)
class ChatBody:
    """The parts of a request body the simulator uses (``body`` is the parsed JSON)."""

    body: dict[str, Any]
    model: str
    contents: tuple[str, ...]
    last_user: str
    n: int
    max_tokens: int | None
    stop: tuple[str, ...]
    logprobs: bool
    top_logprobs: int
    prompt_tokens: int
    response_format: dict[str, Any] | None = None  # a JSON format asked for; None: text


class BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def error_response(
    status: int,
    message: str,
    type_: str,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpResponse:
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return HttpResponse(
        status=status, headers={"content-type": _JSON, **(headers or {})}, body=orjson.dumps(body)
    )


def _int_param(body: Mapping[str, Any], name: str, low: int, high: int | None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadRequest(f"'{name}' must be an integer {bound}, got {value!r}", name)
    return value


def parse_body(data: bytes, rule: TokenRule | None = None) -> ChatBody:
    """The request in ``data``, its prompt tokens counted by ``rule`` (the byte rule)."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise BadRequest("We could not parse the JSON body of your request.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("You must provide a model parameter.", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty array.", "messages")
    contents: list[str] = []
    last_user: str | None = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequest(f"messages[{i}] must be an object with a 'role'.", "messages")
        content = message.get("content")
        if content is None:
            text = ""
        elif isinstance(content, str):
            text = content
        elif isinstance(content, list):  # content parts: keep the text ones
            text = "".join(
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        else:
            raise BadRequest(f"messages[{i}].content must be a string or an array.", "messages")
        contents.append(text)
        if message["role"] == "user":
            last_user = text
    n = _int_param(body, "n", 1, MAX_N) or 1
    max_tokens = _int_param(body, "max_completion_tokens", 1, None)
    if max_tokens is None:
        max_tokens = _int_param(body, "max_tokens", 1, None)
    temperature = body.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        raise BadRequest("'temperature' must be a number between 0 and 2.", "temperature")
    stop = body.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,)
    elif isinstance(stop, list) and len(stop) <= 4 and all(isinstance(s, str) for s in stop):
        stops = tuple(s for s in stop if s)
    else:
        raise BadRequest("'stop' must be a string or an array of up to 4 strings.", "stop")
    logprobs = body.get("logprobs") or False
    if not isinstance(logprobs, bool):
        raise BadRequest("'logprobs' must be a boolean.", "logprobs")
    top = _int_param(body, "top_logprobs", 0, 20) or 0
    # prompt caching's two parameters (caching.py reads them from the body)
    cache_key = body.get("prompt_cache_key")
    if cache_key is not None and not isinstance(cache_key, str):
        raise BadRequest("'prompt_cache_key' must be a string.", "prompt_cache_key")
    retention = body.get("prompt_cache_retention")
    if retention is not None and retention not in ("in_memory", "24h"):
        raise BadRequest(
            f"Invalid value for 'prompt_cache_retention': {retention!r}; "
            "supported values are 'in_memory' and '24h'.",
            "prompt_cache_retention",
            "invalid_value",
        )
    try:
        response_format = check_response_format(body.get("response_format"))
    except ValueError as exc:
        raise BadRequest(str(exc), "response_format") from None
    return ChatBody(
        body=body,
        model=model,
        contents=tuple(contents),
        last_user=last_user if last_user is not None else contents[-1],
        n=n,
        max_tokens=max_tokens,
        stop=stops,
        logprobs=logprobs,
        top_logprobs=top,
        prompt_tokens=count_prompt(contents, rule),
        response_format=response_format,
    )
