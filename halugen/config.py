"""Run settings: small keyword-only value objects and the ``RunConfig`` that holds them.

Only settings that change what a run produces go into the config hash (``identity``):
the same command run again finds the same run and resumes it, while budget, limits,
concurrency and ``--limit`` may change between resumes. So may the endpoint: the same model
behind another URL, or a fleet of other endpoints (their keys, limits and weights), continues
the same run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "AUTH_SCHEMES",
    "DEFAULT_BASE_URL",
    "BatchOptions",
    "Endpoint",
    "RateLimit",
    "RetryPolicy",
    "RunConfig",
    "Sampling",
    "Timeouts",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
AUTH_SCHEMES = ("bearer", "api-key")  # Authorization: Bearer <key> | api-key: <key> (Azure)


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    connect: float = 10.0
    read: float = 120.0  # between bytes of the answer
    total: float = 300.0  # one attempt, end to end


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 8
    base_delay: float = 0.5  # seconds; attempt k waits uniform(0, min(cap, base * 2**k))
    max_delay: float = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    rpm: float | None = None  # requests per minute; None: learn from x-ratelimit headers
    tpm: float | None = None  # tokens per minute (prompt + max output), same
    # most requests in flight at once (-j); None: automatic, as many as the known limits need
    # at the latency seen (up to 4,096), or as the server's capacity allows (up to 256)
    concurrency: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """One endpoint of a run: where calls go, with which key, under which limits."""

    url: str  # the OpenAI-compatible API root, e.g. https://host/v1
    api_key: str | None = field(default=None, repr=False)  # never stored, never printed
    key_env: str | None = None  # the environment variable the key was read from
    rpm: float | None = None  # None: learn from the endpoint's own headers
    tpm: float | None = None
    concurrency: int | None = None  # most requests in flight at this endpoint; None: automatic
    weight: float = 1.0  # share of the calls when several endpoints have room
    auth: str = "bearer"  # "bearer" or "api-key" (Azure-style gateways)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sampling:
    temperature: float = 1.0
    max_tokens: int = 256
    top_p: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchOptions:
    """Batch mode (``--batch``): a run's calls go through the provider's Batch API."""

    poll_seconds: float = 30.0  # between looks at the batches in progress
    max_requests: int = 50_000  # per batch file (OpenAI's limit)
    max_bytes: int = 200 * 2**20  # per batch file (OpenAI's limit)
    # set by halugen/batch/run.py for one planning pass of the pipeline (never by users)
    plan: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything a generation run needs. Build it with keywords only."""

    tasks: tuple[str, ...] = ("qa",)
    seeds: tuple[str, ...] = ()  # files or globs
    seed_format: str | None = None  # None: detect from content
    # "" until resolved: gpt-4o-mini on OpenAI's API, else the one model a server lists
    # (llm/endpoint.py); never a guess that would price a local model as OpenAI's
    model: str = ""
    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = field(default=None, repr=False)  # never stored, never printed
    db: Path = Path("halugen.duckdb")
    budget_usd: float | None = None
    price_in: float | None = None  # USD per million input tokens, overrides the card
    price_out: float | None = None
    price_card: str | None = None  # a bundled card's name ("local") or a TOML file
    rate: RateLimit = RateLimit()  # a fleet: concurrency is each endpoint's, unless it says
    endpoints: tuple[Endpoint, ...] = ()  # a fleet; empty: base_url, api_key and rate make one
    retry: RetryPolicy = RetryPolicy()
    timeouts: Timeouts = Timeouts()
    sampling: Sampling = Sampling()
    judge: Sampling = Sampling(temperature=0.0, max_tokens=16)
    limit: int | None = None  # first N seeds per task
    run_seed: int = 0
    fresh: bool = False
    run_id: str | None = None
    progress: bool = True
    long_documents: str = "truncate"  # truncate | skip
    context_window: int | None = None  # tokens; None: from the server, else the price card
    prompts_dir: Path | None = None  # templates found here win over the bundled ones
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

    def identity(self, template_hashes: dict[str, str]) -> dict[str, Any]:
        """The settings that define a run's output; their hash names the run."""
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
        }
