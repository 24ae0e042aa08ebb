"""Named reads behind the cost figure (``halugen figures``): which run, its money events
over time, and the time of each unit it accepted."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from .db import Store

__all__ = [
    "RunKind",
    "SpendEvent",
    "accepted_units",
    "newest_run",
    "run_kind",
    "spend_events",
]

_SPENT = ("settle", "consume", "lost")
# run kind -> query of (created_at, task) per accepted unit
_UNITS = {
    "generate": "SELECT created_at, task FROM sample_rows WHERE run_id = ?",
    "eval": "SELECT created_at, task FROM judgements WHERE run_id = ?",
    "preselect": "SELECT created_at, 'general' FROM preselect_scores WHERE run_id = ?",
}


class RunKind(NamedTuple):
    run_id: str
    kind: str
    model: str


def run_kind(store: Store, run_id: str) -> RunKind | None:
    row = store.conn.execute(
        "SELECT run_id, kind, model FROM runs WHERE run_id = ?", [run_id]
    ).fetchone()
    return None if row is None else RunKind(*row)


def newest_run(store: Store) -> RunKind | None:
    """The newest generation run; without one, the newest run."""
    row = store.conn.execute(
        "SELECT run_id, kind, model FROM runs "
        "ORDER BY kind = 'generate' DESC, created_at DESC, run_id DESC LIMIT 1"
    ).fetchone()
    return None if row is None else RunKind(*row)


class SpendEvent(NamedTuple):
    created_at: datetime
    task: str
    stage: str
    pusd: int


def spend_events(store: Store, run_id: str) -> list[SpendEvent]:
    """The run's money as it was spent, oldest first: settled, consumed or lost; a
    reservation nobody closed (in flight, or left open by a crash) at its reservation, as
    ``run_spend`` counts it."""
    return [
        SpendEvent(*r)
        for r in store.conn.execute(
            f"SELECT created_at, COALESCE(task, ''), COALESCE(stage, ''), pusd FROM ledger l "
            f"WHERE run_id = ? AND (event IN ({', '.join(repr(e) for e in _SPENT)}) OR "
            f"(event = 'reserve' AND NOT EXISTS (SELECT 1 FROM ledger c "
            f"WHERE c.run_id = l.run_id AND c.call_id = l.call_id AND c.res_no = l.res_no "
            f"AND c.event <> 'reserve'))) "
            f"ORDER BY created_at, call_id",
            [run_id],
        ).fetchall()
    ]


def accepted_units(store: Store, run_id: str, kind: str) -> list[tuple[datetime, str]]:
    """(when, task) of each unit a run accepted, oldest first: a sample (generation runs),
    a judged item (eval), a scored query (pre-selection); none for other kinds."""
    sql = _UNITS.get(kind)
    if sql is None:
        return []
    return [
        (r[0], r[1]) for r in store.conn.execute(sql + " ORDER BY created_at", [run_id]).fetchall()
    ]
