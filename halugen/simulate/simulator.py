"""The simulated provider, independent of any transport: ``Simulator.handle(path, headers, body)``.

One request goes through, in order: route (404), auth (401), body checks (400, including
context length), the account's rate limits (429), fault injection (500/503/drop/hang/
malformed/content_filter), then the answer. Everything the simulator decides is a
deterministic function of the request body, the simulator's ``seed`` and, for faults, how
many times that same body was seen (so a retried request can succeed).

Billing follows what a provider would charge: a request is billed when the simulator decides
to answer it (normal answers, and the "hang", "malformed" and "content_filter" faults, where
the work was done), before any latency or hang delay, so a client that gives up while
waiting was billed all the same. 4xx, 429, 500, 503 and "drop" are not billed.

Prompt caching (``caching.py``, ``SimConfig.cache``): a billed request's opening is looked up
in the provider's prefix cache and cached for later; the tokens it finds are reported in
``usage.prompt_tokens_details.cached_tokens`` and billed at ``price_cached``.

Capacity mode (``capacity=N``) stands for a self-hosted server (llama.cpp's server has one
slot by default, and also ignores ``n``: ``honour_n=False``): N requests are served at once,
each for its latency, and the rest wait in a FIFO queue, so the wait counts against the
client's timeout. A client that gives up does not take its request out of the queue: the
server still serves it (and bills it), as a real one does, which is how a client that times
out and retries makes the queue longer. ``stats()`` reports the queue, the most requests
served at once and the requests whose client had gone away (``abandoned``).

In-process callers (``HandlerTransport(sim.handle)``) see a "drop" fault as the exception
``SimulatedDrop``; the aiohttp app turns it into a closed connection. The engine's
transport layer is the place to map it to a connection error.

Two behaviours of real providers that the money and stopping code must survive:

- ``usage_scale``: the provider's tokenizer counts ``usage_scale`` times as many tokens as
  the byte rule (another tokenizer than the client's). Prompt tokens, the cut of a reply at
  ``max_tokens`` (in the provider's tokens: a reply never reports more than asked for), the
  context window, the rate limits, the usage reported and the bill all count that way.
- ``down_after``: after that many chat requests the server is gone and stays gone: every
  later request is refused as a connection to a dead host is (``SimulatedRefusal``
  in process; over HTTP the server stops listening and closes its connections). In
  process, ``back_after`` brings it back after that many refusals (a restart).
- ``frozen_after``: after that many chat requests the server still accepts connections
  and requests but never answers them (``stats()["unanswered"]``).

Two behaviours of llama.cpp's server: ``max_n`` refuses more choices than its slots with a
400 naming the field, and ``announce_slots`` says the slot count in ``GET /props``.

The settings are ``SimConfig`` (config.py); the answer's body is made in completion.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from ..llm.transport import HttpResponse
from ..records import canonical_json
from .caching import PrefixCache
from .completion import chat_completion, provider_tokens
from .config import SimConfig
from .keys import key64, mix, unit
from .limits import Admission, RateLimits
from .request import BadRequest, ChatBody, error_response, parse_body
from .structured import REFUSED_FORMAT, UNSUPPORTED_FORMAT, FormatRefused
from .tokens import token_rule
from .words import normalise

__all__ = [
    "SimulatedDrop",
    "SimulatedRefusal",
    "Simulator",
]

_JSON = "application/json"


class SimulatedDrop(ConnectionResetError):
    """A "drop" fault: the connection closes with no response (nothing billed)."""


class SimulatedRefusal(ConnectionRefusedError):
    """The server is down (``down_after``): the connection is refused, nothing was sent."""


class Simulator:
    """An OpenAI-compatible chat-completions provider, in process."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self._limits = RateLimits(config.rpm, config.tpm, config.clock, quantum_s=config.quantum_s)
        self._slots = asyncio.Semaphore(config.capacity) if config.capacity else None
        self._queued = 0  # capacity mode: waiting for a slot now
        self._busy = 0  # being served now
        self._work_tasks: set[asyncio.Task[None]] = set()
        # the oracle's keys in the normalised form the verdict lookup uses (chat_completion's
        # ``oracle``, for the chat endpoint and the Batch API alike)
        self.oracle = (
            {normalise(k): bool(v) for k, v in config.oracle.items()} if config.oracle else None
        )
        self._bearer = f"Bearer {config.api_key}" if config.api_key is not None else None
        self._auth_header = "api-key" if config.auth == "api-key" else "authorization"
        self._credential = config.api_key if config.auth == "api-key" else self._bearer
        self._in_flight = 0  # not reset: requests under way finish after a reset
        self._chat_seen = 0  # chat requests ever, for down_after (not reset either)
        self._refusals = 0  # refused ever, for back_after (not reset either)
        self.down = False  # gone for good (down_after)
        self.tokens = token_rule(config.tokenizer)  # how this provider counts
        self.cache = PrefixCache(config.cache, self.tokens)  # survives reset(), as a provider's
        self.reset()

    # -- bookkeeping -----------------------------------------------------------------------

    def reset(self) -> None:
        """Zero every counter and refill the rate-limit buckets."""
        self._requests = 0
        self._ok = 0
        self._rate_limited = 0
        self._by_status: Counter[int] = Counter()
        self._faults: Counter[str] = Counter()
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cached_tokens = 0
        self._billed: dict[bytes, int] = {}
        self._billed_requests = 0
        self._attempts: dict[bytes, int] = {}
        self.cache.reset()
        self._admitted = 0  # past the rate limits
        self._admitted_tokens = 0  # as the rate limits counted them
        self._first_admitted: float | None = None
        self._last_admitted: float | None = None
        self._max_queued = self._queued
        self._max_busy = self._busy
        self._abandoned = 0
        self._refused = 0
        self._unanswered = 0  # frozen_after: requests taken and never answered
        self._limits.reset()

    def stats(self, *, keys: bool = True) -> dict[str, Any]:
        """Counters since start or the last ``reset``.

        ``by_status`` counts responses by HTTP status (int keys; JSON makes them strings),
        ``faults`` counts injected faults by kind, ``ok`` counts normal answers (no fault),
        ``billed_keys`` maps each billed request's fingerprint (sha256 hex of the canonical
        request body) to how many times it was billed; ``keys=False`` leaves it out, which
        is cheaper on long runs. ``admitted`` and ``admitted_tokens`` count what passed the
        rate limits (tokens as they count them: prompt + n * max_tokens) and
        ``admitted_span_s`` is the time from the first to the last of those, so that
        ``admitted / admitted_span_s * 60`` is the rate a client achieved.
        """
        cfg = self.config
        out: dict[str, Any] = {
            "requests": self._requests,
            "ok": self._ok,
            "by_status": dict(self._by_status),
            "faults": dict(self._faults),
            "rate_limited": self._rate_limited,
            "prompt_tokens": self._prompt_tokens,
            "completion_tokens": self._completion_tokens,
            "cached_tokens": self._cached_tokens,
            "billed_requests": self._billed_requests,
            "billed_usd": cfg.bill_usd(
                self._prompt_tokens, self._completion_tokens, self._cached_tokens
            ),
            "cache": self.cache.stats(),
            "duplicate_bills": self._billed_requests - len(self._billed),
            "in_flight": self._in_flight,
            "refused": self._refused,
            "unanswered": self._unanswered,
            "admitted": self._admitted,
            "admitted_tokens": self._admitted_tokens,
            "admitted_span_s": (
                self._last_admitted - self._first_admitted
                if self._first_admitted is not None and self._last_admitted is not None
                else 0.0
            ),
        }
        if self._slots is not None:
            out["queued"] = self._queued
            out["max_queued"] = self._max_queued
            out["max_busy"] = self._max_busy
            out["abandoned"] = self._abandoned
        if keys:
            out["billed_keys"] = {k.hex(): v for k, v in self._billed.items()}
        return out

    def models(self) -> dict[str, Any]:
        """The body of ``GET /v1/models``."""
        entries: list[dict[str, Any]] = []
        for model in self.config.served_models:
            entry: dict[str, Any] = {
                "id": model, "object": "model", "created": 0, "owned_by": "halugen"
            }  # fmt: skip
            if self.config.announce_window == "models":
                entry["max_model_len"] = self.config.context_window
            entries.append(entry)
        return {"object": "list", "data": entries}

    def props(self) -> dict[str, Any] | None:
        """The body of llama.cpp's ``GET /props``, when the simulator plays that server."""
        cfg = self.config
        if cfg.announce_window != "props" and not cfg.announce_slots:
            return None
        body: dict[str, Any] = {}
        if cfg.announce_window == "props":
            body["default_generation_settings"] = {"n_ctx": cfg.context_window}
        if cfg.announce_slots:
            body["total_slots"] = cfg.capacity
        return body

    def apply_format_policy(self, req: ChatBody) -> ChatBody:
        """``req`` as this server treats its ``response_format`` (``SimConfig.response_format``).

        Raises ``BadRequest`` (a 400) or ``FormatRefused`` (a 500) for a server that refuses it.
        """
        mode = self.config.response_format
        if req.response_format is None or mode == "honour":
            return req
        if mode == "ignore":
            return replace(req, response_format=None)
        if mode == "400":
            raise BadRequest(UNSUPPORTED_FORMAT, "response_format", "unsupported_parameter")
        raise FormatRefused(REFUSED_FORMAT)

    def authorised(self, headers: Mapping[str, str]) -> bool:
        return self._credential is None or headers.get(self._auth_header) == self._credential

    def unauthorised(self) -> HttpResponse:
        # the key is never echoed back
        return error_response(
            401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
        )

    # -- the request path ------------------------------------------------------------------

    async def handle(self, path: str, headers: Mapping[str, str], body: bytes) -> HttpResponse:
        """Answer ``POST <path>`` with lower-case ``headers``; may raise ``SimulatedDrop``,
        or ``SimulatedRefusal`` once the server is down (a refused request is not counted
        among ``requests``: it never reached the server)."""
        cfg = self.config
        if cfg.down_after is not None and self._chat_seen >= cfg.down_after:
            back = cfg.back_after is not None and self._refusals >= cfg.back_after
            if not back:
                self.down = True
                self._refused += 1
                self._refusals += 1
                raise SimulatedRefusal("simulated server down: connection refused")
            self.down = False
        self._chat_seen += 1
        self._requests += 1
        self._in_flight += 1
        try:
            if cfg.frozen_after is not None and self._chat_seen > cfg.frozen_after:
                self._unanswered += 1
                await asyncio.Event().wait()  # never set: only the client's giving up ends it
            response = await self._handle(path, headers, body)
        finally:
            self._in_flight -= 1
        return response

    def _count(self, response: HttpResponse) -> HttpResponse:
        self._by_status[response.status] += 1
        return response

    async def _handle(self, path: str, headers: Mapping[str, str], body: bytes) -> HttpResponse:
        cfg = self.config
        if not path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
            return self._count(
                error_response(
                    404,
                    f"Unknown request URL: POST {path}.",
                    "invalid_request_error",
                    "unknown_url",
                )
            )
        if not self.authorised(headers):
            return self._count(self.unauthorised())
        try:
            req = self.apply_format_policy(self.parse(body))
            if cfg.max_n is not None and req.n > cfg.max_n:
                # llama.cpp's server refuses more choices than its slots, naming the field
                raise BadRequest(f"Field 'n': Value must be between 1 <= value <= {cfg.max_n}", "n")
            fits_prompt = req.prompt_tokens < cfg.context_window
            if cfg.shorten_to_fit and fits_prompt and req.max_tokens is not None:
                # llama.cpp's way: the reply stops where the context is full
                room = cfg.context_window - req.prompt_tokens
                if req.max_tokens > room:
                    req = replace(req, max_tokens=room)
            if req.prompt_tokens + (req.max_tokens or 0) > cfg.context_window:
                raise BadRequest(
                    f"This model's maximum context length is {cfg.context_window} tokens. "
                    f"However, you requested {req.prompt_tokens + (req.max_tokens or 0)} tokens "
                    f"({req.prompt_tokens} in the messages, {req.max_tokens or 0} in the "
                    "completion). Please reduce the length of the messages or completion.",
                    "messages",
                    "context_length_exceeded",
                )
        except FormatRefused as exc:
            return self._count(
                error_response(500, str(exc), "server_error", None, None, self._limits.headers())
            )
        except BadRequest as exc:
            return self._count(
                error_response(
                    400,
                    str(exc),
                    "invalid_request_error",
                    exc.code,
                    exc.param,
                    self._limits.headers(),
                )
            )

        n_out = req.n if cfg.honour_n else 1
        counted = req.prompt_tokens + n_out * (req.max_tokens or 0)
        admission = self._limits.admit(counted)
        if not admission.ok:
            self._rate_limited += 1
            return self._count(self._too_many(req, n_out, admission))
        rl_headers = admission.headers
        self._admitted += 1
        self._admitted_tokens += counted
        stamp = cfg.clock()
        if self._first_admitted is None:
            self._first_admitted = stamp
        self._last_admitted = stamp

        digest = hashlib.sha256(canonical_json(req.body)).digest()
        fault = self._draw_fault(digest) if cfg.fail_rate > 0 else None
        delay = cfg.latency_ms
        if cfg.jitter_ms:
            delay += unit(key64(cfg.seed, digest, "jitter")) * cfg.jitter_ms

        if fault == "429":  # a storm of rate limiting, whatever the buckets say
            self._faults[fault] += 1
            self._rate_limited += 1
            headers = {**rl_headers, "retry-after-ms": "100", "retry-after": "1"}
            return self._count(
                error_response(
                    429,
                    "Rate limit reached (simulated storm). Please try again in 100ms.",
                    "requests",
                    "rate_limit_exceeded",
                    None,
                    headers,
                )
            )
        if fault in ("500", "503", "drop"):
            self._faults[fault] += 1
            if fault == "drop":
                await self._work(delay / 1000.0)
                raise SimulatedDrop("simulated dropped connection")
            message = (
                "The server had an error while processing your request."
                if fault == "500"
                else "The engine is currently overloaded, please try again later."
            )
            response = self._count(
                error_response(int(fault), message, "server_error", None, None, rl_headers)
            )
            await self._work(delay / 1000.0)
            return response

        # the work is done from here on: the prompt's opening is read from and put in cache
        cached = self.cache.serve(req.model, req.body, req.contents, req.prompt_tokens, stamp)
        payload, completion_tokens = chat_completion(
            self.config, self.oracle, req, n_out, digest, fault, cached, self.tokens
        )
        self._bill(digest, req.prompt_tokens, completion_tokens, cached)
        data = orjson.dumps(payload)
        if fault is None:
            self._ok += 1
        else:
            self._faults[fault] += 1
            if fault == "malformed":
                data = data[: max(1, len(data) // 2)]  # cut mid-body: not valid JSON
        response = self._count(
            HttpResponse(
                status=200,
                headers={"content-type": _JSON, "x-request-id": payload["id"], **rl_headers},
                body=data,
            )
        )
        if self._slots is not None:
            await self._work((cfg.hang_s if fault == "hang" else 0.0) + delay / 1000.0)
            return response
        if fault == "hang":
            await cfg.sleep(cfg.hang_s)
        if delay > 0:
            await cfg.sleep(delay / 1000.0)
        return response

    def parse(self, body: bytes) -> ChatBody:
        """A request body as this provider reads it: prompt tokens by its own tokenizer."""
        req = parse_body(body, self.tokens)
        if self.config.usage_scale != 1.0:
            req = replace(req, prompt_tokens=self._scaled(req.prompt_tokens))
        return req

    def _scaled(self, tokens: int) -> int:
        """The byte rule's ``tokens`` as this provider's tokenizer counts them."""
        return provider_tokens(tokens, self.config.usage_scale)

    async def _work(self, seconds: float) -> None:
        """Spend ``seconds`` on a request: at once, or in capacity mode when a slot is free."""
        if self._slots is None:
            if seconds > 0:
                await self.config.sleep(seconds)
            return
        task = asyncio.ensure_future(self._serve(seconds))
        self._work_tasks.add(task)  # held until done: the work outlives a departed client
        task.add_done_callback(self._work_tasks.discard)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                self._abandoned += 1  # the client gave up; the server serves it all the same
            raise

    async def _serve(self, seconds: float) -> None:
        assert self._slots is not None
        self._queued += 1
        self._max_queued = max(self._max_queued, self._queued)
        try:
            await self._slots.acquire()
        finally:
            self._queued -= 1
        self._busy += 1
        self._max_busy = max(self._max_busy, self._busy)
        try:
            if seconds > 0:
                await self.config.sleep(seconds)
        finally:
            self._busy -= 1
            self._slots.release()

    def _too_many(self, req: ChatBody, n_out: int, admission: Admission) -> HttpResponse:
        wait = admission.retry_after if admission.retry_after > 0 else 1.0
        limits = self.config.rpm if admission.limit == "requests" else self.config.tpm
        short = "RPM" if admission.limit == "requests" else "TPM"
        wanted = (
            1
            if admission.limit == "requests"
            else (req.prompt_tokens + n_out * (req.max_tokens or 0))
        )
        if admission.too_large:
            message = (
                f"Request too large for {req.model} on tokens per min ({short}): "
                f"Limit {limits:g}, Requested {wanted}. Reduce the input or output tokens."
            )
        else:
            message = (
                f"Rate limit reached for {req.model} on {admission.limit} per min ({short}): "
                f"Limit {limits:g}, Requested {wanted}. Please try again in "
                f"{wait * 1000:.0f}ms."
            )
        headers = {
            **admission.headers,
            "retry-after-ms": str(math.ceil(wait * 1000)),
            "retry-after": str(math.ceil(wait)),
        }
        return error_response(429, message, admission.limit, "rate_limit_exceeded", None, headers)

    def _draw_fault(self, digest: bytes) -> str | None:
        attempt = self._attempts.get(digest, 0) + 1
        self._attempts[digest] = attempt
        key = key64(self.config.seed, digest, attempt, "fault")
        if unit(key) >= self.config.fail_rate:
            return None
        faults = self.config.faults
        return faults[mix(key, 1) % len(faults)]

    def _bill(
        self, digest: bytes, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0
    ) -> None:
        self._prompt_tokens += prompt_tokens
        self._completion_tokens += completion_tokens
        self._cached_tokens += cached_tokens
        self._billed_requests += 1
        self._billed[digest] = self._billed.get(digest, 0) + 1
