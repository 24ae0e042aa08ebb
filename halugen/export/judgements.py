"""Per-item recognition results (``export --what judgements``): JSON lines, CSV or Parquet.

One row per judged item and shown side, the latest judgement of it within its eval run
(a resumed run may have written an item twice). Columns, in order:

``run_id, task, item_id, item_key, model, strategy, scoring, shown, truth, verdict, correct, p_yes,
raw, shown_length, template_hash, call_key, created_at``

``shown`` is the side the judge saw (``right``, ``hallucinated``; ``both`` for contrast,
``response`` for the general task), ``truth`` is true when that text is hallucinated,
``verdict`` the parsed reply (``yes`` = "contains hallucination"; contrast: ``yes`` = picked
the hallucinated one), ``correct`` whether the verdict matches the truth (invalid replies are
not correct), ``p_yes`` P(Yes) when scored from logprobs, ``raw`` the model's reply.

By default one eval run per (task, model, strategy, scoring): the newest (see ``selection``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..store.db import Store
from ..store.export_queries import (
    JUDGEMENTS_LATEST,
    all_of,
    judgement_rows_query,
    task_filters,
)
from ..version import __version__
from .samples import copy_query
from .selection import Selection, pick_runs
from .target import Target

__all__ = ["JUDGEMENT_COLUMNS", "export_judgements"]

JUDGEMENT_COLUMNS = (
    "run_id",
    "task",
    "item_id",
    "item_key",
    "model",
    "strategy",
    "scoring",
    "shown",
    "truth",
    "verdict",
    "correct",
    "p_yes",
    "raw",
    "shown_length",
    "template_hash",
    "call_key",
    "created_at",
)


def export_judgements(
    store: Store,
    target: Target,
    fmt: str,
    *,
    task: str | None,
    where: str | None,
    run: str | None,
    all_runs: bool,
) -> tuple[list[tuple[Path, int]], Selection]:
    if fmt not in ("jsonl", "csv", "parquet"):
        raise UsageError(f"judgements are exported as jsonl, csv or parquet, not {fmt!r}")
    filters, params = task_filters(task, where)
    selection = pick_runs(
        store,
        relation=JUDGEMENTS_LATEST,
        unit=("task", "model", "strategy", "scoring"),
        what="judgements",
        run=run,
        all_runs=all_runs,
        filters=filters,
        params=params,
    )
    if not selection.picked:
        return [], selection
    keep, keep_params = selection.clause(("task", "model", "strategy", "scoring"))
    predicate = all_of(filters, keep)
    query = judgement_rows_query(JUDGEMENT_COLUMNS, predicate)
    path = target.file(f"judgements.{fmt}")
    metadata = {
        "halugen_version": __version__,
        "halugen_run_id": ",".join(selection.runs),
        "halugen_what": "judgements",
    }
    copy_query(store, query, [*params, *keep_params], path, fmt, metadata)
    return [(path, sum(p.rows for p in selection.picked))], selection
