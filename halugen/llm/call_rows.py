"""What a call writes about itself: its ``call_log`` row (with its answer, without one, or
answered from the store) and the ledger rows that close a reservation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import LLMError
from ..records import ChatRequest, ChatResult
from ..store.db import key_prefix
from ..store.rows import CallLogRow, LedgerRow

__all__ = ["CallState", "Where", "cached_log_row", "close_row", "log_row", "retry_history"]


# what a call's ledger rows say about it: key, stage, task, model, seed_key
Where = tuple[str, str, str, str, str]


@dataclass(slots=True)
class CallState:
    """One logical call while its attempts run: what the log row and the ledger need."""

    call_id: int
    key: str
    stage: str
    task: str
    seed_key: str
    request: ChatRequest
    est: int
    body: bytes
    attempts: int = 0
    res_no: int = 0
    cost: int = 0  # what the ledger counts for it so far (settled + consumed)
    reserved: int = 0
    errors: list[str] = field(default_factory=list)
    logged: bool = False
    max_attempts: int = 1


def log_row(
    call: CallState,
    run_id: str,
    status: str,
    *,
    result: ChatResult | None = None,
    error: LLMError | None = None,
    message: str | None = None,
    body: bool = True,
) -> CallLogRow:
    """A call's ``call_log`` row: with the answer, or with why it has none."""
    return CallLogRow(
        call.call_id,
        call.key,
        key_prefix(call.key),
        run_id,
        call.stage,
        call.task,
        call.request.model,
        call.seed_key,
        status,
        result.prompt_tokens if result else None,
        result.completion_tokens if result else None,
        result.cached_tokens if result else None,
        result.usage_estimated if result else None,
        call.est,
        call.cost,
        call.reserved,
        result.latency_ms if result else None,
        call.attempts,
        200 if result else (error.status if error is not None else None),
        error.error_class if error is not None else None,
        message,
        result.finish_reason if result else None,
        call.body.decode() if body else None,
        result.raw.decode("utf-8", "replace") if result else None,
    )


def cached_log_row(
    call_id: int,
    key: str,
    run_id: str,
    stage: str,
    task: str,
    model: str,
    seed_key: str,
    stored: tuple[Any, ...],
    result: ChatResult,
) -> CallLogRow:
    """The ``call_log`` row of a call answered from the store (``stored``: the row
    ``Store.cached_response`` read, ``result``: the answer read from it), free and without
    a request of its own."""
    _, prompt, completion, cached_tokens, estimated = stored
    finish_reason = result.finish_reasons[0] if result.finish_reasons else None
    return CallLogRow(
        call_id, key, key_prefix(key), run_id, stage, task, model, seed_key, "cached",
        prompt, completion, cached_tokens, estimated, None, 0, 0, 0.0, 0, None, None, None,
        finish_reason, None, None,
    )  # fmt: skip


def close_row(call_id: int, res_no: int, run_id: str, event: str, pusd: int) -> LedgerRow:
    return LedgerRow(call_id, res_no, run_id, event, pusd, None, None, None, None, None)


def retry_history(errors: list[str]) -> str | None:
    """The reasons of the attempts that failed before the last one, kept with the call."""
    if not errors:
        return None
    return "attempts failed: " + " | ".join(errors)[:900]
