"""Named reads and the one named state change behind batch mode (``batch/``): the batches
of a run and their lines, the money their lines still hold, the answers a batch session
already has, and a batch's row updated for the writer.

Rows come back as the tuples the batch book turns into its records (``BatchRow``,
``LineRecord``); the column lists are given by the caller, which owns those records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .db import Store
from .rows import Statement

__all__ = [
    "batch_lines",
    "batch_progress_rows",
    "batch_update",
    "exported_lines",
    "failed_calls",
    "filtered_answers",
    "live_batch_rows",
    "live_custom_ids",
    "open_batch_reserved",
    "prompt_reports",
    "settled_key_prefixes",
]

# a batch line's columns, in ``LineRecord``'s order
_LINE_COLUMNS = (
    "line_no, call_id, custom_id, run_id, stage, task, model, seed_key, "
    "est_prompt_tokens, max_output_tokens, reserved_pusd, request_json"
)


def live_batch_rows(
    store: Store, run_id: str, columns: Sequence[str], states: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    """(*``columns``, created_at) of the run's provider batches in ``states``, oldest
    first."""
    return store.query(
        f"SELECT {', '.join(columns)}, created_at FROM batches "
        f"WHERE run_id = ? AND kind = 'api' AND state IN {states} ORDER BY created_at",
        [run_id],
    )


def live_custom_ids(store: Store, run_id: str, states: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """(custom id,) of the lines in the run's provider batches in ``states``."""
    return store.query(
        "SELECT l.custom_id FROM batch_lines l JOIN batches b USING (batch_id) "
        f"WHERE b.run_id = ? AND b.kind = 'api' AND b.state IN {states}",
        [run_id],
    )


def batch_lines(store: Store, batch_id: str) -> list[tuple[Any, ...]]:
    """A batch's lines, in order."""
    return store.query(
        f"SELECT {_LINE_COLUMNS} FROM batch_lines WHERE batch_id = ? ORDER BY line_no",
        [batch_id],
    )


def exported_lines(store: Store) -> list[tuple[Any, ...]]:
    """Every line of the exported batch files, oldest first."""
    return store.query(
        "SELECT l.line_no, l.call_id, l.custom_id, l.run_id, l.stage, l.task, l.model, "
        "l.seed_key, l.est_prompt_tokens, l.max_output_tokens, l.reserved_pusd, l.request_json "
        "FROM batch_lines l JOIN batches b USING (batch_id) WHERE b.kind = 'export' "
        "ORDER BY l.created_at"
    )


def open_batch_reserved(store: Store, batch_id: str) -> int:
    """Money still reserved by the lines of a batch (reservations not yet closed)."""
    (value,) = store.conn.execute(
        """
        SELECT COALESCE(sum(r.pusd), 0) FROM ledger r JOIN batch_lines l ON l.call_id = r.call_id
        WHERE l.batch_id = ? AND r.event = 'batch_reserve' AND NOT EXISTS (
            SELECT 1 FROM ledger c WHERE c.call_id = r.call_id AND c.res_no = r.res_no
            AND c.event <> 'batch_reserve')
        """,
        [batch_id],
    ).fetchone()
    return int(value)


def batch_update(batch_id: str, values: dict[str, Any]) -> Statement:
    """An UPDATE of a batch's columns (``values``), as a statement for the writer."""
    sets = ", ".join(f"{k} = ?" for k in values)
    return Statement(f"UPDATE batches SET {sets} WHERE batch_id = ?", [*values.values(), batch_id])


def batch_progress_rows(store: Store, run_ids: Iterable[str] | None) -> list[tuple[Any, ...]]:
    """Every batch (of the given runs), newest first, as the batch_progress view shows it."""
    sql = (
        "SELECT batch_id, run_id, kind, state, status, provider_batch_id, requests, completed, "
        "failed, reserved_usd, spent_usd, created_at FROM batch_progress"
    )
    params: list[Any] = []
    ids = list(run_ids or [])
    if ids:
        sql += f" WHERE run_id IN ({', '.join('?' for _ in ids)})"
        params = ids
    return store.query(sql + " ORDER BY created_at DESC", params)


def failed_calls(store: Store) -> list[tuple[Any, ...]]:
    """(request key, error) of every failed call."""
    return store.query("SELECT key, error FROM call_log WHERE status = 'failed'")


def prompt_reports(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """(our prompt estimate, the provider's prompt tokens) of the run's latest 1,000 answered
    calls whose usage the provider reported."""
    return store.query(
        "SELECT est_prompt_tokens, prompt_tokens FROM call_log WHERE run_id = ? AND "
        "status = 'ok' AND NOT usage_estimated AND est_prompt_tokens > 0 "
        "ORDER BY call_id DESC LIMIT 1000",
        [run_id],
    )


def settled_key_prefixes(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """(key prefix,) of the run's calls with an outcome (answered, cached, filtered)."""
    return store.query(
        "SELECT key_prefix FROM call_log WHERE run_id = ? AND status IN "
        "('ok', 'cached', 'content_filter')",
        [run_id],
    )


def filtered_answers(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """(key, response_json, prompt, completion and cached tokens, usage estimated) of the
    run's content_filter answers."""
    return store.query(
        "SELECT key, response_json, prompt_tokens, completion_tokens, cached_tokens, "
        "usage_estimated FROM call_log WHERE run_id = ? AND status = 'content_filter'",
        [run_id],
    )
