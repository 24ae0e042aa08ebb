"""The batches of a run in the store: their rows, their lines, and the ledger rows of lines.

Reads happen on the caller's connection; writes are groups for the store writer, so that a
batch's lines land with their reservations, and a batch's settlement with its new state,
in one transaction each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..llm.call_rows import LoggedCall, call_log_row
from ..records import ChatResult
from ..store import batch_queries
from ..store.db import Store, now
from ..store.rows import BatchLineRow, BatchRow, CallLogRow, LedgerRow, Statement
from .files import OutputLine
from .plan import Planned

__all__ = [
    "LIVE_STATES",
    "LineRecord",
    "batch_row",
    "error_class",
    "ledger_row",
    "line_log_row",
    "line_row",
    "lines_of",
    "live_batch_summary",
    "live_batches",
    "live_keys",
    "open_reserved",
    "run_batches",
    "update_row",
]

# a batch in these states may still be answered (and billed) by the provider
LIVE_STATES = ("submitting", "submitted")


@dataclass(frozen=True, slots=True)
class LineRecord:
    line_no: int
    call_id: int
    custom_id: str
    run_id: str
    stage: str
    task: str
    model: str
    seed_key: str
    est_prompt_tokens: int
    max_output_tokens: int
    reserved_pusd: int
    request_json: str


def live_batches(store: Store, run_id: str) -> list[tuple[BatchRow, datetime]]:
    """Batches of the run sent to a provider and not yet settled, oldest first: each row as
    stored, with when it was written (``created_at``, the writer's column)."""
    rows = batch_queries.live_batch_rows(store, run_id, BatchRow._fields, LIVE_STATES)
    return [(BatchRow(*r[:-1]), r[-1]) for r in rows]


def live_keys(store: Store, run_id: str) -> set[str]:
    """Request keys in batches of the run that may still complete."""
    rows = batch_queries.live_custom_ids(store, run_id, LIVE_STATES)
    return {r[0] for r in rows}


def live_batch_summary(store: Store, run_id: str) -> str:
    """'2 batches (batch_abc in_progress, ...)' for a run's live batches; '' when none."""
    batches = [batch for batch, _ in live_batches(store, run_id)]
    if not batches:
        return ""
    shown = ", ".join(
        f"{b.provider_batch_id or b.batch_id} {b.status or b.state}" for b in batches[:3]
    )
    more = f", {len(batches) - 3} more" if len(batches) > 3 else ""
    noun = "batch" if len(batches) == 1 else "batches"
    return f"{len(batches)} {noun} ({shown}{more})"


def lines_of(store: Store, batch_id: str) -> list[LineRecord]:
    rows = batch_queries.batch_lines(store, batch_id)
    return [LineRecord(*r) for r in rows]


def open_reserved(store: Store, batch_id: str) -> int:
    """Money still reserved by the lines of a batch (reservations not yet closed)."""
    return batch_queries.open_batch_reserved(store, batch_id)


def batch_row(
    batch_id: str,
    run_id: str,
    *,
    kind: str,
    state: str,
    requests: int,
    reserved_pusd: int,
    size: int,
    base_url: str | None,
    detail: str | None = None,
) -> BatchRow:
    return BatchRow(
        batch_id,
        run_id,
        kind,
        state,
        None,
        None,
        None,
        None,
        None,
        requests,
        0,
        0,
        reserved_pusd,
        size,
        base_url,
        detail,
        None,
    )


def line_row(
    batch_id: str, run_id: str, line_no: int, call_id: int, planned: Planned, reserved: int
) -> BatchLineRow:
    """A batch line: the planned request, its call id and what it reserved."""
    return BatchLineRow(
        batch_id,
        line_no,
        call_id,
        planned.key,
        run_id,
        planned.stage,
        planned.task,
        planned.model,
        planned.seed_key,
        planned.est_prompt_tokens,
        planned.max_output_tokens,
        reserved,
        planned.body.decode(),
    )


def ledger_row(line: LineRecord, event: str, pusd: int) -> LedgerRow:
    return LedgerRow(
        line.call_id,
        1,
        line.run_id,
        event,
        pusd,
        line.custom_id,
        line.stage,
        line.task,
        line.model,
        line.seed_key,
    )


def line_log_row(
    line: LineRecord,
    *,
    status: str,
    cost: int,
    attempts: int,
    answer: ChatResult | None = None,
    http_status: int | None = None,
    error_class: str | None = None,
    error: str | None = None,
) -> CallLogRow:
    """The ``call_log`` row of a batch line: its answer, or why it has none (a batch line
    has no latency of its own)."""
    call = LoggedCall(
        line.call_id, line.custom_id, line.run_id, line.stage, line.task, line.model, line.seed_key
    )
    return call_log_row(
        call,
        status=status,
        est_prompt_tokens=line.est_prompt_tokens,
        cost=cost,
        reserved=line.reserved_pusd,
        attempts=attempts,
        answer=answer,
        http_status=http_status,
        error_class=error_class,
        error=error,
        request_json=line.request_json,
    )


def error_class(out: OutputLine) -> str:
    """The error class of a failed output line, as calls.py names them."""
    if out.code == "context_length_exceeded" or "context length" in out.error.lower():
        return "ContextTooLong"  # its seed is rejected for good, as an interactive call's
    return "RetryableError" if out.retryable else "FatalCallError"


def update_row(batch_id: str, **values: Any) -> Statement:
    """An UPDATE of a batch's columns, as a statement for the writer."""
    values["updated_at"] = now()
    return batch_queries.batch_update(batch_id, values)


def run_batches(store: Store, run_ids: Iterable[str] | None = None) -> list[tuple[Any, ...]]:
    """Every batch (of the given runs), newest first, as the batch_progress view shows it."""
    return batch_queries.batch_progress_rows(store, run_ids)
