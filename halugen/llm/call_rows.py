"""What a call writes about itself: its ``call_log`` row (with its answer, without one, or
answered from the store) and the ledger rows that close a reservation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import LLMError
from ..records import ChatRequest, ChatResult
from ..store.key_index import key_prefix
from ..store.rows import CallLogRow, LedgerRow

__all__ = [
    "CallState",
    "LoggedCall",
    "Where",
    "cached_log_row",
    "call_log_row",
    "close_row",
    "log_row",
    "retry_history",
]


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


class LoggedCall(NamedTuple):
    """Which call a ``call_log`` row is about (the row's first columns, ``key_prefix`` aside)."""

    call_id: int
    key: str
    run_id: str
    stage: str
    task: str
    model: str
    seed_key: str


def call_log_row(
    call: LoggedCall,
    *,
    status: str,
    est_prompt_tokens: int | None,
    cost: int,
    reserved: int,
    attempts: int,
    answer: ChatResult | None = None,
    latency_ms: float | None = None,
    http_status: int | None = None,
    error_class: str | None = None,
    error: str | None = None,
    request_json: str | None = None,
) -> CallLogRow:
    """A ``call_log`` row: the one builder behind interactive calls, batch lines and answers
    reused from the store, so that a column is added in one place.

    ``answer`` fills the usage and the finish reason. A fresh answer also brings HTTP 200 and
    its body; one read from the store (``from_cache``) keeps neither: the row it was read from
    already holds the body.
    """
    fresh = answer is not None and not answer.from_cache
    return CallLogRow(
        call.call_id,
        call.key,
        key_prefix(call.key),
        call.run_id,
        call.stage,
        call.task,
        call.model,
        call.seed_key,
        status,
        answer.prompt_tokens if answer else None,
        answer.completion_tokens if answer else None,
        answer.cached_tokens if answer else None,
        answer.usage_estimated if answer else None,
        est_prompt_tokens,
        cost,
        reserved,
        latency_ms,
        attempts,
        200 if fresh else http_status,
        error_class,
        error,
        answer.finish_reason if answer else None,
        request_json,
        answer.raw.decode("utf-8", "replace") if answer and fresh else None,
    )


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
    """An interactive call's ``call_log`` row: with the answer, or with why it has none."""
    return call_log_row(
        LoggedCall(
            call.call_id, call.key, run_id, call.stage, call.task, call.request.model, call.seed_key
        ),
        status=status,
        est_prompt_tokens=call.est,
        cost=call.cost,
        reserved=call.reserved,
        attempts=call.attempts,
        answer=result,
        latency_ms=result.latency_ms if result else None,
        http_status=error.status if error is not None else None,
        error_class=error.error_class if error is not None else None,
        error=message,
        request_json=call.body.decode() if body else None,
    )


def cached_log_row(call: LoggedCall, result: ChatResult) -> CallLogRow:
    """The ``call_log`` row of a call answered from the store (``result``: the answer
    ``stored_result`` read, with the stored token counts), free and without a request of
    its own."""
    return call_log_row(
        call,
        status="cached",
        est_prompt_tokens=None,
        cost=0,
        reserved=0,
        attempts=0,
        answer=result,
        latency_ms=0.0,
    )


def close_row(call_id: int, res_no: int, run_id: str, event: str, pusd: int) -> LedgerRow:
    return LedgerRow(call_id, res_no, run_id, event, pusd, None, None, None, None, None)


def retry_history(errors: list[str]) -> str | None:
    """The reasons of the attempts that failed before the last one, kept with the call."""
    if not errors:
        return None
    return "attempts failed: " + " | ".join(errors)[:900]
