"""``halugen export``: what the store made, in the formats other tools read.

Samples (``--what samples``, the default):

- ``halueval``: HaluEval's released layout (``halueval``), UTF-8 JSON lines;
- ``jsonl`` / ``parquet`` / ``csv``: every column, plus model, cost and seed provenance
  (``samples``), with a dataset card (``card``) beside them;
- ``lm-eval``: a task directory for EleutherAI's lm-evaluation-harness (``lm_eval``);
- ``inspect``: an Inspect AI task file over the same items (``inspect_task``).

Judgements (``--what judgements``): per-item recognition results as ``jsonl``, ``csv`` or
``parquet`` (``judgements``).

Runs are never mixed silently: by default one run per task (judgements: per task, model
and strategy), the newest, and the notes say which (``selection``). ``--out DIR/`` (or an
existing directory) always writes a directory (``target``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypedDict

from ..annotate.resolve import LabelRule
from ..errors import UsageError
from ..store.db import Store
from ..tasks.catalog import TaskCatalog
from ..tasks.stored import recall
from .halueval import export_halueval, halueval_layout
from .judgements import JUDGEMENT_COLUMNS, export_judgements
from .selection import Selection
from .suspects import suspect_note, without_suspects
from .target import Target, resolve_target

__all__ = [
    "FORMATS",
    "JUDGEMENT_COLUMNS",
    "ExportRequest",
    "ExportResult",
    "export",
    "halueval_layout",
]

FORMATS = ("halueval", "jsonl", "parquet", "csv", "lm-eval", "inspect")
WHAT = ("samples", "judgements")


@dataclass(frozen=True, kw_only=True)
class ExportRequest:
    fmt: str = "halueval"
    what: str = "samples"
    out: str | os.PathLike[str] | None = None  # a trailing "/" names a directory
    run: str | None = None
    all_runs: bool = False
    task: str | None = None
    where: str | None = None
    card: bool = True  # the dataset card beside jsonl / parquet / csv samples
    # samples the verify stage flagged are left out unless this is set (export/suspects.py)
    include_suspect: bool = False
    labels: LabelRule = field(
        default_factory=LabelRule
    )  # which general-track items count as resolved


class _Chosen(TypedDict):
    """Which rows an export takes: the keyword arguments every exporter shares."""

    task: str | None
    where: str | None
    run: str | None
    all_runs: bool


@dataclass(frozen=True)
class ExportResult:
    files: tuple[tuple[Path, int], ...]  # (path, rows); companion files have 0 rows
    notes: tuple[str, ...] = ()  # which runs were taken, and which were left out
    what: str = "samples"


def export(store: Store, request: ExportRequest, tasks: TaskCatalog | None = None) -> ExportResult:
    """Write what ``request`` asks for; ``files`` is empty when nothing matched.

    ``tasks`` declares the tasks the store's rows name (``tasks.stored.recall``, read where
    the command starts); without it, the built-in tasks and the task folders ``store``
    keeps."""
    r = request
    if r.what not in WHAT:
        raise UsageError(f"unknown --what {r.what!r}: samples or judgements")
    if r.fmt not in FORMATS:
        raise UsageError(f"unknown export format {r.fmt!r}: {', '.join(FORMATS)}")
    catalog = recall(store) if tasks is None else tasks  # the task folders' fields
    if r.task is not None:  # an unknown task is a UsageError naming the known ones
        r = replace(r, task=catalog[r.task].name)
    where = r.where
    to_harness = r.fmt in ("lm-eval", "inspect")  # write_task_data leaves suspects out itself
    if r.what == "samples" and r.task != "general" and not r.include_suspect and not to_harness:
        where = without_suspects(r.where)
    common: _Chosen = {"task": r.task, "where": where, "run": r.run, "all_runs": r.all_runs}
    selection: Selection
    if r.what == "judgements":
        target = resolve_target(r.out, default=f"judgements.{r.fmt}")
        files, selection = export_judgements(store, target, r.fmt, **common)
    elif r.fmt == "halueval" and r.task == "general":
        return _general(store, r)
    elif r.fmt == "halueval":
        target_or_none = None if r.out is None else resolve_target(r.out, default="")
        files, selection = export_halueval(store, target_or_none, catalog=catalog, **common)
    elif r.fmt in ("lm-eval", "inspect"):
        default = "halugen-lm-eval" if r.fmt == "lm-eval" else "halugen-inspect"
        target = resolve_target(r.out, default=default, default_is_dir=True, needs_dir=True)
        from .inspect_task import export_inspect
        from .lm_eval import export_lm_eval
        from .recognition import write_task_data

        written, selection = write_task_data(
            store,
            target.path,
            labels=r.labels,
            include_suspect=r.include_suspect,
            catalog=catalog,
            **common,
        )
        harness = export_lm_eval if r.fmt == "lm-eval" else export_inspect
        files = harness(target.path, written) if written else []
    else:
        from .samples import export_sample_files

        target = resolve_target(r.out, default=f"samples.{r.fmt}")
        files, selection = export_sample_files(
            store, target, r.fmt, card=r.card, catalog=catalog, **common
        )
    notes = selection.notes
    if r.what == "samples" and not r.include_suspect and selection.picked:
        notes += suspect_note(store, selection.runs, r.task, r.where)
    return ExportResult(tuple(files), notes, r.what)


def _general(store: Store, r: ExportRequest) -> ExportResult:
    from ..annotate.formats import export_halueval_general

    if r.run is not None or r.where is not None:
        raise UsageError("the general track's HaluEval file takes no --run or --where")
    target: Target | None = None if r.out is None else resolve_target(r.out, default="")
    path = Path("general_data.json") if target is None else target.file("general_data.json")
    general = export_halueval_general(store, path, r.labels)
    note = r.labels.left_out(general.partial)
    notes = (note,) if note else ()
    if general.rows == 0:
        path.unlink(missing_ok=True)
        return ExportResult((), notes, r.what)
    return ExportResult(((path, general.rows),), notes, r.what)
