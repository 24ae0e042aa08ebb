"""Automatic prompt caching, the way OpenAI describes it, for the simulator's answers and bill.

What the provider documents (read on 2026-12-02: OpenAI's "Prompt caching" guide,
developers.openai.com/api/docs/guides/prompt-caching; the cookbooks "Prompt Caching 101" and
"Prompt Caching 201", cookbook.openai.com/examples/prompt_caching101 and ..._201; the flex
processing guide; Microsoft's Azure OpenAI prompt caching page for the retention wording):

- caching is automatic, for prompts of 1,024 tokens or more; a hit is an exact match of the
  request's opening, counted in steps of 128 tokens (1,024, 1,152, 1,280, ...), reported in
  ``usage.prompt_tokens_details.cached_tokens`` and billed at the model's cached-input price;
  writing to the cache costs nothing extra (models before GPT-5.6);
- the whole opening counts: messages in order, and tools and structured-output schemas,
  which are placed before the messages (a different schema is a different prefix);
- requests are routed by a hash of their first ~256 tokens; ``prompt_cache_key`` is combined
  with that hash, so requests with different keys land on different machines (different
  caches), and more than ~15 requests a minute for one prefix and key overflow to further
  machines, each of which misses once;
- in-memory retention: a prefix stays cached 5 to 10 minutes after its last use, an hour at
  most; extended retention (``prompt_cache_retention: "24h"``, for gpt-5, gpt-5.x and
  gpt-4.1) keeps it up to 24 hours;
- models: gpt-4o and newer (Chat Completions and Responses); the Batch API gives cached
  input only for the GPT-5 family and later ("pre-GPT-5 models are not supported", Prompt
  Caching 201), where the cached price is halved like every other batch price.

``PrefixCache.serve(req, now)`` is one provider's cache: it returns how many of the
request's prompt tokens are served from cache and caches the request's own prefixes. The
tokens are the simulator's (``tokens.py``): each message is ``PER_MESSAGE_TOKENS`` framing
tokens then its content in 4-byte pieces, and the request ends with ``PER_REQUEST_TOKENS``;
a prefix of N tokens is identified by a hash of exactly those pieces, so two requests share
a cached prefix exactly when their first N tokens agree. Time is whatever ``now`` the caller
gives (the simulator's clock, or a batch's), so tests move it by hand.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..prompts import PER_MESSAGE_TOKENS, PER_REQUEST_TOKENS
from ..records import canonical_json
from .tokens import BYTE_RULE, TokenRule

__all__ = [
    "CacheConfig",
    "PrefixCache",
    "batch_caches",
    "extended_retention",
    "openai_caches",
]

_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_MAJOR = re.compile(r"^gpt-(\d+)")
# before gpt-4o: no prompt caching at OpenAI (and the first gpt-4o snapshot had none either)
_NOT_CACHED = ("gpt-3.5", "gpt-4-", "davinci", "babbage", "text-")
_NOT_CACHED_EXACT = frozenset({"gpt-4", "gpt-4o-2024-05-13"})
# extended (24h) retention, as the guide lists it
_EXTENDED_EXACT = frozenset({"gpt-4.1", "gpt-5", "gpt-5-codex"})


def _base(model: str) -> str:
    return _DATED.sub("", model)


def openai_caches(model: str) -> bool:
    """Does OpenAI cache prompts for ``model``? (gpt-4o and newer; unknown names: yes)."""
    if model in _NOT_CACHED_EXACT:
        return False
    return not model.startswith(_NOT_CACHED)


def batch_caches(model: str) -> bool:
    """Does OpenAI's Batch API give cached input for ``model``? (GPT-5 family and later)."""
    m = _MAJOR.match(model)
    return m is not None and int(m.group(1)) >= 5


def extended_retention(model: str) -> bool:
    """Does ``model`` take ``prompt_cache_retention: "24h"`` at OpenAI?"""
    base = _base(model)
    return base in _EXTENDED_EXACT or base.startswith("gpt-5.")


