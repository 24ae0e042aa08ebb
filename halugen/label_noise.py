"""The label-noise rate the verify stage measured, as status, report, the dataset card and
``audit --verify`` state it: the flagged share of checked samples with its Wilson 95%
interval, per task and per pattern, and why samples were flagged."""

from __future__ import annotations

from collections.abc import Sequence

from .intervals import wilson
from .store.db import Store
from .store.label_checks import FlaggedShare, flagged_shares, generation_runs, verified_runs
from .tables import TableData

__all__ = [
    "NOT_VERIFIED",
    "SEPARATION_NOTE",
    "SHARE_COLUMNS",
    "flagged_share",
    "judge_answers",
    "judge_separates",
    "label_check_tables",
    "share_rows",
]

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
    "judge said supported: right / hallucinated",
]


def flagged_share(flagged: int, checked: int) -> str:
    """``12.5% (8.1–18.6%)``: the share with its Wilson 95% interval; "—" for none checked."""
    if not checked:
        return "—"
    low, high = wilson(flagged, checked)
    return f"{100 * flagged / checked:.1f}% ({100 * low:.1f}–{100 * high:.1f}%)"


SEPARATION_NOTE = (
    "The last column: how often the judge called the right text and the hallucinated "
    "text supported; '(does not separate)' when their 95% intervals touch: such a "
    "judge's flagged share says more about the judge than about the labels (a stronger "
    "--verify-model is the cure)"
)


def judge_separates(right_supported: int, hallucination_supported: int, checked: int) -> bool:
    """Whether the judge told the two texts apart: the share of right texts it called
    supported lies above the share of hallucinated ones, their Wilson 95% intervals apart.

    A judge that answers the same to both (a small model saying No to everything, say)
    flags nearly every item, and that share measures the judge, not the labels."""
    if not checked:
        return False
    return wilson(right_supported, checked)[0] > wilson(hallucination_supported, checked)[1]


def judge_answers(right_supported: int, hallucination_supported: int, checked: int) -> str:
    """``91.0% / 6.0%``: how often the judge called each text supported, marked
    ``(does not separate)`` when ``judge_separates`` says it did not tell them apart."""
    if not checked:
        return "—"
    right, hallucinated = right_supported / checked, hallucination_supported / checked
    text = f"{100 * right:.1f}% / {100 * hallucinated:.1f}%"
    if not judge_separates(right_supported, hallucination_supported, checked):
        text += " (does not separate)"
    return text


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
            judge_answers(s.right_said_supported, s.hallucination_said_supported, s.checked),
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
    rows += [[r, "", "", "", "", NOT_VERIFIED, "", "", "", ""] for r in runs if r not in checked]
    return [
        TableData(
            "Label check (run --verify)",
            SHARE_COLUMNS,
            rows,
            name="label_check",
            caption="flagged: the hallucinated text judged supported by its knowledge, the "
            "right text judged unsupported, or the judge unsure; share with its Wilson 95% "
            "interval. Flagged samples stay in the store and are left out of exports unless "
            f"--include-suspect. {SEPARATION_NOTE}",
        )
    ]
