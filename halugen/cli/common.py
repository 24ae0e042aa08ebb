"""What every command shares: the consoles, the endpoint flags, settings -> RunConfig."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from ..budget import parse_budget
from ..config import DEFAULT_BASE_URL, RateLimit, RetryPolicy, RunConfig, Sampling, Timeouts
from ..errors import UsageError
from ..settings import load_settings

__all__ = ["db_path", "err", "first_json", "llm_flags", "out", "print_table", "run_config"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def llm_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model endpoint")
    g.add_argument(
        "--base-url",
        help=f"OpenAI-compatible API root (default: $OPENAI_BASE_URL or {DEFAULT_BASE_URL})",
    )
    g.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored")
    g.add_argument("--model", help="model name sent to the endpoint (default: gpt-4o-mini)")
    g.add_argument("--concurrency", type=int, help="most requests in flight (default: 64)")
    g.add_argument(
        "--rpm",
        type=float,
        help="requests per minute allowed (default: learn from the server's x-ratelimit headers)",
    )
    g.add_argument("--tpm", type=float, help="tokens per minute allowed (same)")
    g.add_argument(
        "--price-in", type=float, help="USD per million input tokens (overrides the price card)"
    )
    g.add_argument("--price-out", type=float, help="USD per million output tokens")
    g.add_argument(
        "--price-card",
        help="a bundled price card by name (e.g. 'local' for a "
        "self-hosted server at $0) or a TOML file",
    )
    g.add_argument("--timeout", type=float, help="seconds one attempt may take (default: 300)")
    g.add_argument(
        "--max-attempts", type=int, help="attempts per call before it fails (default: 8)"
    )
    r = p.add_argument_group("run")
    r.add_argument("--db", help="the DuckDB store (default: ./halugen.duckdb)")
    r.add_argument("--budget", help="most the run may cost, across resumes: 50usd, $50, 12.5USD")
    r.add_argument("--limit", type=int, help="only the first N seeds of each task")
    r.add_argument("--seed", type=int, help="run seed (default: 0)")
    r.add_argument("--no-progress", action="store_true", help="no live view (plain lines)")
    r.add_argument("--config", help="settings file (default: ./halugen.toml when present)")


def _pick(
    args: argparse.Namespace,
    settings: dict[str, Any],
    flag: str,
    key: str | None = None,
    default: Any = None,
) -> Any:
    value = getattr(args, flag, None)
    if value is not None and value is not False:
        return value
    return settings.get(key or flag, default)


def _positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"--{name} must be more than zero (got {value:g})")


def run_config(args: argparse.Namespace) -> RunConfig:
    settings_path = Path(args.config) if getattr(args, "config", None) else Path("halugen.toml")
    settings = load_settings(settings_path, required=bool(getattr(args, "config", None)))
    tasks = _pick(args, settings, "task", default="qa")
    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    seeds = _pick(args, settings, "seeds", default=[])
    if isinstance(seeds, str):
        seeds = [seeds]
    budget_text = _pick(args, settings, "budget")
    budget = parse_budget(str(budget_text)) / 10**12 if budget_text is not None else None
    concurrency = _pick(args, settings, "concurrency", default=64)
    rpm = _pick(args, settings, "rpm")
    tpm = _pick(args, settings, "tpm")
    limit = _pick(args, settings, "limit")
    timeout = _pick(args, settings, "timeout", default=300.0)
    max_attempts = _pick(args, settings, "max_attempts", default=8)
    temperature = _pick(args, settings, "temperature", default=1.0)
    max_tokens = _pick(args, settings, "max_tokens", default=256)
    for name, value in (
        ("concurrency", concurrency),
        ("rpm", rpm),
        ("tpm", tpm),
        ("limit", limit),
        ("timeout", timeout),
        ("max-attempts", max_attempts),
        ("max-tokens", max_tokens),
    ):
        _positive(name, value)
    if temperature < 0:
        raise UsageError(f"--temperature must not be negative (got {temperature:g})")
    return RunConfig(
        tasks=tuple(tasks),
        seeds=tuple(seeds),
        seed_format=_pick(args, settings, "seed_format"),
        model=_pick(args, settings, "model", default="gpt-4o-mini"),
        base_url=_pick(
            args,
            settings,
            "base_url",
            default=os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        ),
        api_key=getattr(args, "api_key", None) or os.environ.get("OPENAI_API_KEY"),
        db=Path(_pick(args, settings, "db", default="halugen.duckdb")),
        budget_usd=budget,
        price_in=_pick(args, settings, "price_in"),
        price_out=_pick(args, settings, "price_out"),
        price_card=_pick(args, settings, "price_card"),
        rate=RateLimit(rpm=rpm, tpm=tpm, concurrency=int(concurrency)),
        retry=RetryPolicy(max_attempts=int(max_attempts)),
        timeouts=Timeouts(total=float(timeout), read=min(120.0, float(timeout))),
        sampling=Sampling(temperature=float(temperature), max_tokens=int(max_tokens)),
        limit=limit,
        run_seed=int(_pick(args, settings, "seed", default=0)),
        fresh=bool(getattr(args, "fresh", False)),
        run_id=getattr(args, "run_id", None),
        progress=not args.no_progress and settings.get("progress", True),
        long_documents=_pick(args, settings, "long_documents", default="truncate"),
        prompts_dir=Path(p) if (p := _pick(args, settings, "prompts")) else None,
        batch=_batch_options(args, settings),
    )


def _batch_options(args: argparse.Namespace, settings: dict[str, Any]) -> Any:
    from .batch import batch_options  # cli/batch.py imports this module

    return batch_options(args, settings)


# -- commands ---------------------------------------------------------------------------


def db_path(args: argparse.Namespace) -> Path:
    if args.db:
        return Path(args.db)
    settings = load_settings(Path("halugen.toml"))
    return Path(settings.get("db", "halugen.duckdb"))


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    table = Table(title=title)
    for c in columns:
        table.add_column(str(c), overflow="fold")
    for r in rows:
        table.add_row(
            *("" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v) for v in r)
        )
    out.print(table)


def first_json(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            line = f.readline()
        data = orjson.loads(line)
    except (OSError, orjson.JSONDecodeError):
        raise UsageError(f"{path}: cannot read its first JSON line") from None
    return data if isinstance(data, dict) else {}
