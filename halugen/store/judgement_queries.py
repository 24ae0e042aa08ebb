"""Named read queries over the recognition judgements, behind ``report`` and ``compare``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["dialogue_clusters", "eval_run_settings", "judgement_rows"]


def _where(run_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
    if run_ids is None:
        return "", []
    return f"WHERE j.run_id IN ({', '.join('?' for _ in run_ids)})", list(run_ids)


def eval_run_settings(cur: Any, run_ids: Sequence[str] | None) -> list[tuple[str, Any, bool]]:
    """(run id, stored settings JSON or None, whether any judgement has a P(Yes)) per eval run
    with judgements (``run_ids``: only those; None: every run)."""
    where, params = _where(run_ids)
    cur.execute(
        f"SELECT DISTINCT j.run_id, r.config_json, bool_or(j.p_yes IS NOT NULL) OVER "
        f"(PARTITION BY j.run_id) FROM judgements j LEFT JOIN runs r USING (run_id) {where}",
        params,
    )
    return [(run_id, config, bool(has_p)) for run_id, config, has_p in cur.fetchall()]


def dialogue_clusters(cur: Any) -> dict[tuple[str, str], str]:
    """(task, seed id) -> its OpenDialKG dialogue (file and row) for the store's samples."""
    cur.execute(
        "SELECT DISTINCT task, seed_id, source_file, source_line FROM samples "
        "WHERE dataset = 'opendialkg' AND seed_id IS NOT NULL"
    )
    return {(t, sid): f"{f}:{line}" for t, sid, f, line in cur.fetchall()}


def judgement_rows(
    cur: Any, run_ids: Sequence[str] | None, *, batch: int = 10_000
) -> Iterator[tuple[Any, ...]]:
    """Every judgement (of ``run_ids``; None: all), oldest first within an item, as
    (task, model, strategy, run id, item key, item id, shown, truth, verdict, shown length,
    created at, times asked, first verdict, first reply, reader). Rows written before the
    reader was recorded were read by the interpreting reader: 'lenient'.

    Item order fixes the length baseline's folds: keys are hashes, unrelated to truth.
    """
    where, params = _where(run_ids)
    cur.execute(
        "SELECT task, model, strategy, run_id, item_key, item_id, shown, truth, verdict, "
        "shown_length, created_at, COALESCE(asked, 1), COALESCE(first_verdict, verdict), "
        f"COALESCE(first_raw, raw), COALESCE(reader, 'lenient') FROM judgements j {where} "
        "ORDER BY task, model, strategy, item_key, shown, created_at",
        params,
    )
    while rows := cur.fetchmany(batch):
        yield from rows
