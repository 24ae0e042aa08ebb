"""The hard split: which samples ``audit --balance`` kept, and the named queries over it.

``record_hard_split`` is the one state change: the samples of a task that a balance over
some runs kept replace what an earlier balance recorded for those runs and that task (one
commit). An export reads them through ``IN_HARD_SPLIT``, a predicate over ``samples``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .db import Store, now
from .rows import Statement

__all__ = [
    "IN_HARD_SPLIT",
    "HardSplit",
    "hard_path",
    "hard_split_of",
    "hard_split_size",
    "record_hard_split",
]

# a predicate over ``samples`` (as the export's row queries name it): the sample is in the
# hard split recorded for its run and task
IN_HARD_SPLIT = (
    "EXISTS (SELECT 1 FROM hard_split_rows h WHERE h.run_id = samples.run_id "
    "AND h.task = samples.task AND h.seed_key = samples.seed_key)"
)


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" for _ in values)


def record_hard_split(
    store: Store,
    *,
    audit_id: str,
    task: str,
    runs: Sequence[str],
    members: Sequence[tuple[str, str]],
    balanced: bool,
) -> None:
    """Record ``members`` ((run id, seed key) of each kept sample) as the hard split of
    ``task`` in ``runs`` (the runs the balance covered), replacing what was recorded for
    them; committed before it returns. The delete comes first: the writer runs its
    statements in order, after any records."""
    if not runs:
        return
    delete = Statement(
        f"DELETE FROM hard_split_rows WHERE task = ? AND run_id IN ({_marks(runs)})",
        [task, *runs],
    )
    rows: list[Statement] = [delete]
    if members:
        # the two lists unnest side by side: one row per member
        rows.append(
            Statement(
                "INSERT INTO hard_split_rows (audit_id, run_id, task, seed_key, balanced, "
                "created_at) SELECT ?, unnest(?::VARCHAR[]), ?, unnest(?::VARCHAR[]), ?, ?",
                [
                    audit_id,
                    [run for run, _ in members],
                    task,
                    [key for _, key in members],
                    balanced,
                    now(),
                ],
            )
        )
    store.writer.put(rows)
    store.writer.flush_blocking()


def hard_split_size(store: Store, predicate: str, params: Sequence[object]) -> int:
    """How many samples matching ``predicate`` (over ``samples``) are in the hard split."""
    where = f"({predicate}) AND {IN_HARD_SPLIT}" if predicate else IN_HARD_SPLIT
    rows = store.query(f"SELECT count(*) FROM samples WHERE {where}", list(params))
    return int(rows[0][0]) if rows else 0


@dataclass(frozen=True, slots=True)
class HardSplit:
    """What is recorded of the hard split of some runs' task."""

    task: str
    samples: int  # samples in it, across the runs
    audits: tuple[str, ...]  # the audits that chose them
    balanced: bool  # every one of those audits found its subset balanced


def hard_split_of(store: Store, runs: Sequence[str], task: str) -> HardSplit | None:
    """The recorded hard split of ``task`` in ``runs``; None when no balance recorded one."""
    if not runs:
        return None
    rows = store.query(
        "SELECT count(*), list(DISTINCT audit_id ORDER BY audit_id), bool_and(balanced) "
        f"FROM hard_split_rows WHERE task = ? AND run_id IN ({_marks(runs)})",
        [task, *runs],
    )
    if not rows or not rows[0][0]:
        return None
    n, audits, balanced = rows[0]
    return HardSplit(task=task, samples=int(n), audits=tuple(audits), balanced=bool(balanced))


def hard_path(out: Path) -> Path:
    """Where the hard split goes beside the full set ``out``: ``qa.json`` -> ``qa.hard.json``."""
    return out.with_name(f"{out.stem}.hard{out.suffix}" if out.suffix else f"{out.name}.hard")
