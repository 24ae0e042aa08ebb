"""halugen: build and run hallucination benchmarks for LLMs (HaluEval-style).

The public Python API. The command line (``python -m halugen``) is built on the same calls.
Names are imported on first use (PEP 562), so ``import halugen`` — and with it every
``halugen --help`` — does not load DuckDB, aiohttp or pyarrow until something needs them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .version import __version__

# public name -> the module that defines it
_WHERE: dict[str, str] = {
    "Ledger": "budget",
    **dict.fromkeys(("ModelPrice", "find_price", "format_usd", "parse_budget"), "prices"),
    **dict.fromkeys(("RateLimit", "RetryPolicy", "RunConfig", "Sampling", "Timeouts"), "config"),
    **dict.fromkeys(("RunOutcome", "generate"), "engine"),
    **dict.fromkeys(
        (
            "AuthError",
            "BudgetExhausted",
            "ConfigError",
            "EndpointUnreachable",
            "FatalCallError",
            "HalugenError",
            "InputError",
            "LLMError",
            "RateLimited",
            "RetryableError",
            "StoreError",
            "UsageError",
        ),
        "errors",
    ),
    **dict.fromkeys(
        ("AiohttpTransport", "HandlerTransport", "HttpResponse", "Transport"), "llm.transport"
    ),
    **dict.fromkeys(
        ("Candidate", "ChatRequest", "ChatResult", "Judgement", "Rejected", "Sample", "Seed"),
        "records",
    ),
    "read_seeds": "seeds",
    **dict.fromkeys(("SimConfig", "Simulator"), "simulate"),
    **dict.fromkeys(("Store", "open_store"), "store.db"),
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'halugen' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see
    from .budget import Ledger
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
    from .prices import ModelPrice, find_price, format_usd, parse_budget
    from .records import Candidate, ChatRequest, ChatResult, Judgement, Rejected, Sample, Seed
    from .seeds import read_seeds
    from .simulate import SimConfig, Simulator
    from .store.db import Store, open_store
