"""halugen: build and run hallucination benchmarks for LLMs (HaluEval-style).

The public Python API. The command line (``python -m halugen``) is built on the same calls.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .budget import Ledger, ModelPrice, find_price, format_usd, parse_budget
from .config import RateLimit, RetryPolicy, RunConfig, Sampling, Timeouts
from .engine import RunOutcome, generate
from .errors import (
    AuthError,
    BudgetExhausted,
    ConfigError,
    EndpointUnreachable,
    FatalCallError,
    HalugenError,
    InputError,
    LLMError,
    RateLimited,
    RetryableError,
    StoreError,
    UsageError,
)
from .llm.transport import AiohttpTransport, HandlerTransport, HttpResponse, Transport
from .records import Candidate, ChatRequest, ChatResult, Judgement, Rejected, Sample, Seed
from .seeds import read_seeds
from .simulate import SimConfig, Simulator
from .store.db import Store, open_store

__all__ = [
    "AiohttpTransport",
    "AuthError",
    "BudgetExhausted",
    "Candidate",
    "ChatRequest",
    "ChatResult",
    "ConfigError",
    "EndpointUnreachable",
    "FatalCallError",
    "HalugenError",
    "HandlerTransport",
    "HttpResponse",
    "InputError",
    "Judgement",
    "LLMError",
    "Ledger",
    "ModelPrice",
    "RateLimit",
    "RateLimited",
    "Rejected",
    "RetryPolicy",
    "RetryableError",
    "RunConfig",
    "RunOutcome",
    "Sample",
    "Sampling",
    "Seed",
    "SimConfig",
    "Simulator",
    "Store",
    "StoreError",
    "Timeouts",
    "Transport",
    "UsageError",
    "__version__",
    "find_price",
    "format_usd",
    "generate",
    "open_store",
    "parse_budget",
    "read_seeds",
]
