"""Run settings: small keyword-only value objects and the ``RunConfig`` that holds them.

Only settings that change what a run produces go into the config hash (``identity``):
the same command run again finds the same run and resumes it, while budget, limits,
concurrency and ``--limit`` may change between resumes. So may the endpoint: the same model
behind another URL, or a fleet of other endpoints (their keys, limits and weights), continues
the same run.

The defaults of the settings a user can change come from the table of settings
(``options/``), which also gives the flags and halugen.toml theirs; the objects are made
from the resolved settings by ``settings/build.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .options.table import default

__all__ = [
    "AUTH_SCHEMES",
    "BatchOptions",
    "Endpoint",
    "RateLimit",
    "RetryPolicy",
    "RunConfig",
    "Sampling",
    "Timeouts",
]

AUTH_SCHEMES = ("bearer", "api-key")  # Authorization: Bearer <key> | api-key: <key> (Azure)


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    connect: float = 10.0
    read: float = default("timeout")  # between bytes of the answer (--timeout sets both)
    total: float = default("timeout")  # one attempt, end to end


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = default("max_attempts")
    base_delay: float = 0.5  # seconds; attempt k waits uniform(0, min(cap, base * 2**k))
    max_delay: float = 60.0
    # the run stops when every attempt has failed to connect for this long (llm/reach.py)
    unreachable_after: float = default("unreachable_after")


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    rpm: float | None = default("rpm")  # requests per minute; None: learn from x-ratelimit headers
    tpm: float | None = default("tpm")  # tokens per minute (prompt + max output), same
    # most requests in flight at once (-j); None: automatic, as many as the known limits need
    # at the latency seen (up to 4,096), or as the server's capacity allows (up to 256)
    concurrency: int | None = default("concurrency")


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """One endpoint of a run: where calls go, with which key, under which limits."""

    url: str  # the OpenAI-compatible API root, e.g. https://host/v1
    api_key: str | None = field(default=None, repr=False)  # never stored, never printed
    key_env: str | None = None  # the environment variable the key was read from
    rpm: float | None = None  # None: learn from the endpoint's own headers
    tpm: float | None = None
    # most requests in flight at this endpoint; None: automatic (see RateLimit)
    concurrency: int | None = default("concurrency")
    weight: float = 1.0  # share of the calls when several endpoints have room
    auth: str = "bearer"  # "bearer" or "api-key" (Azure-style gateways)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sampling:
    temperature: float = default("temperature")
    max_tokens: int = default("max_tokens")
    top_p: float | None = None
    # how a candidate a guard turned away is asked for again (stages/follow_ups.py)
    reask: str = default("reask")


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchOptions:
    """Batch mode (``--batch``): a run's calls go through the provider's Batch API."""

    poll_seconds: float = default("batch_poll")  # between looks at the batches in progress
    max_requests: int = default("batch_max_requests")  # per batch file (OpenAI's limit)
    max_bytes: int = int(default("batch_max_mb") * 2**20)  # per batch file (OpenAI's limit)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything a generation run needs. Build it with keywords only."""

    tasks: tuple[str, ...] = (default("task"),)
    seeds: tuple[str, ...] = default("seeds")  # files or globs
    seed_format: str | None = default("seed_format")  # None: detect from content
    # (seed field, table column) pairs from --map / halugen.toml's map: which column fills
    # which field when seeds are read from a table; sorted by field
    seed_map: tuple[tuple[str, str], ...] = ()
    # what the card names the dataset of table seeds, and its licence (None: unknown)
    source_name: str | None = None
    source_license: str | None = None
    # "" until resolved: gpt-4o-mini on OpenAI's API, else the one model a server lists
    # (llm/endpoint.py); never a guess that would price a local model as OpenAI's
    model: str = default("model")
    base_url: str = default("base_url")
    api_key: str | None = field(default=None, repr=False)  # never stored, never printed
    db: Path = Path(default("db"))
    budget_usd: float | None = default("budget")
    # share of the budget left that open reservations may hold (budget.py); not part of the
    # identity: it changes how much is at risk at once, never what a run produces
    in_flight_share: float = default("in_flight_share")
    price_in: float | None = default("price_in")  # USD per million input tokens, over the card
    price_out: float | None = default("price_out")
    price_card: str | None = default("price_card")  # a bundled card's name ("local") or a file
    rate: RateLimit = RateLimit()  # a fleet: concurrency is each endpoint's, unless it says
    endpoints: tuple[Endpoint, ...] = ()  # a fleet; empty: base_url, api_key and rate make one
    retry: RetryPolicy = RetryPolicy()
    timeouts: Timeouts = Timeouts()
    sampling: Sampling = Sampling()
    judge: Sampling = Sampling(temperature=0.0, max_tokens=16)
    limit: int | None = default("limit")  # first N seeds per task
    run_seed: int = default("seed")
    fresh: bool = default("fresh")
    run_id: str | None = default("run_id")
    progress: bool = default("progress")
    long_documents: str = default("long_documents")  # truncate | skip
    # tokens; None: from the server, else the price card
    context_window: int | None = default("context_window")
    prompts_dir: Path | None = None  # templates found here win over the bundled ones
    # ask the filter's judge for JSON through response_format: auto (when the endpoint takes
    # it: llm/capabilities.py) | on | off. Not part of the identity: how the run asked is
    # recorded and kept by its later sessions
    structured: str = default("structured")
    # the verify stage (stages/verify.py) and its judge model ("" or None: the run's model).
    # Not part of the identity: verifying a run later resumes it and checks its samples
    verify: bool = default("verify")
    verify_model: str | None = default("verify_model")
    # None: interactive calls. Not part of the identity: a run may switch between batch and
    # interactive, and pays nothing twice (answers are found by request key either way)
    batch: BatchOptions | None = None

    def __post_init__(self) -> None:
        # With a fleet, base_url and api_key are its first endpoint's: where the run asks
        # which model is served and its context window (every endpoint serves the same model).
        if self.endpoints:
            object.__setattr__(self, "base_url", self.endpoints[0].url)
            object.__setattr__(self, "api_key", self.endpoints[0].api_key)

    def fleet(self) -> tuple[Endpoint, ...]:
        """The endpoints calls go to: the fleet, or the one endpoint of base_url/api_key/rate."""
        if self.endpoints:
            return self.endpoints
        rate = self.rate
        return (
            Endpoint(
                url=self.base_url,
                api_key=self.api_key,
                rpm=rate.rpm,
                tpm=rate.tpm,
                concurrency=rate.concurrency,
            ),
        )

    @property
    def endpoint_label(self) -> str:
        """Where calls go, for the runs table and messages (never a key)."""
        if not self.endpoints:
            return self.base_url
        return "fleet: " + ", ".join(e.url for e in self.endpoints)

    @property
    def judge_model(self) -> str:
        """The verify stage's judge model: ``--verify-model``, else the run's model."""
        return self.verify_model or self.model

    @property
    def seed_mapping(self) -> dict[str, str] | None:
        """``--map`` as ``{seed field: column}`` for ``read_seeds``; None when not given."""
        return dict(self.seed_map) or None

    def identity(self, template_hashes: dict[str, str]) -> dict[str, Any]:
        """The settings that define a run's output; their hash names the run."""
        # A mapping changes the seeds, so it is part of the identity; left out when there is
        # none, so the runs of stores made before it existed keep their hash.
        mapping: dict[str, Any] = {"seed_map": dict(sorted(self.seed_map))} if self.seed_map else {}
        # the card's name and licence of table seeds, kept with the run (left out when not
        # given, as the mapping is)
        if self.source_name:
            mapping["source_name"] = self.source_name
        if self.source_license:
            mapping["source_license"] = self.source_license
        # a re-ask that explains sends other requests: left out at the default, as above
        if self.sampling.reask != default("reask"):
            mapping["reask"] = self.sampling.reask
        return {
            "tasks": list(self.tasks),
            "seeds": list(self.seeds),
            "seed_format": self.seed_format,
            # the endpoint is not part of it: the same model behind another URL (a fleet, a
            # gateway, a moved server) continues the same run, as request keys do
            "model": self.model,
            "sampling": [self.sampling.temperature, self.sampling.max_tokens, self.sampling.top_p],
            "judge": [self.judge.temperature, self.judge.max_tokens, self.judge.top_p],
            "run_seed": self.run_seed,
            "templates": dict(sorted(template_hashes.items())),
            "long_documents": self.long_documents,
            **mapping,
        }
