"""Frozen records that flow between pipeline stages.

Every record carries the ``seed_key`` of the seed it came from: a deterministic fingerprint
of the task and the seed's content, which is what progress, resume and seeded randomness
are keyed by.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "BadRecord",
    "Candidate",
    "ChatRequest",
    "ChatResult",
    "Judgement",
    "Rejected",
    "Sample",
    "Seed",
    "canonical_json",
    "fingerprint",
    "kind_of",
]


def canonical_json(value: Any) -> bytes:
    """JSON with sorted keys and no whitespace: equal values give equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def fingerprint(value: Any, *, size: int = 32) -> str:
    """Hex sha256 of the canonical JSON of ``value``, cut to ``size`` hex digits."""
    return hashlib.sha256(canonical_json(value)).hexdigest()[:size]


@dataclass(frozen=True, slots=True)
class Seed:
    """One input record of a task, its fields already under HaluEval's names."""

    task: str
    fields: Mapping[str, str]
    seed_id: str  # the dataset's own id when it has one, else "<file>:<line>"
    source_file: str = ""
    source_line: int = 0  # 1-based line (JSONL/CSV) or array index + 1 (JSON arrays)
    dataset: str = ""  # reader name, e.g. "hotpotqa", "halueval-qa"
    key: str = field(default="")
    truncated_tokens: int = 0  # tokens cut from the long field to fit the context window

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(
                self, "key", fingerprint({"task": self.task, "fields": dict(self.fields)})
            )


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A seed record that could not be used; skipped, recorded, never silently lost."""

    source_file: str
    source_line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One logical call to a chat-completions endpoint."""

    model: str
    messages: tuple[Mapping[str, str], ...]
    temperature: float = 1.0
    max_tokens: int = 256
    n: int = 1
    seed: int | None = None
    stop: tuple[str, ...] = ()
    top_p: float | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    # OpenAI's structured outputs, e.g. {"type": "json_schema", "json_schema": {...}}
    response_format: Mapping[str, Any] | None = None
    # OpenAI's prompt_cache_key: requests with the same opening and key are routed to the
    # same cache (one key per template); None where the endpoint may not accept it. A routing
    # hint, not part of the question: the request key leaves it out, so an answer stays the
    # same call whichever endpoint (batch file, fleet, resume elsewhere) asked for it
    cache_key: str | None = None
    index: int = 0  # tells apart identical requests that must be paid separately
    _key: str = field(default="", init=False, repr=False, compare=False)

    def params(self) -> dict[str, Any]:
        """Sampling parameters as sent to the provider (keys absent when unset)."""
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.n != 1:
            params["n"] = self.n
        if self.seed is not None:
            params["seed"] = self.seed
        if self.stop:
            params["stop"] = list(self.stop)
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.logprobs:
            params["logprobs"] = True
            if self.top_logprobs is not None:
                params["top_logprobs"] = self.top_logprobs
        if self.response_format is not None:
            params["response_format"] = dict(self.response_format)
        if self.cache_key is not None:
            params["prompt_cache_key"] = self.cache_key
        return params

    def _asked(self) -> dict[str, Any]:
        """The parameters that can change the answer (the request key's)."""
        params = self.params()
        params.pop("prompt_cache_key", None)
        return params

    def payload(self) -> dict[str, Any]:
        return {"model": self.model, "messages": list(self.messages), **self.params()}

    @property
    def key(self) -> str:
        """The request key of DESIGN.md: same key, same answer, never paid twice."""
        if not self._key:
            object.__setattr__(
                self,
                "_key",
                fingerprint(
                    {
                        "model": self.model,
                        "messages": list(self.messages),
                        "params": self._asked(),
                        "index": self.index,
                    },
                    size=64,
                ),
            )
        return self._key


@dataclass(frozen=True, slots=True)
class ChatResult:
    """What a successful call returned, provider-neutral."""

    texts: tuple[str, ...]
    finish_reasons: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    usage_estimated: bool = False  # the provider sent no usage; tokens were counted by us
    model: str = ""
    raw: bytes = b""  # the response body as received
    latency_ms: float = 0.0
    attempts: int = 1
    from_cache: bool = False
    logprobs: tuple[Any, ...] = ()

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""

    @property
    def finish_reason(self) -> str:
        return self.finish_reasons[0] if self.finish_reasons else ""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One sampled hallucinated answer for a seed (valid or not)."""

    seed_key: str
    index: int  # 0 = one-pass instruction, 1 = conversational instruction
    template: str
    template_hash: str
    call_key: str
    text: str  # the parsed answer, trimmed; "" when invalid
    pattern: str  # the pattern the model says it used, or "unstated"
    status: str = "ok"  # ok, or why not: unparseable, equals_right_answer, call_failed, ...
    detail: str = ""
    raw: str = ""  # the model's whole reply

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class Judgement:
    """The filter's decision between candidates for one seed."""

    seed_key: str
    order: tuple[int, ...]  # candidate indexes in the order shown to the judge
    chosen: int | None  # candidate index picked, None when unparseable/failed
    method: str  # judge | identical | only_valid | unparseable | call_failed
    call_key: str = ""
    template_hash: str = ""
    raw: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Sample:
    """An accepted benchmark sample: the seed's fields plus the chosen hallucination."""

    seed: Seed
    candidate: Candidate
    judgement: Judgement
    fields: Mapping[str, str]  # HaluEval's names, e.g. knowledge/question/right_answer/...


@dataclass(frozen=True, slots=True)
class Rejected:
    """A seed that ended without a sample, and why. Travels downstream as a value."""

    seed: Seed
    stage: str
    reason: str
    detail: str = ""
    candidates: tuple[Candidate, ...] = ()
    judgement: Judgement | None = None


def kind_of(value: Any) -> str:
    """A JSON type name with its article, for messages: "a list", "null", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"
