"""What every command shares: the consoles, settings -> RunConfig, the store's path.

The settings (``halugen/options/``) become flags in ``flags.py``, which also resolves a
command line's settings: the flag, then the environment, then halugen.toml, then the
default. ``run_config`` makes the ``RunConfig`` of them (``run_settings.py``).

Only light modules are imported here: building the parser (every ``--help``) must not load
DuckDB, aiohttp, pyarrow or asyncio; commands import what they need when they run.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import RunConfig
from ..errors import HalugenError, UsageError
from .flags import resolve_settings

if TYPE_CHECKING:
    from ..session import OnRun, RunStart

__all__ = [
    "LazyConsole",
    "announce",
    "db_path",
    "err",
    "first_json",
    "out",
    "report_outcome",
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


def run_config(args: argparse.Namespace, *, calls: bool = True) -> RunConfig:
    """The run's settings of a command from its flags, the environment and halugen.toml
    (``run_settings.py``); ``calls=False`` for a command that calls no endpoint."""
    from ..run_settings import make_run_config

    resolved = resolve_settings(args)
    return make_run_config(resolved, calls=calls)


def announce(kind: str, detail: str) -> OnRun:
    """The ``on_run`` of a command that runs a session: one line as the run starts or resumes.
    ``{model}``, ``{tasks}`` and ``{budget}`` in ``detail`` become the run's, as the session
    opened it (the model is known only then)."""

    def on_run(start: RunStart) -> None:
        from ..cost.prices import format_usd

        verb = "resuming" if start.resumed else "starting"
        budget = format_usd(start.budget_pusd) if start.budget_pusd else "none"
        said = detail.format(model=start.model, tasks=", ".join(start.tasks), budget=budget)
        err.print(f"{verb} {kind} {start.run_id} ({said}) -> {start.db}")

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
