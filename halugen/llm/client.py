"""The OpenAI-compatible chat-completions client: one attempt per ``send``.

The only module that builds provider requests and parses provider JSON. ``read_completion``
is the one reader of a chat-completion body, wherever it comes from: an answer of the
endpoint, a stored answer (``stored_result``), a line of a batch output file. Errors come
out as halugen's error tree (errors.py); retrying, budgeting and rate limiting are the
caller's (llm/calls.py), because each attempt must be reserved and paced on its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..config import Timeouts
from ..errors import AuthError, ContextTooLong, FatalCallError, RateLimited, RetryableError
from ..records import ChatRequest, ChatResult
from .endpoint import context_window_from_error
from .retrying import retry_after_seconds
from .transport import HttpResponse, Transport

__all__ = [
    "ChatClient",
    "Completion",
    "UnreadableCompletion",
    "error_for",
    "read_completion",
    "stored_result",
]

# Models that take max_completion_tokens (and only their default temperature).
_REASONING = re.compile(r"^(o\d|gpt-5)")


class UnreadableCompletion(ValueError):
    """A body that is not a chat completion (no choices, a choice that is not an object)."""


@dataclass(frozen=True, slots=True)
class Completion:
    """A chat completion as the provider sent it, read once.

    ``usage`` is (prompt, completion, cached) tokens, None when the provider sent none.
    """

    texts: tuple[str, ...]
    finish_reasons: tuple[str, ...]
    logprobs: tuple[Any, ...]
    usage: tuple[int, int, int] | None
    model: str
    raw: bytes

    def result(
        self,
        *,
        model: str,
        messages: Iterable[Any],
        count_tokens: Callable[[str], int],
        latency_ms: float = 0.0,
    ) -> ChatResult:
        """The ChatResult of this completion; tokens counted by us when it has no usage."""
        if self.usage is None:
            contents = [m.get("content", "") for m in messages if isinstance(m, Mapping)]
            prompt = sum(count_tokens(c if isinstance(c, str) else "") + 4 for c in contents) + 3
            completion = sum(count_tokens(t) for t in self.texts)
            cached = 0
        else:
            prompt, completion, cached = self.usage
        return ChatResult(
            texts=self.texts,
            finish_reasons=self.finish_reasons,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            usage_estimated=self.usage is None,
            model=self.model or model,
            raw=self.raw,
            latency_ms=latency_ms,
            logprobs=self.logprobs if any(lp is not None for lp in self.logprobs) else (),
        )


def read_completion(body: bytes | str | Mapping[str, Any]) -> Completion:
    """Read a chat-completion body (bytes as received, or already decoded).

    Raises ``UnreadableCompletion`` for anything that is not one.
    """
    if type(body) is not bytes and isinstance(body, Mapping):
        data: Any = body
        raw = orjson.dumps(dict(body))
    else:
        raw = body.encode() if isinstance(body, str) else body
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise UnreadableCompletion("not JSON") from None
    if not _is_object(data):
        raise UnreadableCompletion("not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise UnreadableCompletion("no choices")
    if not all(_is_object(c) for c in choices):
        raise UnreadableCompletion("a choice is not an object")
    texts = []
    reasons = []
    logprobs = []
    if len(choices) > 1:
        choices = sorted(choices, key=lambda c: _int(c.get("index")) or 0)
    for choice in choices:
        message = choice.get("message")
        texts.append(_content(message.get("content") if _is_object(message) else None))
        reasons.append(str(choice.get("finish_reason") or ""))
        logprobs.append(choice.get("logprobs"))
    usage = data.get("usage")
    counts = None
    if _is_object(usage) and (prompt := _int(usage.get("prompt_tokens"))) is not None:
        details = usage.get("prompt_tokens_details")
        cached = _int(details.get("cached_tokens")) if _is_object(details) else None
        counts = (prompt, _int(usage.get("completion_tokens")) or 0, cached or 0)
    return Completion(
        texts=tuple(texts),
        finish_reasons=tuple(reasons),
        logprobs=tuple(logprobs),
        usage=counts,
        model=str(data.get("model") or ""),
        raw=raw,
    )


def stored_result(row: tuple[Any, ...], model: str) -> ChatResult | None:
    """A stored answer as a ChatResult; None when it cannot be read (not a cache hit).

    ``row``: (response_json, prompt_tokens, completion_tokens, cached_tokens,
    usage_estimated) of the calls the store keeps; the token counts are the stored ones.
    """
    raw, prompt, completion, cached_tokens, estimated = row
    if raw is None:
        return None
    try:
        read = read_completion(raw)
    except UnreadableCompletion:
        return None
    return ChatResult(
        texts=read.texts,
        finish_reasons=read.finish_reasons,
        prompt_tokens=prompt or 0,
        completion_tokens=completion or 0,
        cached_tokens=cached_tokens or 0,
        usage_estimated=bool(estimated),
        model=model,
        raw=read.raw,
        from_cache=True,
        attempts=0,
        logprobs=read.logprobs if any(lp is not None for lp in read.logprobs) else (),
    )


def _is_object(value: Any) -> bool:
    """A JSON object: a dict as parsed (checked first: an ABC's check costs ten times as
    much, on every field of every answer), or any other mapping."""
    return type(value) is dict or isinstance(value, Mapping)


def _int(value: Any) -> int | None:
    """A token count or index: an int (not a bool), or None."""
    if type(value) is int:
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _content(value: Any) -> str:
    """A message's content: a string, or the text parts of a list of parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            str(part.get("text") or "")
            for part in value
            if _is_object(part) and part.get("type") in ("text", "output_text")
        )
    return ""


