"""The label-noise rate the verify stage measured, as status, report, the dataset card and
``audit --verify`` state it: the flagged share of checked samples with its Wilson 95%
interval, per task and per pattern, and why samples were flagged."""

from __future__ import annotations

from collections.abc import Sequence

from .intervals import wilson
from .store.db import Store
from .store.label_checks import FlaggedShare, flagged_shares, generation_runs, verified_runs
from .tables import TableData

__all__ = ["NOT_VERIFIED", "SHARE_COLUMNS", "flagged_share", "label_check_tables", "share_rows"]

NOT_VERIFIED = "labels not verified"
SHARE_COLUMNS = [
    "run",
    "task",
    "pattern",
    "checked",
    "flagged",
    "flagged share (95% CI)",
    "hallucination supported",
    "right unsupported",
    "unsure",
]


def flagged_share(flagged: int, checked: int) -> str:
    """``12.5% (8.1–18.6%)``: the share with its Wilson 95% interval; "—" for none checked."""
    if not checked:
        return "—"
    low, high = wilson(flagged, checked)
    return f"{100 * flagged / checked:.1f}% ({100 * low:.1f}–{100 * high:.1f}%)"


def share_rows(shares: Sequence[FlaggedShare], *, run: bool = True) -> list[list[str]]:
    """One row per run, task and pattern (pattern "all" for the task's total); groups with
    no checked sample are left out."""
    rows = []
    for s in shares:
        if not s.checked:
            continue
        row = [
            s.task,
            s.pattern or "all",
            f"{s.checked:,}",
            f"{s.flagged:,}",
            flagged_share(s.flagged, s.checked),
            f"{s.hallucination_supported:,}",
            f"{s.right_unsupported:,}",
            f"{s.unsure:,}",
        ]
        rows.append([s.run_id, *row] if run else row)
    return rows


def label_check_tables(store: Store) -> list[TableData]:
    """The "Label check" table of ``status`` and ``report``: every generation run's flagged
    share per task and pattern, or that its labels were not verified."""
    runs = generation_runs(store)
    if not runs:
        return []
    checked = verified_runs(store, runs)
    rows = share_rows(flagged_shares(store, sorted(checked))) if checked else []
    rows += [[r, "", "", "", "", NOT_VERIFIED, "", "", ""] for r in runs if r not in checked]
    return [
        TableData(
            "Label check (run --verify)",
            SHARE_COLUMNS,
            rows,
            name="label_check",
            caption="flagged: the hallucinated text judged supported by its knowledge, the "
            "right text judged unsupported, or the judge unsure; share with its Wilson 95% "
            "interval. Flagged samples stay in the store and are left out of exports unless "
            "--include-suspect",
        )
    ]
