"""``halugen export``: samples out of the store in formats other tools read.

- ``halueval``: exactly the field names and JSON-lines layout of HaluEval's released files
  (``qa_data.json``, ``dialogue_data.json``, ``summarization_data.json``), so its
  evaluation scripts run on them.
- ``jsonl`` / ``parquet``: every column, plus model, cost and seed provenance, written by
  DuckDB's ``COPY``.
Filters: a run, a task, and any SQL predicate over the ``samples`` columns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .errors import UsageError
from .store.db import Store

__all__ = ["HALUEVAL_FIELDS", "ExportResult", "export_samples"]

# HaluEval's released files: task -> (file name, fields in order)
HALUEVAL_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "qa": ("qa_data.json", ("knowledge", "question", "right_answer", "hallucinated_answer")),
    "dialogue": (
        "dialogue_data.json",
        ("knowledge", "dialogue_history", "right_response", "hallucinated_response"),
    ),
    "summarization": (
        "summarization_data.json",
        ("document", "right_summary", "hallucinated_summary"),
    ),
}

_FULL = """
SELECT s.*, r.model AS run_model, c.calls AS calls_for_seed, c.cost_usd AS cost_usd_for_seed
FROM samples s
JOIN runs r USING (run_id)
LEFT JOIN (
    SELECT run_id, seed_key, count(*) AS calls, sum(cost_usd) AS cost_usd
    FROM calls GROUP BY run_id, seed_key
) c USING (run_id, seed_key)
"""


@dataclass(frozen=True)
class ExportResult:
    files: tuple[tuple[Path, int], ...]  # (path, rows)


def _where(run: str | None, task: str | None, where: str | None) -> tuple[str, list[str]]:
    clauses, params = [], []
    if run:
        clauses.append("run_id = ?")
        params.append(run)
    if task:
        clauses.append("task = ?")
        params.append(task)
    if where:
        clauses.append(f"({where})")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _sql_error(exc: duckdb.Error) -> UsageError:
    return UsageError(f"export query failed: {str(exc).splitlines()[0]} (check --where)")


def export_samples(
    store: Store,
    *,
    fmt: str,
    out: Path | None,
    run: str | None = None,
    task: str | None = None,
    where: str | None = None,
) -> ExportResult:
    if run and store.get_run(run) is None:
        raise UsageError(f"no run {run!r} in {store.path} (see 'halugen status')")
    if fmt == "halueval" and task == "general":
        from .annotate.formats import export_halueval_general

        target = out or Path("general_data.json")
        if target.is_dir():
            target = target / "general_data.json"
        return ExportResult(((target, export_halueval_general(store, target)),))
    if fmt == "halueval":
        return _halueval(store, out, run, task, where)
    if fmt not in ("jsonl", "parquet"):
        raise UsageError(f"unknown export format {fmt!r}: halueval, jsonl or parquet")
    target = out or Path(f"samples.{fmt}")
    if target.is_dir():
        target = target / f"samples.{fmt}"
    clause, params = _where(run, task, where)
    query = f"SELECT * FROM ({_FULL}) {clause} ORDER BY run_id, task, source_file, source_line"
    try:
        (count,) = store.conn.execute(f"SELECT count(*) FROM ({query})", params).fetchone()
        option = "FORMAT PARQUET" if fmt == "parquet" else "FORMAT JSON"
        store.copy_to(query, params, str(target), option)
    except duckdb.Error as exc:
        raise _sql_error(exc) from None
    return ExportResult(((target, int(count)),))


def _halueval(
    store: Store, out: Path | None, run: str | None, task: str | None, where: str | None
) -> ExportResult:
    tasks = (
        [task]
        if task
        else [
            t
            for (t,) in store.conn.execute(
                f"SELECT DISTINCT task FROM samples {_where(run, None, where)[0]} ORDER BY task",
                _where(run, None, where)[1],
            ).fetchall()
        ]
    )
    unknown = [t for t in tasks if t not in HALUEVAL_FIELDS]
    if unknown:
        raise UsageError(f"no HaluEval layout for task(s) {unknown}; use --format jsonl")
    if not tasks:
        return ExportResult(())
    if len(tasks) > 1 and out is not None and not out.is_dir() and out.suffix:
        raise UsageError("several tasks match: give --task, or --out a directory")
    files = []
    for name in tasks:
        filename, fields = HALUEVAL_FIELDS[name]
        if out is None:
            target = Path(filename)
        elif out.is_dir() or len(tasks) > 1:
            out.mkdir(parents=True, exist_ok=True)
            target = out / filename
        else:
            target = out
        clause, params = _where(run, name, where)
        sql = (
            f"SELECT {', '.join(fields)} FROM samples {clause} "
            f"ORDER BY run_id, source_file, source_line, seed_key"
        )
        try:
            rows = store.iter_rows(sql, params)
            n = 0
            with target.open("w", encoding="utf-8") as f:
                for row in rows:
                    # json.dumps' own layout, as HaluEval's files were written
                    f.write(json.dumps(dict(zip(fields, row, strict=True))) + "\n")
                    n += 1
        except duckdb.Error as exc:
            raise _sql_error(exc) from None
        files.append((target, n))
    return ExportResult(tuple(files))
