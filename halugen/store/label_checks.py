"""Named queries of the verify stage: which samples still need a check, and how many of
the checked ones were flagged (per run, task and pattern).

A sample counts as checked by a judge model and a verify template when a check of that
model and template ended ``passed`` or ``flagged``; a ``call_failed`` check is tried again
by the next session, and so is every sample after the template or the model changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .columns import field_columns
from .db import Store

__all__ = [
    "NOT_SUSPECT",
    "FlaggedShare",
    "LatestCheck",
    "flagged_in",
    "flagged_shares",
    "generation_runs",
    "latest_checks",
    "unchecked_samples",
    "verified_runs",
]


def unchecked_samples(
    store: Store,
    run_id: str,
    task: str,
    fields: Sequence[str],
    *,
    model: str,
    template_hash: str,
) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(seed key, pattern, the record's ``fields``) of each sample of ``run_id``'s ``task``
    that ``model`` has not checked with the template ``template_hash``, in store order."""
    sql = f"""
SELECT s.seed_key, s.pattern, {field_columns(fields, table="s")}
FROM sample_rows s
WHERE s.run_id = ? AND s.task = ? AND NOT EXISTS (
    SELECT 1 FROM label_check_rows c
    WHERE c.run_id = s.run_id AND c.task = s.task AND c.seed_key = s.seed_key
      AND c.model = ? AND c.template_hash = ? AND c.outcome IN ('passed', 'flagged'))
ORDER BY s.source_file, s.source_line, s.seed_key
"""
    for row in store.query(sql, [run_id, task, model, template_hash]):
        values = {
            name: "" if v is None else str(v) for name, v in zip(fields, row[2:], strict=True)
        }
        yield str(row[0]), str(row[1] or ""), values


@dataclass(frozen=True, slots=True)
class FlaggedShare:
    """Checked and flagged samples of one run's task and pattern ("" = every pattern)."""

    run_id: str
    task: str
    pattern: str
    checked: int
    flagged: int
    hallucination_supported: int
    right_unsupported: int
    unsure: int
    samples: int  # every sample of the group, checked or not
    # the judge's answers over the checked samples, whatever the outcome: how often it
    # called the right text supported, and how often the hallucinated one
    right_said_supported: int = 0
    hallucination_said_supported: int = 0


def flagged_shares(store: Store, run_ids: Sequence[str] | None = None) -> list[FlaggedShare]:
    """Per run, task and pattern, then per run and task (pattern ""), the latest checks."""
    where: str = ""
    params: list[str] = []
    if run_ids is not None:
        if not run_ids:
            return []
        where = f"WHERE s.run_id IN ({', '.join('?' for _ in run_ids)})"
        params = list(run_ids)
    sql = f"""
SELECT s.run_id, s.task, COALESCE(s.pattern, '') AS pattern,
       count(*) FILTER (WHERE c.outcome IN ('passed', 'flagged')) AS checked,
       count(*) FILTER (WHERE c.outcome = 'flagged') AS flagged,
       count(*) FILTER (WHERE c.reason = 'hallucination_supported') AS h_supported,
       count(*) FILTER (WHERE c.reason = 'right_unsupported') AS r_unsupported,
       count(*) FILTER (WHERE c.reason = 'unsure') AS unsure,
       count(*) AS samples,
       count(*) FILTER (WHERE c.outcome IN ('passed', 'flagged')
                          AND c.right_verdict = 'supported') AS r_said,
       count(*) FILTER (WHERE c.outcome IN ('passed', 'flagged')
                          AND c.hallucination_verdict = 'supported') AS h_said,
       GROUPING(s.pattern) AS whole
FROM sample_rows s
LEFT JOIN label_checks c USING (run_id, task, seed_key)
{where}
GROUP BY GROUPING SETS ((s.run_id, s.task, s.pattern), (s.run_id, s.task))
ORDER BY s.run_id, s.task, whole DESC, pattern
"""
    out = []
    for row in store.query(sql, params):
        run_id, task, pattern, checked, flagged, hs, ru, unsure, samples, r_yes, h_yes, whole = row
        out.append(
            FlaggedShare(
                str(run_id),
                str(task),
                "" if whole else str(pattern),
                int(checked),
                int(flagged),
                int(hs),
                int(ru),
                int(unsure),
                int(samples),
                int(r_yes),
                int(h_yes),
            )
        )
    return out


class LatestCheck(NamedTuple):
    """An item's latest check in a run: what was decided, and the judge's two answers
    (``supported``, ``unsupported``, ``unsure``; None when the call failed)."""

    key: str
    task: str
    outcome: str
    reason: str | None
    hallucination_verdict: str | None
    right_verdict: str | None


def latest_checks(store: Store, run_id: str) -> list[LatestCheck]:
    """Each item's latest check in ``run_id``."""
    rows = store.query(
        "SELECT seed_key, task, outcome, reason, hallucination_verdict, right_verdict "
        "FROM label_checks WHERE run_id = ?",
        [run_id],
    )
    return [
        LatestCheck(str(k), str(t), str(o), _text(r), _text(h), _text(v))
        for k, t, o, r, h, v in rows
    ]


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def generation_runs(store: Store) -> list[str]:
    """The generation runs that stored samples, oldest first."""
    rows = store.query(
        "SELECT r.run_id FROM runs r WHERE r.kind = 'generate' AND EXISTS "
        "(SELECT 1 FROM sample_rows s WHERE s.run_id = r.run_id) ORDER BY r.created_at"
    )
    return [str(r[0]) for r in rows]


def verified_runs(store: Store, run_ids: Sequence[str]) -> set[str]:
    """The runs of ``run_ids`` at least one of whose samples has a check."""
    if not run_ids:
        return set()
    marks = ", ".join("?" for _ in run_ids)
    rows = store.query(
        f"SELECT DISTINCT run_id FROM label_checks WHERE outcome IN ('passed', 'flagged') "
        f"AND run_id IN ({marks})",
        list(run_ids),
    )
    return {str(r[0]) for r in rows}


# A predicate over the ``samples`` view: the samples an export takes by default (never
# checked, or checked and passed).
NOT_SUSPECT = "label_check IS DISTINCT FROM 'flagged'"


def flagged_in(store: Store, run_ids: Sequence[str], task: str | None, where: str | None) -> int:
    """How many samples of ``run_ids`` (and ``task``, and the user's ``where``) are flagged."""
    if not run_ids:
        return 0
    clauses = [f"run_id IN ({', '.join('?' for _ in run_ids)})", "label_check = 'flagged'"]
    params: list[str] = list(run_ids)
    if task:
        clauses.append("task = ?")
        params.append(task)
    if where:
        clauses.append(f"({where})")
    rows = store.query(f"SELECT count(*) FROM samples WHERE {' AND '.join(clauses)}", params)
    return int(rows[0][0]) if rows else 0