@dataclass(frozen=True, kw_only=True)
class CacheConfig:
    """How the simulated provider caches prompt prefixes. Times are seconds of its clock."""

    enabled: bool = True
    min_tokens: int = 1024  # no caching for shorter prompts
    step_tokens: int = 128  # hits are min_tokens + k * step_tokens long
    idle_s: float = 300.0  # in memory: dropped this long after its last use (OpenAI: 5-10 min)
    max_s: float = 3600.0  # in memory: dropped this long after it was cached (OpenAI: 1 h)
    extended_s: float = 86_400.0  # "24h" retention: dropped this long after it was cached
    # model-name prefixes that cache; None: OpenAI's rule (gpt-4o and newer, any other name)
    models: tuple[str, ...] | None = None
    # model-name prefixes that take "24h" retention; None: OpenAI's list. Others keep the
    # prefix in memory whatever they ask (OpenAI does not say what it does with them)
    extended_models: tuple[str, ...] | None = None
    # Batch API lines get cached input: True, False, or None: as OpenAI (GPT-5 family and later)
    batch: bool | None = None
    route_tokens: int = 256  # requests are routed by their first this many tokens (and key)
    # requests a minute one machine takes for one prefix and key before the rest overflow to
    # further machines, each with its own cache (OpenAI: ~15); None: no overflow
    route_rpm: float | None = None
    max_entries: int = 1_000_000  # cached prefixes kept in all; the least recently used go first

    def __post_init__(self) -> None:
        for name in ("min_tokens", "step_tokens", "route_tokens", "max_entries"):
            if getattr(self, name) < 1:
                raise UsageError(f"simulator cache {name} must be at least 1")
        for name in ("idle_s", "max_s", "extended_s"):
            if getattr(self, name) <= 0:
                raise UsageError(f"simulator cache {name} must be positive")
        if self.route_rpm is not None and self.route_rpm <= 0:
            raise UsageError("simulator cache route_rpm must be positive (or unset)")

    def caches(self, model: str) -> bool:
        if not self.enabled:
            return False
        if self.models is None:
            return openai_caches(model)
        return model.startswith(self.models)

    def caches_in_batch(self, model: str) -> bool:
        if not self.caches(model):
            return False
        return batch_caches(model) if self.batch is None else self.batch

    def extends(self, model: str) -> bool:
        if self.extended_models is None:
            return extended_retention(model)
        return model.startswith(self.extended_models)


class _Entry:
    __slots__ = ("created", "used")

    def __init__(self, now: float) -> None:
        self.created = now
        self.used = now


