"""What every command shares: the consoles, the flags of the settings, settings -> RunConfig.

The settings (``options.py``) become flags here, each group under its own heading, and a
command's parsed arguments get every setting it takes resolved, first match wins: the
command-line flag, then the environment (``HALUGEN_DB``, ``OPENAI_BASE_URL``,
``OPENAI_API_KEY``), then ``halugen.toml``, then the default. The environment beats the file
because it is set for one shell on purpose, while the file is shared by everyone working in
the directory.

Only light modules are imported here: building the parser (every ``--help``) must not load
DuckDB, aiohttp, pyarrow or asyncio; commands import what they need when they run.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config import BatchOptions, RateLimit, RetryPolicy, RunConfig, Sampling, Timeouts
from ..errors import ConfigError, HalugenError, UsageError
from ..options import GROUPS, Setting, setting, settings_in
from ..settings import load_settings, parse_endpoint_flag, resolve_endpoints

if TYPE_CHECKING:
    from ..session import OnRun

__all__ = [
    "DB_ENV",
    "LazyConsole",
    "add_config_flag",
    "add_setting",
    "add_settings",
    "announce",
    "budget_from_flag",
    "db_path",
    "err",
    "first_json",
    "is_local_endpoint",
    "out",
    "report_outcome",
    "require_api_key",
    "resolve_settings",
    "run_config",
    "store_failure",
]

DB_ENV = setting("db").env
_TAKES = "_settings"  # the parsed arguments' list of the settings their command takes


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


def add_settings(p: argparse.ArgumentParser, *groups: str) -> None:
    """The flags of every setting of ``groups`` (see ``options.GROUPS``), each group under
    its heading, and ``--config``."""
    for group in groups:
        g = p.add_argument_group(GROUPS[group])
        for s in settings_in(group):
            _add_flag(p, g, s)
    add_config_flag(p)


def add_setting(p: argparse.ArgumentParser, name: str, *, help: str | None = None) -> None:
    """The flag of one setting among the command's own options (``--db`` of ``status``);
    ``help`` says what it does for this command (the default is added)."""
    s = setting(name)
    _add_flag(p, p, s if help is None else dataclasses.replace(s, help=help))


def add_config_flag(p: argparse.ArgumentParser) -> None:
    if "--config" not in p._option_string_actions:
        p.add_argument(
            "--config",
            metavar="FILE",
            help="settings file (default: ./halugen.toml when there is one)",
        )


def _add_flag(p: argparse.ArgumentParser, where: Any, s: Setting) -> None:
    taken = p.get_default(_TAKES) or ()
    p.set_defaults(**{_TAKES: (*taken, s.name)})
    if not s.flags:  # halugen.toml (or the environment) only
        return
    kw: dict[str, Any] = {"dest": s.name, "default": None, "help": s.help_line().replace("%", "%%")}
    if s.const is not None:
        kw.update(action="store_const", const=s.const)
    else:
        kw.update(metavar=s.metavar, choices=s.choices)
        if s.repeat:
            kw["action"] = "append"
        if s.nargs:
            kw["nargs"] = s.nargs
        kinds = s.kind if isinstance(s.kind, tuple) else (s.kind,)
        if float in kinds:
            kw["type"] = float
        elif int in kinds:
            kw["type"] = int
    where.add_argument(*s.flags, **kw)


def resolve_settings(args: argparse.Namespace) -> argparse.Namespace:
    """Fill in every setting the command takes (the flag, the environment, halugen.toml, the
    default) and note where each came from in ``args._origin``. Done once per ``args``."""
    if getattr(args, "_origin", None) is not None:
        return args
    origin: dict[str, str] = {}
    given = getattr(args, "config", None)
    path = Path(given) if given else Path("halugen.toml")
    file: dict[str, Any] | None = None
    for name in getattr(args, _TAKES, None) or ():
        s = setting(name)
        value = getattr(args, name, None)
        if value is not None:
            origin[name] = "flag"
        elif s.env and os.environ.get(s.env, "").strip():
            value, origin[name] = _from_env(s, os.environ[s.env].strip()), "env"
        else:
            if file is None:
                file = load_settings(path, required=bool(given))
            if s.toml is not None and s.toml in file:
                value, origin[name] = file[s.toml], "file"
            else:
                value, origin[name] = s.default, "default"
        setattr(args, name, value)
    args._origin = origin
    args._settings_file = path
    return args


def _from_env(s: Setting, text: str) -> Any:
    kinds = s.kind if isinstance(s.kind, tuple) else (s.kind,)
    if str in kinds:
        return text
    if bool in kinds:
        if text.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return text.lower() in ("1", "true", "yes", "on")
        raise UsageError(f"${s.env} must be true or false, not {text!r}")
    try:
        return float(text) if float in kinds else int(text)
    except ValueError:
        raise UsageError(f"${s.env} must be a number, not {text!r}") from None


def _positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"--{name} must be more than zero (got {value:g})")


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
    from ..cost.prices import parse_budget

    a = resolve_settings(args)
    take = _Taken(a)
    tasks = take("task")
    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    seeds = take("seeds")
    if isinstance(seeds, str):
        seeds = [seeds]
    budget_text = take("budget")
    budget: float | None = None
    if budget_text is not None:
        if a._origin.get("budget") == "flag":
            budget = budget_from_flag(budget_text)
        else:
            budget = parse_budget(str(budget_text)) / 10**12
    concurrency, rpm, tpm = take("concurrency"), take("rpm"), take("tpm")
    timeout, temperature = take("timeout"), take("temperature")
    for name in ("concurrency", "rpm", "tpm", "limit", "timeout", "max_attempts",
                 "max_tokens", "context_window", "unreachable_after"):  # fmt: skip
        _positive(name.replace("_", "-"), take(name))
    in_flight_share = float(take("in_flight_share"))
    if not 0 < in_flight_share <= 1:
        raise UsageError(
            f"--in-flight-share must be above 0 and at most 1 (got {in_flight_share:g}): "
            f"the share of the budget left that calls in flight may hold"
        )
    if temperature < 0:
        raise UsageError(f"--temperature must not be negative (got {temperature:g})")
    api_key = take("api_key") or None
    flags = take("endpoints")
    from_flags = a._origin.get("endpoints") == "flag"
    specs = [parse_endpoint_flag(f) for f in flags] if from_flags else list(flags)
    endpoints = resolve_endpoints(
        specs,
        api_key=api_key,
        rpm=rpm,
        tpm=tpm,
        concurrency=None if concurrency is None else int(concurrency),
        source="--endpoint" if from_flags else f"{a._settings_file} [[endpoints]]",
        keys_needed=calls,
    )
    base_url = take("base_url")
    if calls:
        for url, key in [(e.url, e.api_key) for e in endpoints] or [(base_url, api_key)]:
            require_api_key(url, key)
    prompts = take("prompts")
    return RunConfig(
        tasks=tuple(tasks),
        seeds=tuple(seeds),
        seed_format=take("seed_format"),
        seed_map=seed_map(a, take("map")),
        source_name=take("source_name"),
        source_license=take("license"),
        model=take("model"),
        context_window=take("context_window"),
        base_url=base_url,
        api_key=api_key,
        db=Path(take("db")),
        budget_usd=budget,
        in_flight_share=in_flight_share,
        price_in=take("price_in"),
        price_out=take("price_out"),
        price_card=take("price_card"),
        rate=RateLimit(
            rpm=rpm, tpm=tpm, concurrency=None if concurrency is None else int(concurrency)
        ),
        endpoints=endpoints,
        retry=RetryPolicy(
            max_attempts=int(take("max_attempts")),
            unreachable_after=float(take("unreachable_after")),
        ),
        timeouts=Timeouts(total=float(timeout), read=float(timeout)),
        sampling=Sampling(temperature=float(temperature), max_tokens=int(take("max_tokens"))),
        limit=take("limit"),
        run_seed=int(take("seed")),
        fresh=bool(take("fresh")),
        run_id=take("run_id"),
        progress=bool(take("progress")),
        long_documents=take("long_documents"),
        prompts_dir=Path(prompts) if prompts else None,
        structured=take("structured"),
        verify=bool(take("verify")),
        verify_model=take("verify_model") or None,
        batch=batch_options(take),
    )


def seed_map(args: argparse.Namespace, value: Any) -> tuple[tuple[str, str], ...]:
    """``--map FIELD=COLUMN`` flags over halugen.toml's ``map`` table (a flag wins for its
    field), as sorted (field, column) pairs."""
    from ..seeds.table import parse_map

    origin = getattr(args, "_origin", {}).get("map")
    path = getattr(args, "_settings_file", Path("halugen.toml"))
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


class _Taken:
    """A setting's resolved value, or its default where the command does not take it."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._takes = set(getattr(args, _TAKES, None) or ())

    def __call__(self, name: str) -> Any:
        if name in self._takes:
            return getattr(self._args, name)
        return setting(name).default


def batch_options(take: Any) -> BatchOptions | None:
    """The BatchOptions of ``--batch`` (or ``batch = true`` in halugen.toml), else None."""
    if not take("batch"):
        return None

    def number(name: str, *, zero: bool = False) -> float:
        value = take(name)
        low = isinstance(value, int | float) and (value < 0 if zero else value <= 0)
        if not isinstance(value, int | float) or isinstance(value, bool) or low:
            least = "0 or more" if zero else "more than zero"
            raise UsageError(f"--{name.replace('_', '-')} must be a number {least} (got {value!r})")
        return float(value)

    return BatchOptions(
        poll_seconds=number("batch_poll", zero=True),
        max_requests=int(number("batch_max_requests")),
        max_bytes=int(number("batch_max_mb") * 2**20),
    )


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
    return Path(resolve_settings(args).db)


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
