"""``SimConfig``: everything a simulated provider is set to do (latency, limits, prices,
faults, formats, its window and tokenizer), and ``BatchSimConfig``, how its Batch API
behaves; each checked when made."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from .caching import CacheConfig

__all__ = [
    "CONTEXT_WINDOW",
    "FAULT_KINDS",
    "RESPONSE_FORMAT_MODES",
    "BatchSimConfig",
    "SimConfig",
]

FAULT_KINDS = ("500", "503", "hang", "malformed", "content_filter", "drop", "429")
RESPONSE_FORMAT_MODES = ("honour", "ignore", "400", "500")
CONTEXT_WINDOW = 128_000


@dataclass(frozen=True, kw_only=True)
class BatchSimConfig:
    """How the simulated Batch API behaves. Times are seconds of ``clock``."""

    validating_s: float = 0.0  # before a batch starts (or fails validation)
    duration_s: float = 2.0  # in progress: lines are done at an even pace over this time
    line_s: float | None = None  # or: each line takes this long (a batch of n: n * line_s)
    finalizing_s: float = 0.0  # after the last line, before the batch is completed
    cancel_s: float = 0.0  # cancelling -> cancelled
    expire_s: float | None = None  # a batch not done this long after creation expires
    fail_rate: float = 0.0  # share of lines answered with a 500 inside the batch
    discount: float = 0.5  # the batch price is (1 - discount) of the tokens' price
    max_requests: int = 50_000  # per input file, as OpenAI
    max_bytes: int = 200 * 2**20  # per input file, as OpenAI
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    def __post_init__(self) -> None:
        for name in ("validating_s", "duration_s", "finalizing_s", "cancel_s"):
            if getattr(self, name) < 0 or (self.line_s is not None and self.line_s < 0):
                raise UsageError(f"simulator batch {name} must not be negative")
        if self.expire_s is not None and self.expire_s <= 0:
            raise UsageError("simulator batch expire_s must be positive (or unset)")
        for name in ("fail_rate", "discount"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise UsageError(f"simulator batch {name} must be between 0 and 1")
        if self.max_requests < 1 or self.max_bytes < 1:
            raise UsageError("simulator batch limits must be positive")


@dataclass(frozen=True, kw_only=True)
class SimConfig:
    latency_ms: float = 0.0  # added before answering
    jitter_ms: float = 0.0  # deterministic per request, uniform in [0, jitter_ms)
    rpm: float | None = None  # requests per minute the "account" allows
    tpm: float | None = None  # tokens per minute (prompt + max_tokens * n)
    fail_rate: float = 0.0  # share of admitted requests that hit a fault
    faults: tuple[str, ...] = FAULT_KINDS  # the fault kinds drawn from, evenly
    hang_s: float = 30.0  # how long a "hang" holds the request before answering
    price_in: float = 0.15  # USD per million prompt tokens
    price_out: float = 0.60  # USD per million completion tokens
    # USD per million prompt tokens served from the prompt cache; None: half of price_in
    # (gpt-4o-mini's ratio: 0.075 against 0.15)
    price_cached: float | None = None
    api_key: str | None = field(default=None, repr=False)
    auth: str = "bearer"  # how the key must come: "bearer" (Authorization) or "api-key" (Azure)
    honour_n: bool = True  # False: ignore n > 1 and return one choice
    # what the server does with a JSON response_format: "honour" it (structured outputs),
    # "ignore" it (a text reply, as many gateways do), refuse it with a "400" (older servers)
    # or with a "500" (llama-cpp-python's server)
    response_format: str = "honour"
    report_usage: bool = True  # False: omit "usage" from responses
    seed: int = 0  # mixes into every deterministic choice
    judge_accuracy: float | None = None  # recognition: P(right verdict) for oracle answers
    oracle: Mapping[str, bool] | None = None  # answer text -> is hallucinated
    garbage_rate: float = 0.0  # share of formatted answers that ignore the format
    # share of recognition prompts whose first verdict is a hedge; asked again, they answer
    unreadable_verdicts: float = 0.0
    context_window: int = CONTEXT_WINDOW
    # rate limits enforced over windows this long (OpenAI: ~1 s); refused requests count
    quantum_s: float | None = None
    capacity: int | None = None  # requests served at once; the rest queue (None: unlimited)
    # where the server tells its window: "models" (vLLM's max_model_len in GET /v1/models),
    # "props" (llama.cpp's GET /props n_ctx), or "none" (only its 400 replies say it)
    announce_window: str = "none"
    # True: a prompt that fits but leaves less room than max_tokens gets a shorter reply
    # (finish "length"), as llama.cpp's server does; False: a 400, as vLLM and OpenAI do
    shorten_to_fit: bool = False
    served_models: tuple[str, ...] = ("halugen-sim",)  # GET /v1/models lists these
    # the provider's tokenizer counts this many times the byte rule's tokens (see above)
    usage_scale: float = 1.0
    # what counts tokens: "bytes" (the byte rule, tokens.py) or a tiktoken encoding such as
    # "cl100k_base", for a bill close to a provider's (slower: every request is encoded)
    tokenizer: str = "bytes"
    down_after: int | None = None  # chat requests served before the server goes for good
    # with down_after: refused requests before it is back (a restart; in process only, as
    # a server over HTTP that went down stops listening); None: gone for good
    back_after: int | None = None
    # chat requests answered before the server freezes: later ones are accepted and never
    # answered (a wedged server that still takes connections); None: never
    frozen_after: int | None = None
    # most choices one request may ask for (llama.cpp's server: its slot count, -np); more
    # are refused with a 400 naming the field, in llama.cpp's words; None: no cap
    max_n: int | None = None
    # GET /props says how many requests are served at once (llama.cpp's total_slots):
    # ``capacity``, which must then be set
    announce_slots: bool = False
    clock: Callable[[], float] = time.monotonic  # rate-limit time; inject a fake in tests
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep  # latency and hangs
    batch: BatchSimConfig = field(default_factory=BatchSimConfig)  # /v1/files, /v1/batches
    cache: CacheConfig = field(default_factory=CacheConfig)  # prompt caching (caching.py)

    def __post_init__(self) -> None:
        for name in ("fail_rate", "garbage_rate", "unreadable_verdicts"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise UsageError(f"simulator {name} must be between 0 and 1, not {value}")
        if self.judge_accuracy is not None and not 0.0 <= self.judge_accuracy <= 1.0:
            raise UsageError("simulator judge_accuracy must be between 0 and 1")
        for name in ("latency_ms", "jitter_ms", "hang_s", "price_in", "price_out"):
            if getattr(self, name) < 0:
                raise UsageError(f"simulator {name} must not be negative")
        if self.price_cached is not None and self.price_cached < 0:
            raise UsageError("simulator price_cached must not be negative")
        for name in ("rpm", "tpm", "quantum_s", "capacity"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UsageError(f"simulator {name} must be positive (or unset)")
        if not 0.1 <= self.usage_scale <= 10:
            raise UsageError(
                f"simulator usage_scale must be between 0.1 and 10, not {self.usage_scale}"
            )
        if self.tokenizer != "bytes":
            from .tokens import token_rule  # the error names the encoding; tiktoken caches it

            token_rule(self.tokenizer)
        for name in ("down_after", "back_after", "frozen_after"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise UsageError(f"simulator {name} must not be negative (or unset)")
        if self.max_n is not None and self.max_n < 1:
            raise UsageError("simulator max_n must be at least 1 (or unset)")
        if self.announce_slots and self.capacity is None:
            raise UsageError("simulator announce_slots needs a capacity (the slots it announces)")
        if self.auth not in ("bearer", "api-key"):
            raise UsageError(f"simulator auth must be bearer or api-key, not {self.auth!r}")
        if self.response_format not in RESPONSE_FORMAT_MODES:
            raise UsageError(
                f"simulator response_format must be one of {', '.join(RESPONSE_FORMAT_MODES)}, "
                f"not {self.response_format!r}"
            )
        if self.announce_window not in ("models", "props", "none"):
            raise UsageError("simulator announce_window must be models, props or none")
        unknown = set(self.faults) - set(FAULT_KINDS)
        if unknown or (self.fail_rate > 0 and not self.faults):
            raise UsageError(
                f"unknown simulator fault kinds {sorted(unknown)}; known: {', '.join(FAULT_KINDS)}"
            )

    @property
    def cached_price(self) -> float:
        """USD per million cached prompt tokens."""
        return self.price_in / 2 if self.price_cached is None else self.price_cached

    def bill_usd(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> float:
        """What the provider charges for these tokens at the interactive prices."""
        return (
            (prompt_tokens - cached_tokens) * self.price_in
            + cached_tokens * self.cached_price
            + completion_tokens * self.price_out
        ) / 1e6