class PrefixCache:
    """One provider's cache of prompt prefixes (per model, schema and ``prompt_cache_key``)."""

    def __init__(self, config: CacheConfig, rule: TokenRule = BYTE_RULE) -> None:
        self.config = config
        self.rule = rule  # how the provider counts: where a prefix's tokens end
        # in memory, least recently used first; extended ("24h"), oldest first
        self._memory: OrderedDict[bytes, _Entry] = OrderedDict()
        self._extended: OrderedDict[bytes, _Entry] = OrderedDict()
        self._routes: dict[bytes, int] = {}  # requests per route in the current minute
        self._minute: int | None = None
        self.reset()

    def reset(self) -> None:
        """Zero the counters (the cached prefixes stay, as at a provider)."""
        self.lookups = 0  # requests long enough to cache
        self.hits = 0  # ... of which some tokens came from cache
        self.cached_tokens = 0
        self.evicted = 0  # dropped for room (max_entries), not for age

    def stats(self) -> dict[str, int]:
        return {
            "lookups": self.lookups,
            "hits": self.hits,
            "cached_tokens": self.cached_tokens,
            "entries": len(self._memory) + len(self._extended),
            "evicted": self.evicted,
        }

    def serve(
        self,
        model: str,
        body: dict[str, Any],
        contents: Sequence[str],
        prompt_tokens: int,
        now: float,
    ) -> int:
        """Cached tokens of this request (served now); its own prefixes are cached for later."""
        cfg = self.config
        if prompt_tokens < cfg.min_tokens or not cfg.caches(model):
            return 0
        self.lookups += 1
        self._sweep(now)
        namespace = _namespace(model, body)
        lengths = list(range(cfg.min_tokens, prompt_tokens + 1, cfg.step_tokens))
        roles = _roles(body, len(contents))
        digests = prefix_digests(namespace, roles, contents, lengths, self.rule)
        # a provider whose tokenizer counts more (usage_scale) reports more prompt tokens
        # than the text spans here: lengths past the text have no digest and are never hits
        lengths = lengths[: len(digests)]
        if cfg.route_rpm is not None:
            machine = self._machine(namespace, body, contents, now)
            if machine:
                tag = machine.to_bytes(4, "big")
                digests = [d + tag for d in digests]
        cached = 0
        for length, digest in zip(reversed(lengths), reversed(digests), strict=True):
            if self._alive(digest, now):
                cached = length
                break
        extended = body.get("prompt_cache_retention") == "24h" and cfg.extends(model)
        for digest in digests:
            self._keep(digest, now, extended)
        if cached:
            self.hits += 1
            self.cached_tokens += cached
        return cached

    # -- entries -----------------------------------------------------------------------------

    def _alive(self, digest: bytes, now: float) -> bool:
        cfg = self.config
        entry = self._extended.get(digest)
        if entry is not None:
            if now - entry.created < cfg.extended_s:
                return True
            del self._extended[digest]
        entry = self._memory.get(digest)
        if entry is None:
            return False
        if now - entry.used < cfg.idle_s and now - entry.created < cfg.max_s:
            return True
        del self._memory[digest]
        return False

    def _keep(self, digest: bytes, now: float, extended: bool) -> None:
        """Cache one prefix now, or refresh it if it is still cached."""
        cfg = self.config
        entry = self._extended.get(digest)
        if entry is not None:
            if now - entry.created < cfg.extended_s:
                entry.used = now
                return
            del self._extended[digest]
        memory = self._memory
        entry = memory.get(digest)
        if entry is not None and now - entry.used < cfg.idle_s and now - entry.created < cfg.max_s:
            entry.used = now
            if not extended:
                memory.move_to_end(digest)  # the most recently used, last
                return
            del memory[digest]
        else:
            memory.pop(digest, None)
            entry = _Entry(now)  # cached afresh: its hour starts again
        if extended:  # asked to keep it longer: it moves to the 24-hour store
            self._extended[digest] = entry
        else:
            memory[digest] = entry
        while len(memory) + len(self._extended) > cfg.max_entries:
            store = memory if memory else self._extended
            store.popitem(last=False)
            self.evicted += 1

    def _sweep(self, now: float) -> None:
        """Drop what has expired from the front of both stores (memory stays flat)."""
        cfg = self.config
        memory, extended = self._memory, self._extended
        while memory:
            entry = next(iter(memory.values()))
            if now - entry.used < cfg.idle_s:
                break
            memory.popitem(last=False)
        while extended:
            entry = next(iter(extended.values()))
            if now - entry.created < cfg.extended_s:
                break
            extended.popitem(last=False)

    def _machine(
        self, namespace: bytes, body: dict[str, Any], contents: Sequence[str], now: float
    ) -> int:
        """Which machine serves this request: past ``route_rpm`` requests a minute for one
        route (first tokens + key), the rest go to further machines, in order."""
        cfg = self.config
        assert cfg.route_rpm is not None
        minute = int(now // 60)
        if minute != self._minute:
            self._minute = minute
            self._routes.clear()
        (route,) = prefix_digests(
            namespace, _roles(body, len(contents)), contents, [cfg.route_tokens], self.rule
        ) or [namespace]
        seen = self._routes.get(route, 0)
        self._routes[route] = seen + 1
        return int(seen // cfg.route_rpm)


def _roles(body: dict[str, Any], n: int) -> list[str]:
    messages = body.get("messages") or []
    roles = [str(m.get("role", "")) if isinstance(m, dict) else "" for m in messages]
    return (roles + [""] * n)[:n]


def _namespace(model: str, body: dict[str, Any]) -> bytes:
    """What must be equal before two openings can share a cache: the model, the key that
    routes them, and what the provider puts before the messages (tools, the reply schema)."""
    before = {k: body[k] for k in ("tools", "tool_choice", "response_format") if k in body}
    key = body.get("prompt_cache_key")
    parts = (model, key if isinstance(key, str) else "", canonical_json(before).hex())
    return "\x1f".join(parts).encode("utf-8", "surrogatepass")


def prefix_digests(
    namespace: bytes,
    roles: Sequence[str],
    contents: Sequence[str],
    lengths: Sequence[int],
    rule: TokenRule = BYTE_RULE,
) -> list[bytes]:
    """A digest of the first N tokens of the request, for each N in ``lengths`` (ascending).

    Lengths past the messages fall in the closing ``PER_REQUEST_TOKENS``; a length longer
    than the request gets no digest.
    """
    out: list[bytes] = []
    if not lengths:
        return out
    h = hashlib.blake2b(namespace, digest_size=16)
    pos = 0  # tokens before the current message
    i = 0
    for role, content in zip(roles, contents, strict=True):
        data = content.encode("utf-8", "surrogatepass")
        view = memoryview(data)
        ends = rule.ends(data)  # byte offset after each of the content's tokens
        span = PER_MESSAGE_TOKENS + len(ends)
        tag = b"\x00" + role.encode("utf-8", "surrogatepass") + b"\x00"
        while i < len(lengths) and lengths[i] <= pos + PER_MESSAGE_TOKENS:  # in its framing
            part = h.copy()
            part.update(tag + b"f%d" % (lengths[i] - pos))
            out.append(part.digest())
            i += 1
        # the content is hashed once, a digest taken at each length that ends inside it
        running = h.copy()
        running.update(tag + b"c")
        fed = 0
        while i < len(lengths) and lengths[i] <= pos + span:
            cut = min(ends[lengths[i] - pos - PER_MESSAGE_TOKENS - 1], len(data))
            running.update(view[fed:cut])
            fed = cut
            out.append(running.copy().digest())
            i += 1
        running.update(view[fed:])
        running.update(b"\x00" + len(data).to_bytes(8, "big"))
        h = running
        pos += span
    while i < len(lengths) and lengths[i] <= pos + PER_REQUEST_TOKENS:  # the reply's priming
        part = h.copy()
        part.update(b"\x00p%d" % (lengths[i] - pos))
        out.append(part.digest())
        i += 1
    return out
