"""The OpenAI-compatible chat-completions client: one attempt per ``send``.

The only module that builds provider requests and parses provider JSON. Errors come out
as halugen's error tree (errors.py); retrying, budgeting and rate limiting are the
caller's (llm/calls.py), because each attempt must be reserved and paced on its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ..config import Timeouts
from ..errors import AuthError, ContextTooLong, FatalCallError, RateLimited, RetryableError
from ..records import ChatRequest, ChatResult
from .endpoint import context_window_from_error
from .transport import HttpResponse, Transport

__all__ = ["ChatClient", "retry_after_seconds"]

# Models that take max_completion_tokens (and only their default temperature).
_REASONING = re.compile(r"^(o\d|gpt-5)")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's wait hint: ``retry-after-ms`` (ms) or ``retry-after`` (seconds)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue  # an HTTP date: rare for APIs; the backoff covers it
    return None


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
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        self._secret = api_key or ""
        if api_key:
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
            raise _error_for(response, self._secret)
        return self._parse(request, response, (time.perf_counter() - started) * 1000)

    def _parse(self, request: ChatRequest, response: HttpResponse, latency_ms: float) -> ChatResult:
        try:
            data = orjson.loads(response.body)
            choices = data["choices"]
            texts = []
            reasons = []
            logprobs = []
            for choice in sorted(choices, key=lambda c: c.get("index", 0)):
                message = choice.get("message") or {}
                texts.append(message.get("content") or "")
                reasons.append(choice.get("finish_reason") or "")
                logprobs.append(choice.get("logprobs"))
            if not texts:
                raise ValueError("no choices")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            raise RetryableError(
                "the server answered 200 with a body that is not a chat completion",
                status=200,
                billed_maybe=True,
            ) from None
        usage = data.get("usage") if isinstance(data, dict) else None
        estimated = not isinstance(usage, dict) or "prompt_tokens" not in usage
        if estimated:
            prompt = sum(self._count(m.get("content", "")) + 4 for m in request.messages) + 3
            completion = sum(self._count(t) for t in texts)
            cached = 0
        else:
            prompt = int(usage.get("prompt_tokens") or 0)
            completion = int(usage.get("completion_tokens") or 0)
            details = usage.get("prompt_tokens_details") or {}
            cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
        return ChatResult(
            texts=tuple(texts),
            finish_reasons=tuple(reasons),
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            usage_estimated=estimated,
            model=str(data.get("model") or request.model),
            raw=response.body,
            latency_ms=latency_ms,
            logprobs=tuple(logprobs) if any(lp is not None for lp in logprobs) else (),
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


def _error_for(response: HttpResponse, secret: str) -> Exception:
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
