"""HaluEval's released layout: ``qa_data.json``, ``dialogue_data.json``, ... as JSON lines
(a task folder's ``<task>_data.json`` holds its own fields the same way).

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
from ..store.export_queries import all_of, sample_field_rows, task_filters
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog
from .samples import pick_sample_runs
from .selection import Selection, sql_error
from .target import Target

__all__ = ["export_halueval", "halueval_layout"]


def halueval_layout(spec: TaskSpec) -> tuple[str, tuple[str, ...]]:
    """(file name, fields in order) of the task's file in HaluEval's released layout:
    ``qa_data.json`` with knowledge, question, right_answer, hallucinated_answer, ...; a
    task folder's file is ``<task>_data.json`` with its own fields."""
    if not spec.generated:
        raise UsageError(f"no HaluEval sample layout for task {spec.name!r}; use --format jsonl")
    return f"{spec.name}_data.json", spec.record_fields


def export_halueval(
    store: Store,
    target: Target | None,
    *,
    task: str | None,
    where: str | None,
    run: str | None,
    all_runs: bool,
    catalog: TaskCatalog,
) -> tuple[list[tuple[Path, int]], Selection]:
    """Write one HaluEval file per selected task; ``target`` None: the file names in ./.
    ``catalog`` declares the tasks the store's rows name."""
    if task is not None:
        halueval_layout(catalog[task])
    filters, params = task_filters(task, where)
    selection = pick_sample_runs(store, filters, params, run=run, all_runs=all_runs)
    layouts = {p.unit[0]: halueval_layout(catalog[p.unit[0]]) for p in selection.picked}
    picked = sorted(selection.picked, key=lambda p: p.unit[0])
    if len(picked) > 1 and target is not None and not target.is_dir:
        raise UsageError("several tasks match: give --task, or --out a directory (end it with /)")
    files: list[tuple[Path, int]] = []
    for p in picked:
        name = p.unit[0]
        filename, fields = layouts[name]
        path = Path(filename) if target is None else target.file(filename)
        keep, keep_params = Selection((p,)).clause(("task",))
        predicate = all_of(filters, keep)
        n = 0
        try:
            with path.open("w", encoding="utf-8", newline="\n") as f:
                for row in sample_field_rows(store, fields, predicate, [*params, *keep_params]):
                    record = dict(zip(fields, row, strict=True))
                    # json.dumps' separators, UTF-8 text: the layout of HaluEval's files
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
                    n += 1
        except duckdb.Error as exc:
            raise sql_error(exc, store) from None
        files.append((path, n))
    return files, selection
