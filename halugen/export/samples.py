"""Samples with every column: JSON lines, Parquet or CSV, written by DuckDB's ``COPY``.

Each row is a ``samples`` row plus the run's model and the calls and cost spent on its
seed; ``source_file`` is the seed file's name, without its directory. A directory target
gets one file per task (``qa.parquet`` ...), a file target one file with every selected task.
Parquet files carry ``halugen_version``, ``halugen_run_id``
(comma-separated when several runs) and ``halugen_task`` in their key-value metadata.
A dataset card (``README.md`` with Hugging Face's YAML header) is written beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from ..store.columns import SAMPLE_COLUMNS
from ..store.db import Store
from ..store.export_queries import all_of, sample_rows_query, task_filters
from ..store.hard_splits import IN_HARD_SPLIT, hard_path, hard_split_size
from ..tasks.catalog import TaskCatalog
from ..version import __version__
from .card import write_card
from .card_header import CardFile
from .selection import Selection, pick_runs, sql_error
from .target import Target

__all__ = [
    "SAMPLE_FILE_FORMATS",
    "card_name",
    "copy_query",
    "export_sample_files",
    "pick_sample_runs",
]

SAMPLE_FILE_FORMATS = {"jsonl": "jsonl", "parquet": "parquet", "csv": "csv"}

_COPY_OPTIONS = {"jsonl": "FORMAT JSON", "parquet": "FORMAT PARQUET", "csv": "FORMAT CSV, HEADER"}


def pick_sample_runs(
    store: Store, filters: str, params: list[Any], *, run: str | None, all_runs: bool
) -> Selection:
    """The runs whose samples an export takes, per task (``pick_runs`` over ``samples``)."""
    return pick_runs(
        store,
        relation="samples",
        unit=("task",),
        what="samples",
        run=run,
        all_runs=all_runs,
        filters=filters,
        params=params,
    )


def _rows_query(
    predicate: str, tasks: Sequence[str], catalog: TaskCatalog, *, one_task: bool
) -> str:
    """The rows of an export of ``tasks``: every column of ``samples`` but the other
    tasks' text fields (a one-task file, where they are always empty), with a task folder's
    own fields (kept in ``extra_json``) as columns of their own."""
    own: list[str] = []
    unknown = False
    for task in tasks:
        spec = catalog.get(task)
        if spec is None:  # a task the store does not describe: its fields stay as JSON
            unknown = True
        else:
            own += spec.record_fields
    own = list(dict.fromkeys(own))
    exclude = [] if unknown else ["extra_json"]
    if one_task and own:
        exclude += sorted(set(SAMPLE_COLUMNS) - set(own))
    extra = [f for f in own if f not in SAMPLE_COLUMNS]
    return sample_rows_query(predicate, exclude, extra)


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def copy_query(
    store: Store,
    query: str,
    params: list[Any],
    path: Path,
    fmt: str,
    metadata: dict[str, str] | None = None,
) -> None:
    """``COPY (query) TO path`` in ``fmt`` (jsonl, parquet, csv); Parquet gets ``metadata``."""
    options = _COPY_OPTIONS[fmt]
    if fmt == "parquet" and metadata:
        pairs = ", ".join(f"{k}: {_sql_text(v)}" for k, v in metadata.items())
        options += f", KV_METADATA {{{pairs}}}"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # through the store: also works while another halugen process holds it
        store.copy_to(query, params, str(path), options)
    except duckdb.Error as exc:
        raise sql_error(exc, store) from None


def card_name(target: Target, fmt: str) -> str:
    """The card's file name: one per export, never another export's.

    Beside a single file it carries the file's whole name (``out.jsonl.README.md``), so
    ``out.jsonl`` and ``out.csv`` each keep their own card. In a directory it is the
    ``README.md`` the Hugging Face Hub reads, unless the directory already holds another
    format's export (``qa.csv`` beside this ``qa.jsonl``): then ``README.jsonl.md``, and
    that export keeps its card.
    """
    if not target.is_dir:
        return f"{target.path.name}.README.md"
    others = tuple(f"*.{other}" for other in SAMPLE_FILE_FORMATS if other != fmt)
    if target.path.is_dir() and any(any(target.path.glob(g)) for g in others):
        return f"README.{fmt}.md"
    return "README.md"


def _hard_file(
    store: Store,
    path: Path,
    fmt: str,
    predicate: str,
    params: list[Any],
    tasks: tuple[str, ...],
    runs: tuple[str, ...],
    metadata: dict[str, str],
    catalog: TaskCatalog,
    *,
    one_task: bool,
) -> CardFile | None:
    """The hard split of the rows written to ``path`` (those ``audit --balance`` recorded),
    written beside it (``qa.parquet`` -> ``qa.hard.parquet``); None when none is recorded.
    The full file stays as it is: the hard split is a second split, never a replacement."""
    hard_predicate = f"({predicate}) AND {IN_HARD_SPLIT}" if predicate else IN_HARD_SPLIT
    rows = hard_split_size(store, predicate, params)
    hard = hard_path(path)
    if not rows:
        return None
    query = _rows_query(hard_predicate, tasks, catalog, one_task=one_task)
    copy_query(store, query, params, hard, fmt, {**metadata, "halugen_split": "hard"})
    return CardFile(path=hard, tasks=tasks, runs=runs, rows=rows, query=query, params=tuple(params))


def export_sample_files(
    store: Store,
    target: Target,
    fmt: str,
    *,
    task: str | None,
    where: str | None,
    run: str | None,
    all_runs: bool,
    card: bool = True,
    catalog: TaskCatalog,
) -> tuple[list[tuple[Path, int]], Selection]:
    """Write the selected samples; returns ((path, rows) per file, the selection).
    ``catalog`` declares the tasks the store's rows name."""
    filters, params = task_filters(task, where)
    selection = pick_sample_runs(store, filters, params, run=run, all_runs=all_runs)
    if not selection.picked:
        return [], selection
    groups = (
        [(p.unit[0], [p]) for p in selection.picked]
        if target.is_dir
        else [(None, list(selection.picked))]
    )
    files: list[tuple[Path, int]] = []
    card_files: list[CardFile] = []
    for name, picked in groups:
        chosen = Selection(tuple(picked))
        keep, keep_params = chosen.clause(("task",))
        predicate = all_of(filters, keep)
        query = _rows_query(
            predicate, [p.unit[0] for p in picked], catalog, one_task=name is not None
        )
        all_params = [*params, *keep_params]
        path = target.file(f"{name}.{fmt}") if name else target.path
        metadata = {
            "halugen_version": __version__,
            "halugen_run_id": ",".join(chosen.runs),
            "halugen_task": ",".join(p.unit[0] for p in picked),
        }
        copy_query(store, query, all_params, path, fmt, metadata)
        rows = sum(p.rows for p in picked)
        files.append((path, rows))
        tasks = tuple(p.unit[0] for p in picked)
        hard = _hard_file(
            store,
            path,
            fmt,
            predicate,
            all_params,
            tasks,
            chosen.runs,
            metadata,
            catalog,
            one_task=name is not None,
        )
        if hard is not None:
            files.append((hard.path, hard.rows))
        card_files.append(
            CardFile(
                path=path,
                tasks=tasks,
                runs=chosen.runs,
                rows=rows,
                query=query,
                params=tuple(all_params),
                hard=hard,
            )
        )
    if card:
        card_path = target.beside(card_name(target, fmt))
        write_card(store, card_path, card_files, fmt=fmt, tasks=catalog)
        files.append((card_path, 0))
    return files, selection
