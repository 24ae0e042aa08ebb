"""What every generation stage shares: the run, the call runner, the writer, the counters."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Sampling
from ..llm.capabilities import Capabilities
from ..llm.endpoint import prompt_cache_key
from ..llm.strategy import CallStrategy, StageWriter
from ..records import fingerprint
from ..session import StopFlags
from ..stats import RunStats
from ..tasks.loaded import LoadedTask

__all__ = ["GenContext"]


@dataclass
class GenContext:
    run_id: str
    model: str
    run_seed: int
    runner: CallStrategy  # sends the calls now, or plans them for a batch
    writer: StageWriter
    capabilities: Capabilities  # what the endpoint accepts, settled before it matters
    stats: RunStats
    tasks: dict[str, LoadedTask]
    sampling: Sampling
    judge: Sampling
    flags: StopFlags = field(default_factory=StopFlags)
    # candidates stored by an earlier session of this run, for seeds still pending
    resumed_candidates: dict[str, list[tuple]] = field(default_factory=dict)
    context_window: int = 128_000
    # share of the window a record may fill by our count: a server that is not OpenAI's
    # counts with its own tokenizer, which can differ from ours by 10% or more
    fit_safety: float = 0.95
    long_documents: str = "truncate"  # truncate | skip
    prompts_dir: Path | None = None  # the user's templates (e.g. filter_again) win
    cache_keys: bool = False  # send prompt_cache_key (OpenAI's API documents it)

    def rng(self, seed_key: str, purpose: str) -> random.Random:
        """An RNG seeded by (run seed, record key, purpose): never global state."""
        return random.Random(fingerprint([self.run_seed, seed_key, purpose], size=16))

    def cache_key(self, template_name: str) -> str | None:
        """The ``prompt_cache_key`` of a template's requests, where the endpoint takes one."""
        return prompt_cache_key(template_name) if self.cache_keys else None

    def request_seed(self, seed_key: str, index: int, attempt: int = 0) -> int:
        """The ``seed`` parameter sent with a sampling request (providers' best effort);
        ``attempt`` > 0 for a candidate asked for again after a guard turned one away (a
        new seed, so a new request and a new answer, not the cached one)."""
        parts: list[object] = [self.run_seed, seed_key, index]
        if attempt:
            parts.append(attempt)
        return int(fingerprint(parts, size=8), 16) & 0x7FFFFFFF
