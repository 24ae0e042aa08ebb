"""What every command shares: the consoles, settings -> RunConfig, the store's path.

The settings (``halugen/options/``) become flags in ``flags.py``, which also resolves a
command line's settings: the flag, then the environment, then halugen.toml, then the
default. ``run_config`` makes the ``RunConfig`` of them (``settings/build.py``), with the
three settings that need more than a cast: the budget, the seed map, the fleet.

Only light modules are imported here: building the parser (every ``--help``) must not load
DuckDB, aiohttp, pyarrow or asyncio; commands import what they need when they run.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config import Endpoint, RunConfig
from ..errors import ConfigError, HalugenError, UsageError
from ..settings.build import assemble
from ..settings.endpoints import parse_endpoint_flag, resolve_endpoints
from ..settings.file import load_settings
from ..settings.resolve import Resolved
from .flags import resolve_settings

if TYPE_CHECKING:
    from ..session import OnRun

__all__ = [
    "LazyConsole",
    "announce",
    "budget_from_flag",
    "db_path",
    "err",
    "first_json",
    "is_local_endpoint",
    "out",
    "report_outcome",
    "require_api_key",
    "run_config",
    "store_failure",
]


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


_BARE_AMOUNT = re.compile(r"\s*(\d*(?:\.\d+)?)\s*(usd)?\s*", re.IGNORECASE)


def budget_from_flag(text: str) -> float:
    """``--budget`` in US dollars; a value the shell mangled gets a message that says so.

    Unquoted, ``--budget $50`` reaches us as ``0``: the shell reads ``$5`` as its fifth
    positional parameter (empty) and keeps the ``0``; ``$5`` arrives as the empty string.
    """
    from ..cost.prices import parse_budget

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
    resolved = resolve_settings(args)
    # filled below, after the checks of every other setting (rpm, tpm, concurrency, ...)
    cfg = assemble(RunConfig, resolved, budget_usd=budget_usd(resolved), endpoints=(), seed_map=())
    fleet = fleet_of(resolved, cfg, keys_needed=calls)
    if calls:
        for url, key in [(e.url, e.api_key) for e in fleet] or [(cfg.base_url, cfg.api_key)]:
            require_api_key(url, key)
    return dataclasses.replace(cfg, endpoints=fleet, seed_map=seed_map(resolved))


def budget_usd(resolved: Resolved) -> float | None:
    """``--budget`` (a mangled flag gets its own message) or the file's ``budget``, in USD."""
    from ..cost.prices import parse_budget

    text = resolved["budget"]
    if text is None:
        return None
    if resolved.origin.get("budget") == "flag":
        return budget_from_flag(text)
    return parse_budget(str(text)) / 10**12


def fleet_of(resolved: Resolved, cfg: RunConfig, *, keys_needed: bool) -> tuple[Endpoint, ...]:
    """``--endpoint`` flags, else halugen.toml's ``[[endpoints]]``, as the run's fleet; an
    endpoint's limits default to the run's."""
    from_flags = resolved.origin.get("endpoints") == "flag"
    listed = resolved["endpoints"]
    specs = [parse_endpoint_flag(f) for f in listed] if from_flags else list(listed)
    return resolve_endpoints(
        specs,
        api_key=cfg.api_key,
        rpm=cfg.rate.rpm,
        tpm=cfg.rate.tpm,
        concurrency=cfg.rate.concurrency,
        source="--endpoint" if from_flags else f"{resolved.file} [[endpoints]]",
        keys_needed=keys_needed,
    )


def seed_map(resolved: Resolved) -> tuple[tuple[str, str], ...]:
    """``--map FIELD=COLUMN`` flags over halugen.toml's ``map`` table (a flag wins for its
    field), as sorted (field, column) pairs."""
    from ..seeds.table import parse_map

    value = resolved["map"]
    origin = resolved.origin.get("map")
    path = resolved.file
    table = value if origin == "file" else {}
    if origin == "flag":  # the file's map still fills the fields no flag names
        table = load_settings(path).get("map") or {}
    if not isinstance(table, dict):
        raise ConfigError(f'settings file {path}: map must be a table, e.g. {{question = "q"}}')
    mapping: dict[str, str] = {}
    for field, column in table.items():
        if not isinstance(column, str) or not column.strip():
            raise ConfigError(
                f"settings file {path}: map.{field} must be a column name in quotes "
                f"(got {column!r})"
            )
        mapping[field] = column.strip()
    if origin == "flag":
        mapping.update(parse_map(value))
    return tuple(sorted(mapping.items()))


def announce(kind: str, detail: str, db: Path) -> OnRun:
    """The ``on_run`` of a command that runs a session: one line as the run starts or resumes.
    ``{model}`` in ``detail`` becomes the model the session calls (known only then)."""

    def on_run(run_id: str, resumed: bool, model: str) -> None:
        verb = "resuming" if resumed else "starting"
        err.print(f"{verb} {kind} {run_id} ({detail.format(model=model)}) -> {db}")

    return on_run


def report_outcome(outcome: Any) -> int:
    """A finished session's notes and closing message (stderr when it failed); its exit code."""
    for note in outcome.notes:
        err.print(f"note: {note}")
    (err if outcome.exit_code else out).print(outcome.message)
    return int(outcome.exit_code)


# -- commands ---------------------------------------------------------------------------


def db_path(args: argparse.Namespace) -> Path:
    """The store of a command: ``--db``, else ``$HALUGEN_DB``, else halugen.toml, else default."""
    return Path(resolve_settings(args)["db"])


def store_failure(args: argparse.Namespace, exc: BaseException) -> HalugenError | None:
    """The store's own trouble behind an unexpected error (a damaged block DuckDB found while
    reading), as the user's error naming the store; None when it is something else."""
    if "duckdb" not in type(exc).__module__ or not hasattr(args, "db"):
        return None
    from ..store.failures import damaged_store

    try:
        path = db_path(args)
    except HalugenError:
        return None
    return damaged_store(path, exc)


def first_json(path: str) -> dict[str, Any]:
    import orjson

    try:
        with open(path, "rb") as f:
            line = f.readline()
        data = orjson.loads(line)
    except (OSError, orjson.JSONDecodeError):
        raise UsageError(f"{path}: cannot read its first JSON line") from None
    return data if isinstance(data, dict) else {}
