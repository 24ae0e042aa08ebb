"""Named read queries behind ``halugen status`` and the demo's summary."""

from __future__ import annotations

from typing import Any

from .db import Store

__all__ = [
    "cost_per_sample",
    "cut_counts",
    "demo_summary",
    "rejection_reasons",
    "run_overview",
    "seed_waste",
    "stage_costs",
]


def _dicts(store: Store, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = store.conn.execute(sql, params or [])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def run_overview(store: Store) -> list[dict[str, Any]]:
    return _dicts(
        store,
        """
        SELECT r.run_id, r.kind, r.status, r.tasks, r.model,
               strftime(r.created_at, '%Y-%m-%d %H:%M') AS created,
               (SELECT count(*) FROM seed_progress p
                 WHERE p.run_id = r.run_id AND p.outcome = 'sampled') AS sampled,
               (SELECT count(*) FROM seed_progress p
                 WHERE p.run_id = r.run_id AND p.outcome = 'rejected') AS rejected,
               (SELECT count(*) FROM seed_progress p
                 WHERE p.run_id = r.run_id AND p.outcome IN ('pending', 'failed')) AS pending,
               round(s.spent_usd, 6) AS spent_usd,
               round(s.unsettled_usd, 6) AS unsettled_usd,
               round(r.budget_pusd / 1e12, 6) AS budget_usd,
               r.bound_by
        FROM runs r JOIN run_spend s USING (run_id)
        ORDER BY r.created_at
    """,
    )


def stage_costs(store: Store, run_id: str | None = None) -> list[dict[str, Any]]:
    where = "WHERE run_id = ?" if run_id else ""
    return _dicts(
        store,
        f"""
        SELECT run_id, task, stage, calls, cached_calls AS cached, failed_calls AS failed,
               cancelled_calls AS cancelled,
               prompt_tokens AS tokens_in, completion_tokens AS tokens_out,
               round(cost_usd, 8) AS cost_usd
        FROM cost_by_stage {where}
        ORDER BY run_id, task, stage DESC
    """,
        [run_id] if run_id else [],
    )


def rejection_reasons(store: Store, run_id: str | None = None) -> list[dict[str, Any]]:
    """Why candidates and seeds were turned away, counted per run and task.

    ``level`` "candidate": a sampled candidate's status (its latest, as a resumed run may
    have re-checked it), e.g. contains_right_answer, length_class, unparseable; "seed": why
    a seed ended without a sample (no_valid_candidate, judge_unparseable, ...).
    """
    where = "AND run_id = ?" if run_id else ""
    return _dicts(
        store,
        f"""
        SELECT run_id, task, level, reason, count(*) AS n FROM (
            SELECT run_id, task, 'candidate' AS level, status AS reason FROM candidates
            WHERE status <> 'ok' {where}
            QUALIFY row_number() OVER (
                PARTITION BY run_id, task, seed_key, idx ORDER BY created_at DESC) = 1
            UNION ALL
            SELECT run_id, task, 'seed' AS level, reason FROM seed_progress
            WHERE outcome IN ('rejected', 'failed') {where}
        )
        GROUP BY ALL
        ORDER BY run_id, task, level, n DESC, reason
    """,
        [run_id, run_id] if run_id else [],
    )


def cost_per_sample(store: Store, run_id: str | None = None) -> list[dict[str, Any]]:
    """Per run, task and stage: the provider's prompt cache (share of the billed prompt
    tokens it served, what it saved) and the money per accepted sample (the
    ``cost_per_sample`` view); stages that spent nothing are left out."""
    where = "WHERE run_id = ?" if run_id else ""
    return _dicts(
        store,
        f"""
        SELECT run_id, task, stage, prompt_tokens AS tokens_in, cached_tokens AS from_cache,
               round(100 * cache_share, 1) AS cache_pct, round(saved_usd, 8) AS saved_usd,
               round(cost_usd, 8) AS cost_usd, accepted,
               round(cost_per_sample_usd, 8) AS per_sample_usd
        FROM cost_per_sample {where}
        ORDER BY run_id, task, stage DESC
    """,
        [run_id] if run_id else [],
    )


def seed_waste(store: Store, run_id: str | None = None) -> list[dict[str, Any]]:
    """Money spent on seeds that gave no sample, by cause and reason (the ``seed_waste``
    view), the costliest first."""
    where = "WHERE run_id = ?" if run_id else ""
    return _dicts(
        store,
        f"""
        SELECT run_id, task, cause, stage, reason, seeds, calls, round(cost_usd, 8) AS cost_usd
        FROM seed_waste {where}
        ORDER BY run_id, task, cost_usd DESC, cause, reason
    """,
        [run_id] if run_id else [],
    )


def cut_counts(store: Store, run_id: str) -> tuple[int, int, str | None]:
    """(records cut to fit, records admitted, the window they were fitted to in words:
    cut_note.window_phrase) of a run. One row, whatever the run's size."""
    rows = store.query(
        """
        SELECT count(*) FILTER (WHERE s.truncated_tokens > 0), count(*),
               (SELECT fitted_window FROM runs WHERE run_id = ?)
        FROM seeds s WHERE s.run_id = ?
        """,
        [run_id, run_id],
    )
    if not rows:
        return 0, 0, None
    cut, records, fitted = rows[0]
    return int(cut), int(records), fitted


def demo_summary(store: Store) -> list[tuple[str, list[str], list[tuple[Any, ...]]]]:
    """(title, column names, rows) of the tables the demo prints after its run."""
    summary: list[tuple[str, list[str], list[tuple[Any, ...]]]] = []
    for title, sql in (
        (
            "Samples (first 5)",
            "SELECT pattern, question, right_answer, hallucinated_answer FROM samples "
            "ORDER BY seed_id LIMIT 5",
        ),
        (
            "Patterns",
            "SELECT pattern, count(*) AS samples FROM samples GROUP BY 1 ORDER BY 2 DESC",
        ),
        (
            "Cost by stage",
            "SELECT stage, calls, failed_calls, prompt_tokens, completion_tokens, "
            "round(cost_usd, 6) AS cost_usd FROM cost_by_stage ORDER BY stage DESC",
        ),
    ):
        cur = store.conn.execute(sql)
        summary.append((title, [d[0] for d in cur.description], cur.fetchall()))
    return summary