class ChatClient:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        transport: Transport,
        timeouts: Timeouts = Timeouts(),
        observe: Callable[[int, Mapping[str, str]], None] | None = None,
        count_tokens: Callable[[str], int] | None = None,
        auth: str = "bearer",
    ) -> None:
        """``auth``: "bearer" (``Authorization: Bearer``) or "api-key" (Azure-style gateways)."""
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        self._secret = api_key or ""
        if api_key:
            if auth == "api-key":
                self._headers["api-key"] = api_key
            else:
                self._headers["Authorization"] = f"Bearer {api_key}"
        self._transport = transport
        self._timeouts = timeouts
        self._observe = observe
        self._count = count_tokens or (lambda text: max(1, len(text) // 4))

    def body(self, request: ChatRequest) -> bytes:
        payload: dict[str, Any] = request.payload()
        if _REASONING.match(request.model):
            payload["max_completion_tokens"] = payload.pop("max_tokens")
            if payload.get("temperature") not in (None, 1, 1.0):
                payload.pop("temperature")
        return orjson.dumps(payload)

    async def send(self, request: ChatRequest, *, body: bytes | None = None) -> ChatResult:
        started = time.perf_counter()
        response = await self._transport.post(
            self.url,
            self._headers,
            body if body is not None else self.body(request),
            self._timeouts,
        )
        if self._observe is not None:
            self._observe(response.status, response.headers)
        if response.status != 200:
            raise error_for(response, self._secret)
        return self._parse(request, response, (time.perf_counter() - started) * 1000)

    def _parse(self, request: ChatRequest, response: HttpResponse, latency_ms: float) -> ChatResult:
        try:
            read = read_completion(response.body)
        except UnreadableCompletion:
            raise RetryableError(
                "the server answered 200 with a body that is not a chat completion",
                status=200,
                billed_maybe=True,
            ) from None
        return read.result(
            model=request.model,
            messages=request.messages,
            count_tokens=self._count,
            latency_ms=latency_ms,
        )


def _provider_message(body: bytes) -> tuple[str, str]:
    """(message, code) from an OpenAI-style error body; tolerant of anything else."""
    try:
        data = orjson.loads(body)
        err = data.get("error", data) if isinstance(data, dict) else {}
        if isinstance(err, str):
            return err[:300], ""
        message = str(err.get("message") or "")[:300]
        code = str(err.get("code") or err.get("type") or "")
        return message, code
    except (orjson.JSONDecodeError, AttributeError):
        return body[:200].decode("utf-8", "replace").strip(), ""


def _is_context_error(code: str, message: str) -> bool:
    text = message.lower()
    return code in ("context_length_exceeded", "exceed_context_size_error") or any(
        phrase in text
        for phrase in ("context length", "context size", "context window", "maximum context")
    )


def error_for(response: HttpResponse, secret: str) -> Exception:
    """The error of a non-200 answer, in halugen's error tree (the key never in its text)."""
    status = response.status
    message, code = _provider_message(response.body)
    if secret and len(secret) >= 4:
        message = message.replace(secret, "[api key]")  # providers may echo the key
    detail = f": {message}" if message else ""
    if status == 401:
        return AuthError(
            f"the endpoint rejected the API key (HTTP 401{detail}); check --api-key or "
            f"OPENAI_API_KEY",
            status=401,
        )
    if status == 429:
        if code == "insufficient_quota":
            return AuthError(
                f"the account has no quota left (HTTP 429 insufficient_quota{detail})",
                status=429,
            )
        return RateLimited(
            f"rate limited (HTTP 429{detail})",
            status=429,
            retry_after=retry_after_seconds(response.headers),
        )
    if status in (408, 409) or status >= 500:
        return RetryableError(
            f"HTTP {status}{detail}",
            status=status,
            retry_after=retry_after_seconds(response.headers),
        )
    if _is_context_error(code, message):
        try:
            body = orjson.loads(response.body)
        except orjson.JSONDecodeError:
            body = None
        window, needed = context_window_from_error(message, body)
        if window:
            figures = f"the server's context window is {window:,} tokens" + (
                f"; the request needed {needed:,}" if needed else ""
            )
        else:
            figures = "the request is longer than the server's context window"
        return ContextTooLong(
            f"context_length: {figures} (HTTP {status}); halugen now truncates long documents "
            f"to fit, and the same command retries these seeds (or give --context-window, "
            f"or --long-documents skip)",
            status=status,
            window=window,
            needed=needed,
        )
    return FatalCallError(f"HTTP {status}{detail}", status=status)
