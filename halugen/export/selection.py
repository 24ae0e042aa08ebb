"""Which runs an export takes: never several runs of the same thing, silently.

Two generation runs over the same seeds (say, after editing the filter prompt) both hold
samples of every seed; pooling them writes each question twice. So, by default, an export
takes **one run per unit** — per task for samples, per (task, model, strategy) for
judgements — the newest run (latest ``runs.created_at``) that has rows matching the
filters, and says which in its notes, naming the runs it left out. ``--run RUN`` takes
exactly that run; ``--all-runs`` takes every matching run (rows then name their run, and
the same seed may appear once per run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ..errors import HalugenError, UsageError
from ..store.db import Store
from ..store.export_queries import picked_runs, rows_per_run
from ..store.failures import damaged_store

__all__ = ["Picked", "Selection", "pick_runs", "sql_error"]


@dataclass(frozen=True)
class Picked:
    """One unit (e.g. ``("qa",)`` or ``("qa", "gpt-4o-mini", "plain")``) and its run(s)."""

    unit: tuple[str, ...]
    runs: tuple[str, ...]
    rows: int
    left_out: tuple[tuple[str, int], ...] = ()  # (run, rows) not taken


@dataclass(frozen=True)
class Selection:
    picked: tuple[Picked, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(sorted({r for p in self.picked for r in p.runs}))

    def clause(self, columns: Sequence[str]) -> tuple[str, list[Any]]:
        """A SQL predicate keeping exactly the picked (unit, run) pairs."""
        return picked_runs([(p.unit, p.runs) for p in self.picked], columns)


def sql_error(exc: duckdb.Error, store: Store) -> HalugenError:
    """A failed export query: the store's damage when that is the cause, else --where's."""
    damaged = damaged_store(store.path, exc)
    if damaged is not None:
        return damaged
    return UsageError(f"export query failed: {str(exc).splitlines()[0]} (check --where)")


def pick_runs(
    store: Store,
    *,
    relation: str,
    unit: Sequence[str],
    what: str,
    run: str | None = None,
    all_runs: bool = False,
    filters: str = "",
    params: Sequence[Any] = (),
) -> Selection:
    """The runs to export, per ``unit`` (columns of ``relation``), newest first by default.

    ``filters`` is a SQL predicate (with ``params``) over ``relation``; ``what`` names the
    rows in the notes ("samples", "judgements").
    """
    if run is not None and all_runs:
        raise UsageError("give --run RUN or --all-runs, not both")
    if run is not None and store.get_run(run) is None:
        raise UsageError(f"no run {run!r} in {store.path} (see 'halugen status')")
    try:
        found = rows_per_run(store, relation, unit, filters, params)
    except duckdb.Error as exc:
        raise sql_error(exc, store) from None
    by_unit: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    for row in found:
        key = tuple(str(v) for v in row[: len(unit)])
        by_unit.setdefault(key, []).append((str(row[len(unit)]), int(row[len(unit) + 1])))
    picked: list[Picked] = []
    notes: list[str] = []
    for key, runs in by_unit.items():
        label = "/".join(key)
        if run is not None:
            taken = [(r, n) for r, n in runs if r == run]
            if taken:
                picked.append(Picked(key, (run,), taken[0][1]))
            continue
        if all_runs or len(runs) == 1:
            picked.append(Picked(key, tuple(r for r, _ in runs), sum(n for _, n in runs)))
            if len(runs) > 1:
                notes.append(
                    f"{label}: all {len(runs)} runs ("
                    + ", ".join(f"{r}: {n:,} {what}" for r, n in runs)
                    + ")"
                )
            else:
                notes.append(f"{label}: run {runs[0][0]} ({runs[0][1]:,} {what})")
            continue
        (newest, n), others = runs[0], tuple(runs[1:])
        picked.append(Picked(key, (newest,), n, others))
        left = ", ".join(f"{r} ({m:,} {what})" for r, m in others)
        notes.append(
            f"{label}: run {newest} ({n:,} {what}), the newest of {len(runs)} runs; left "
            f"out: {left}. Pass --run RUN for another one or --all-runs for all of them"
        )
    return Selection(tuple(picked), tuple(notes))
