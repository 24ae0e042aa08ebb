"""Named reads behind ``halugen topics``: the eval runs of a task, which items they judged
(and failed), and the texts the topic model reads (samples, annotation items).

Each function takes a DuckDB connection or cursor (``db``), as the topic analysis is handed
a store's connection.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from .columns import field_columns

__all__ = [
    "EvalRunRow",
    "eval_runs_of_task",
    "failed_items",
    "judgement_count",
    "latest_eval_run",
    "latest_item_texts",
    "sample_fields",
]

# a missed hallucination: the shown answer was hallucinated (contrast: always) and the
# verdict said it was not
_FAILED = "bool_or(truth AND verdict = 'no')"


def latest_eval_run(db: Any, task: str) -> str | None:
    """The eval run with the most recent judgements of ``task``, or None."""
    row = db.execute(
        "SELECT run_id FROM judgements WHERE task = ? GROUP BY run_id "
        "ORDER BY max(created_at) DESC, run_id DESC LIMIT 1",
        [task],
    ).fetchone()
    return None if row is None else str(row[0])


class EvalRunRow(NamedTuple):
    run_id: str
    model: str
    strategy: str
    judgements: int


def eval_runs_of_task(db: Any, task: str) -> list[EvalRunRow]:
    """Eval runs of ``task``, newest judgements first."""
    rows = db.execute(
        "SELECT run_id, any_value(model), any_value(strategy), count(*) FROM judgements "
        "WHERE task = ? GROUP BY run_id ORDER BY max(created_at) DESC, run_id DESC",
        [task],
    ).fetchall()
    return [EvalRunRow(str(r), str(m), str(s), int(n)) for r, m, s, n in rows]


def judgement_count(db: Any, run_id: str, task: str) -> int:
    return int(
        db.execute(
            "SELECT count(*) FROM judgements WHERE run_id = ? AND task = ?", [run_id, task]
        ).fetchone()[0]
    )


def failed_items(db: Any, run_id: str, task: str, *, by_item_id: bool) -> list[tuple[Any, bool]]:
    """(key, failed) per item an eval run judged of ``task``; the key is the annotation item
    id (``by_item_id``: general items) or the item key (samples)."""
    column = "item_id" if by_item_id else "item_key"
    return [
        (k, bool(f))
        for k, f in db.execute(
            f"SELECT {column}, {_FAILED} FROM judgements WHERE run_id = ? AND task = ? "
            f"GROUP BY {column}",
            [run_id, task],
        ).fetchall()
    ]


def sample_fields(
    db: Any, task: str, names: Sequence[str], gen_run: str | None
) -> Iterator[dict[str, Any]]:
    """The named fields of ``task``'s samples (of one generation run), field -> value per
    sample, in a stable order."""
    where, params = "WHERE task = ?", [task]
    if gen_run is not None:
        where += " AND run_id = ?"
        params.append(gen_run)
    cur = db.execute(
        f"SELECT {field_columns(names)} FROM samples {where} "
        f"ORDER BY run_id, source_file, source_line, seed_key",
        params,
    )
    columns = [d[0] for d in cur.description]
    while rows := cur.fetchmany(1000):
        for row in rows:
            yield dict(zip(columns, row, strict=True))


def latest_item_texts(db: Any, gen_run: str | None) -> list[tuple[Any, ...]]:
    """(item id, query, response) of the annotation items (of one pre-selection run), the
    latest row per item, by item id."""
    where, params = "", []
    if gen_run is not None:
        where, params = "WHERE run_id = ?", [gen_run]
    return db.execute(
        f"SELECT item_id, query, response FROM annotation_items {where} "
        f"QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at DESC) = 1 "
        f"ORDER BY item_id",
        params,
    ).fetchall()
