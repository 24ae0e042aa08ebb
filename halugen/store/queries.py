"""Named read queries behind ``halugen status`` and the demo's summary."""

from __future__ import annotations

from typing import Any

from .db import Store

__all__ = ["run_overview", "stage_costs"]


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
               round(r.budget_pusd / 1e12, 6) AS budget_usd
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
               prompt_tokens AS tokens_in, completion_tokens AS tokens_out,
               round(cost_usd, 8) AS cost_usd
        FROM cost_by_stage {where}
        ORDER BY run_id, task, stage DESC
    """,
        [run_id] if run_id else [],
    )
