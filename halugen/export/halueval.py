"""HaluEval's released layout: ``qa_data.json``, ``dialogue_data.json``, ... as JSON lines.

Exactly the field names and order of HaluEval's files, one JSON object per line, text
written as UTF-8 (not ``\\u`` escapes), as HaluEval's own files are; so its evaluation
scripts read them, and halugen reads them back as seeds.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ..errors import UsageError
from ..store.db import Store
from .samples import sample_filters
from .selection import Selection, pick_runs, sql_error
from .target import Target

__all__ = ["HALUEVAL_FIELDS", "export_halueval"]

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


def export_halueval(
    store: Store,
    target: Target | None,
    *,
    task: str | None,
    where: str | None,
    run: str | None,
    all_runs: bool,
) -> tuple[list[tuple[Path, int]], Selection]:
    """Write one HaluEval file per selected task; ``target`` None: the file names in ./."""
    if task is not None and task not in HALUEVAL_FIELDS:
        raise UsageError(f"no HaluEval layout for task {task!r}; use --format jsonl")
    filters, params = sample_filters(task, where)
    selection = pick_runs(
        store,
        relation="samples",
        unit=("task",),
        what="samples",
        run=run,
        all_runs=all_runs,
        filters=filters,
        params=params,
    )
    unknown = [p.unit[0] for p in selection.picked if p.unit[0] not in HALUEVAL_FIELDS]
    if unknown:
        raise UsageError(f"no HaluEval layout for task(s) {unknown}; use --format jsonl")
    picked = sorted(selection.picked, key=lambda p: p.unit[0])
    if len(picked) > 1 and target is not None and not target.is_dir:
        raise UsageError("several tasks match: give --task, or --out a directory (end it with /)")
    files: list[tuple[Path, int]] = []
    for p in picked:
        name = p.unit[0]
        filename, fields = HALUEVAL_FIELDS[name]
        path = Path(filename) if target is None else target.file(filename)
        keep, keep_params = Selection((p,)).clause(("task",))
        predicate = " AND ".join(x for x in (filters, keep) if x)
        sql = (
            f"SELECT {', '.join(fields)} FROM samples WHERE {predicate} "
            f"ORDER BY run_id, source_file, source_line, seed_key"
        )
        n = 0
        try:
            with path.open("w", encoding="utf-8", newline="\n") as f:
                for row in store.iter_rows(sql, [*params, *keep_params]):
                    record = dict(zip(fields, row, strict=True))
                    # json.dumps' separators, UTF-8 text: the layout of HaluEval's files
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
                    n += 1
        except duckdb.Error as exc:
            raise sql_error(exc, store) from None
        files.append((path, n))
    return files, selection
