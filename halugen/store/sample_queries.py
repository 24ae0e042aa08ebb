"""Named reads of the accepted samples behind ``halugen eval`` (the items it judges) and
``halugen audit`` (the samples it measures, the filter's picks)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .columns import SAMPLE_COLUMNS, field_columns
from .db import Store

__all__ = ["audit_samples", "filter_picks", "task_sample_fields"]


def task_sample_fields(
    store: Store, task: str, names: Sequence[str], gen_run: str | None
) -> Iterator[tuple[Any, ...]]:
    """(seed id, *fields ``names``) of ``task``'s samples (of one generation run), in a
    stable order (run, seed file, line)."""
    where, params = "WHERE task = ?", [task]
    if gen_run:
        where += " AND run_id = ?"
        params.append(gen_run)
    sql = (
        f"SELECT seed_id, {field_columns(names)} FROM samples {where} "
        f"ORDER BY run_id, source_file, source_line, seed_key"
    )
    return store.iter_rows(sql, params)


def _clauses(
    task: str | None, runs: Sequence[str] | None, *, prefix: str = ""
) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if task:
        where.append(f"{prefix}task = ?")
        params.append(task)
    if runs:
        where.append(f"{prefix}run_id IN ({', '.join('?' for _ in runs)})")
        params.extend(runs)
    return where, params


def filter_picks(
    store: Store, task: str | None, runs: Sequence[str] | None
) -> Iterator[tuple[Any, ...]]:
    """(task, shown order JSON, chosen candidate, sample's pattern) of each judged filter
    decision of an accepted sample (of ``task``, of ``runs``), by task."""
    where, params = _clauses(task, runs, prefix="f.")
    where.insert(0, "method IN ('judge', 'judge_again')")
    sql = (
        "SELECT f.task, f.shown_order, f.chosen, s.pattern FROM filter_decisions f "
        "JOIN samples s USING (run_id, task, seed_key) "
        f"WHERE {' AND '.join(where)} ORDER BY f.task"
    )
    return store.iter_rows(sql, params)


def audit_samples(
    store: Store, task: str | None, runs: Sequence[str] | None
) -> Iterator[tuple[Any, ...]]:
    """(run id, task, seed id, seed key, pattern, dataset, source file, source line,
    *``SAMPLE_COLUMNS``, extra_json) of the accepted samples (of ``task``, of ``runs``)."""
    where, params = _clauses(task, runs)
    sql = (
        "SELECT run_id, task, seed_id, seed_key, pattern, dataset, source_file, source_line, "
        f"{', '.join(SAMPLE_COLUMNS)}, extra_json FROM samples "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} "
        "ORDER BY task, run_id, source_file, source_line, seed_key"
    )
    return store.iter_rows(sql, params)
