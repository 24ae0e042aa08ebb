"""Named queries behind ``halugen export`` and its dataset card.

An export's rows are chosen by a predicate over ``samples`` or the latest judgements: the
``--task`` filter, the user's ``--where`` (SQL a user types, run as given) and the runs the
selection kept. The functions here hold the SQL around that predicate. A *file query* is
the text of the rows written to one exported file (``sample_rows_query``,
``judgement_rows_query``); the card reads it again (``file_*``) to describe the file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from .columns import field_columns
from .db import Store

__all__ = [
    "JUDGEMENTS_LATEST",
    "RunSetting",
    "TaskJudgement",
    "all_of",
    "file_batches",
    "file_columns",
    "file_datasets",
    "file_field_rows",
    "judgement_rows_query",
    "latest_task_judgements",
    "picked_runs",
    "rows_per_run",
    "run_settings",
    "sample_field_rows",
    "sample_rows_query",
    "task_filters",
]

# the latest judgement of each (run, task, model, strategy, item, shown), with whether it
# was right and the eval run's scoring (parse | logprobs, a setting kept in its config)
JUDGEMENTS_LATEST = (
    "(SELECT j.*, (j.verdict = 'yes') = j.truth AND j.verdict <> 'invalid' AS correct, "
    "COALESCE(json_extract_string(r.config_json, '$.scoring'), 'parse') AS scoring "
    "FROM judgements j LEFT JOIN runs r USING (run_id) "
    "QUALIFY row_number() OVER (PARTITION BY j.run_id, j.task, j.model, j.strategy, "
    "j.item_key, j.shown ORDER BY j.created_at DESC) = 1)"
)

# the name of a stored seed file path, with / or \\ as separators
_SOURCE_FILE_NAME = "parse_filename(s.source_file, false, 'both_slash')"


def task_filters(task: str | None, where: str | None) -> tuple[str, list[Any]]:
    """The predicate of ``--task`` and ``--where`` (the user's SQL, as typed), with its
    parameters; '' when neither is given."""
    clauses, params = [], []
    if task:
        clauses.append("task = ?")
        params.append(task)
    if where:
        clauses.append(f"({where})")
    return " AND ".join(clauses), params


def picked_runs(
    picked: Sequence[tuple[Sequence[str], Sequence[str]]], columns: Sequence[str]
) -> tuple[str, list[Any]]:
    """A predicate keeping exactly the (unit, run) pairs of ``picked``: (unit values, runs)
    each, the unit's values matching ``columns``."""
    if not picked:
        return "FALSE", []
    terms, params = [], []
    for unit, runs in picked:
        for run in runs:
            terms.append("(" + " AND ".join(f"{c} = ?" for c in (*columns, "run_id")) + ")")
            params += [*unit, run]
    return "(" + " OR ".join(terms) + ")", params


def all_of(*predicates: str) -> str:
    """The predicates that are given, all holding."""
    return " AND ".join(p for p in predicates if p)


def rows_per_run(
    store: Store, relation: str, unit: Sequence[str], filters: str, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """(*unit, run id, rows, when the run started) of the rows of ``relation`` (``samples``
    or ``JUDGEMENTS_LATEST``) matching ``filters``, per unit newest run first. Raises
    ``duckdb.Error`` as it comes (a bad ``--where``)."""
    cols = ", ".join(f"x.{c}" for c in unit)
    where = f"WHERE {filters}" if filters else ""
    sql = (
        f"SELECT {cols}, x.run_id, count(*) AS n, max(r.created_at) AS started "
        f"FROM (SELECT * FROM {relation} {where}) x LEFT JOIN runs r USING (run_id) "
        f"GROUP BY {cols}, x.run_id "
        f"ORDER BY {cols}, started DESC NULLS LAST, x.run_id DESC"
    )
    return store.conn.execute(sql, list(params)).fetchall()


def sample_rows_query(predicate: str, exclude: Sequence[str], extra: Sequence[str]) -> str:
    """The file query of a samples export: every column of ``samples`` but ``exclude``,
    the seed file's name for its path, the task folder fields ``extra`` (kept in
    ``extra_json``) as columns of their own, the run's model and each seed's calls and
    money."""
    columns = f"s.* EXCLUDE ({', '.join(exclude)})" if exclude else "s.*"
    # the seed file's name only: a path (../../data/x.json) says nothing once the file travels;
    # the run keeps the path as given and the file's sha256 (seed_files) for provenance
    columns += f" REPLACE ({_SOURCE_FILE_NAME} AS source_file)"
    columns += ", " + field_columns(extra, table="s") if extra else ""
    return f"""
SELECT {columns}, r.model AS run_model, c.calls AS calls_for_seed,
       c.cost_usd AS cost_usd_for_seed
FROM (SELECT * FROM samples WHERE {predicate}) s
JOIN runs r USING (run_id)
LEFT JOIN (
    SELECT run_id, seed_key, count(*) AS calls, sum(cost_usd) AS cost_usd
    FROM calls GROUP BY run_id, seed_key
) c USING (run_id, seed_key)
ORDER BY s.run_id, s.task, s.source_file, s.source_line, s.seed_key
"""


def judgement_rows_query(columns: Sequence[str], predicate: str) -> str:
    """The file query of a judgements export: ``columns`` of the latest judgements."""
    return (
        f"SELECT {', '.join(columns)} FROM {JUDGEMENTS_LATEST} j WHERE {predicate} "
        f"ORDER BY task, model, strategy, run_id, item_key, shown"
    )


def sample_field_rows(
    store: Store,
    names: Sequence[str],
    predicate: str,
    params: Sequence[Any],
    *,
    lead: Sequence[str] = (),
) -> Iterator[tuple[Any, ...]]:
    """(*lead columns, *fields ``names``) of the samples matching ``predicate``, in a
    stable order (run, seed file, line)."""
    columns = ", ".join([*lead, field_columns(names)])
    sql = (
        f"SELECT {columns} FROM samples WHERE {predicate} "
        f"ORDER BY run_id, source_file, source_line, seed_key"
    )
    return store.iter_rows(sql, list(params))


# -- the card ------------------------------------------------------------------------------
class RunSetting(NamedTuple):
    run_id: str
    model: str
    status: str
    halugen_version: str | None
    config_json: str | None
    created: str  # '%Y-%m-%d %H:%M'


def run_settings(store: Store, runs: Sequence[str]) -> list[RunSetting]:
    """The runs ``runs`` as the card lists them, oldest first."""
    marks = ", ".join("?" for _ in runs)
    return [
        RunSetting(*r)
        for r in store.conn.execute(
            f"SELECT run_id, model, status, halugen_version, config_json, "
            f"strftime(created_at, '%Y-%m-%d %H:%M') FROM runs WHERE run_id IN ({marks}) "
            f"ORDER BY created_at",
            list(runs),
        ).fetchall()
    ]


def file_datasets(store: Store, query: str, params: Sequence[Any]) -> list[Any]:
    """The distinct datasets of a file query's rows."""
    return [
        d
        for (d,) in store.conn.execute(
            f"SELECT DISTINCT dataset FROM ({query}) WHERE dataset IS NOT NULL", list(params)
        ).fetchall()
    ]


def file_columns(store: Store, query: str, params: Sequence[Any]) -> list[tuple[str, str]]:
    """(name, DuckDB type) of a file query's columns."""
    cur = store.conn.execute(f"SELECT * FROM ({query}) LIMIT 0", list(params))
    return [(d[0], str(d[1])) for d in cur.description]


@contextlib.contextmanager
def file_batches(store: Store, query: str, params: Sequence[Any]) -> Iterator[Any]:
    """A pyarrow RecordBatchReader over a file query's rows (also on a store another
    process holds: its live route answers in Arrow)."""
    if store.is_live:
        with store.conn.open_reader(query, list(params)) as reader:
            yield reader
        return
    cur = store.conn.cursor()
    try:
        yield cur.sql(query, params=list(params) or None).to_arrow_reader(10_000)
    finally:
        cur.close()


def file_field_rows(
    store: Store, query: str, params: Sequence[Any], columns: Sequence[str], task: str
) -> list[tuple[Any, ...]]:
    """``columns`` of a file query's rows of ``task``."""
    return store.conn.execute(
        f"SELECT {', '.join(columns)} FROM ({query}) WHERE task = ?", [*params, task]
    ).fetchall()


class TaskJudgement(NamedTuple):
    run_id: str
    model: str
    strategy: str
    item_key: str
    truth: bool
    verdict: str


def latest_task_judgements(store: Store, task: str) -> list[TaskJudgement]:
    """The latest judgement of each (run, item, shown side) of ``task``."""
    return [
        TaskJudgement(*r)
        for r in store.conn.execute(
            "SELECT run_id, model, strategy, item_key, truth, verdict FROM judgements "
            "WHERE task = ? QUALIFY row_number() OVER (PARTITION BY run_id, item_key, shown "
            "ORDER BY created_at DESC) = 1 ORDER BY run_id, item_key",
            [task],
        ).fetchall()
    ]
