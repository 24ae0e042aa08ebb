"""What every command shares: the consoles, the endpoint flags, settings -> RunConfig.

Where a setting comes from, first match wins: the command-line flag, then the environment
(``HALUGEN_DB``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), then ``halugen.toml``, then the
default. The environment beats the file because it is set for one shell on purpose, while
the file is shared by everyone working in the directory.

Only light modules are imported here: building the parser (every ``--help``) must not load
DuckDB, aiohttp, pyarrow or asyncio; commands import what they need when they run.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config import DEFAULT_BASE_URL, RateLimit, RetryPolicy, RunConfig, Sampling, Timeouts
from ..errors import UsageError
from ..settings import load_settings, parse_endpoint_flag, resolve_endpoints

__all__ = [
    "DB_ENV",
    "LazyConsole",
    "budget_from_flag",
    "db_path",
    "default_db",
    "err",
    "first_json",
    "is_local_endpoint",
    "llm_flags",
    "out",
    "print_table",
    "require_api_key",
    "run_config",
]

DB_ENV = "HALUGEN_DB"
DEFAULT_DB = "halugen.duckdb"


class LazyConsole:
    """A rich ``Console`` made on first use, then standing in for it.

    Importing rich.console costs about as much as everything else ``--help`` does, and most
    ``--help`` and usage errors print through argparse instead. Attribute reads and writes
    and ``with`` go to the real console (rich's Live uses all three).
    """

    __slots__ = ("_console", "_kwargs")

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_kwargs", kwargs)
        object.__setattr__(self, "_console", None)

    @property
    def real(self) -> Any:
        console = object.__getattribute__(self, "_console")
        if console is None:
            from rich.console import Console

            console = Console(**object.__getattribute__(self, "_kwargs"))
            object.__setattr__(self, "_console", console)
        return console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.real, name, value)

    def __enter__(self) -> Any:
        return self.real.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.real.__exit__(*exc)


# Text from data or a provider is printed as is: never read as Rich markup or emoji codes.
out: Any = LazyConsole(highlight=False, soft_wrap=True, markup=False, emoji=False)
err: Any = LazyConsole(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


def llm_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model endpoint")
    g.add_argument(
        "--base-url",
        help=f"OpenAI-compatible API root (default: $OPENAI_BASE_URL or {DEFAULT_BASE_URL})",
    )
    g.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored")
    g.add_argument(
        "--endpoint",
        action="append",
        metavar="URL[,key=ENV_VAR,rpm=N,tpm=N,concurrency=N,weight=W,auth=api-key]",
        help="one endpoint of a fleet (repeat the flag): calls go to whichever has room, each "
        "with its own limits; key= names the environment variable with its key (default: "
        "the run's key); replaces --base-url and [[endpoints]] in halugen.toml",
    )
    g.add_argument(
        "-m",
        "--model",
        help="model name sent to the endpoint (default: gpt-4o-mini on OpenAI's API; on "
        "another server the one model it lists)",
    )
    g.add_argument(
        "--context-window",
        type=int,
        help="the model's context window in tokens (default: what the server says, else the "
        "price card)",
    )
    g.add_argument(
        "-j",
        "--concurrency",
        type=int,
        help="most requests in flight per endpoint (default: as many as the rate limits need "
        "at the latency seen, up to 4,096; up to 256 against a server that announces none)",
    )
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
    r.add_argument("--db", help=f"the DuckDB store (default: ${DB_ENV} or ./{DEFAULT_DB})")
    r.add_argument(
        "-b",
        "--budget",
        help="most the run may cost, across resumes: 50usd, 12.5USD, or '$50' in quotes",
    )
    r.add_argument("-n", "--limit", type=int, help="only the first N seeds of each task")
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


_BARE_AMOUNT = re.compile(r"\s*(\d*(?:\.\d+)?)\s*(usd)?\s*", re.IGNORECASE)


def budget_from_flag(text: str) -> float:
    """``--budget`` in US dollars; a value the shell mangled gets a message that says so.

    Unquoted, ``--budget $50`` reaches us as ``0``: the shell reads ``$5`` as its fifth
    positional parameter (empty) and keeps the ``0``; ``$5`` arrives as the empty string.
    """
    from ..budget import parse_budget

    bare = _BARE_AMOUNT.fullmatch(text)
    if bare is not None:
        number, unit = bare.group(1), bare.group(2)
        if not number or float(number) == 0:
            got = "an empty value" if not text.strip() else repr(text)
            raise UsageError(
                f"--budget got {got}: typed without quotes, --budget $50 reaches halugen as "
                f"'0' (and $5 as nothing), because the shell replaces '$5' with an empty "
                f"variable. Write --budget 50usd or quote it: --budget '$50'"
            )
        if not unit:
            raise UsageError(
                f"--budget {text!r} has no currency: write {number}usd. (Typed without "
                f"quotes, a dollar amount loses its '$' and first digit to the shell: "
                f"$12.5 arrives as '2.5'; quote it: --budget '$12.5')"
            )
    return parse_budget(text) / 10**12


def default_db(settings: dict[str, Any]) -> Path:
    """The store without ``--db``: ``$HALUGEN_DB``, else halugen.toml, else the default."""
    env = os.environ.get(DB_ENV, "").strip()
    return Path(env or settings.get("db") or DEFAULT_DB)


_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")  # Tailscale and other overlay networks


def is_local_endpoint(url: str) -> bool:
    """True for a server on this machine or a private network (such servers rarely want keys).

    IP addresses: loopback, private, link-local and 100.64/10. Names: ``localhost``, names
    under .local/.internal/.lan/.home.arpa, and single-label names (a container or a host
    in /etc/hosts); any other name counts as public: no DNS lookup is made to find out.
    """
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if not host:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or host.endswith(_LOCAL_SUFFIXES) or "." not in host
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip in _CGNAT


def require_api_key(base_url: str, api_key: str | None) -> None:
    """Refuse, before any call, to send requests without a key to a public endpoint."""
    if api_key or is_local_endpoint(base_url):
        return
    raise UsageError(
        f"no API key for {base_url}: set OPENAI_API_KEY or pass --api-key (a server on this "
        f"machine or a private network needs none; for a public server without keys, pass "
        f"--api-key none)"
    )


def run_config(args: argparse.Namespace, *, calls: bool = True) -> RunConfig:
    """The settings of a command from its flags, the environment and halugen.toml.

    ``calls``: the command will call the endpoint, so a public endpoint needs a key
    (``estimate`` passes False: it makes no call).
    """
    settings_path = Path(args.config) if getattr(args, "config", None) else Path("halugen.toml")
    settings = load_settings(settings_path, required=bool(getattr(args, "config", None)))
    tasks = _pick(args, settings, "task", default="qa")
    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    seeds = _pick(args, settings, "seeds", default=[])
    if isinstance(seeds, str):
        seeds = [seeds]
    from ..budget import parse_budget

    if getattr(args, "budget", None) is not None:
        budget: float | None = budget_from_flag(args.budget)
    elif (budget_text := settings.get("budget")) is not None:
        budget = parse_budget(str(budget_text)) / 10**12
    else:
        budget = None
    concurrency = _pick(args, settings, "concurrency")
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
        ("context-window", _pick(args, settings, "context_window")),
    ):
        _positive(name, value)
    if temperature < 0:
        raise UsageError(f"--temperature must not be negative (got {temperature:g})")
    base_url = _pick(
        args, settings, "base_url", default=os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    )
    api_key = getattr(args, "api_key", None) or os.environ.get("OPENAI_API_KEY") or None
    flags = getattr(args, "endpoint", None)
    specs = [parse_endpoint_flag(f) for f in flags] if flags else settings.get("endpoints", [])
    endpoints = resolve_endpoints(
        specs,
        api_key=api_key,
        rpm=rpm,
        tpm=tpm,
        concurrency=None if concurrency is None else int(concurrency),
        source="--endpoint" if flags else f"{settings_path} [[endpoints]]",
        keys_needed=calls,
    )
    if calls:
        for url, key in [(e.url, e.api_key) for e in endpoints] or [(base_url, api_key)]:
            require_api_key(url, key)
    return RunConfig(
        tasks=tuple(tasks),
        seeds=tuple(seeds),
        seed_format=_pick(args, settings, "seed_format"),
        model=_pick(args, settings, "model", default=""),
        context_window=_pick(args, settings, "context_window"),
        base_url=base_url,
        api_key=api_key,
        db=Path(args.db) if getattr(args, "db", None) else default_db(settings),
        budget_usd=budget,
        price_in=_pick(args, settings, "price_in"),
        price_out=_pick(args, settings, "price_out"),
        price_card=_pick(args, settings, "price_card"),
        rate=RateLimit(
            rpm=rpm, tpm=tpm, concurrency=None if concurrency is None else int(concurrency)
        ),
        endpoints=endpoints,
        retry=RetryPolicy(max_attempts=int(max_attempts)),
        timeouts=Timeouts(total=float(timeout), read=float(timeout)),
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
    """The store of a command: ``--db``, else ``$HALUGEN_DB``, else halugen.toml, else default."""
    if args.db:
        return Path(args.db)
    if os.environ.get(DB_ENV, "").strip():
        return default_db({})
    return default_db(load_settings(Path("halugen.toml")))


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.table import Table

    table = Table(title=title)
    for c in columns:
        table.add_column(str(c), overflow="fold")
    for r in rows:
        table.add_row(
            *("" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v) for v in r)
        )
    if not out.is_terminal:
        out.width = max(out.width, 1000)  # piped: the full width, never squeezed into 80 columns
    out.print(table)


def first_json(path: str) -> dict[str, Any]:
    import orjson

    try:
        with open(path, "rb") as f:
            line = f.readline()
        data = orjson.loads(line)
    except (OSError, orjson.JSONDecodeError):
        raise UsageError(f"{path}: cannot read its first JSON line") from None
    return data if isinstance(data, dict) else {}
