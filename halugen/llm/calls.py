"""Making one logical LLM call under all of halugen's guarantees.

    key -> cache? -> (first call of the session: alone) -> reserve worst case (in memory)
        -> rate-limit slot -> reservation durable -> leave at the pace -> send
        -> settle to reported usage (or release / consume) -> log the call -> answer

Retries happen here, each attempt reserved and paced on its own. Per-call failures are
returned as ``CallFailure`` values; only systemic errors raise (BudgetExhausted, Interrupted,
AuthError, EndpointUnreachable, StoreError).

"Durable" here means in the store's journal (store/journal.py): synced to disk in
microseconds of CPU, fed to DuckDB in bulk a moment later, off the send path.

Until its request is about to leave, an attempt waits in the run's ``Outbox`` (money, its
rate-limit slot, the backoff before a retry): the first Ctrl-C releases it there at $0. Its
reservation becomes durable only then, so what a kill leaves counted as spent is what had
reached the provider (at most the concurrency), never requests that were still queued.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..budget import Ledger, PromptMargin, Reservation
from ..config import RetryPolicy
from ..cost.prices import ModelPrice, format_usd
from ..errors import (
    AuthError,
    BudgetExhausted,
    CallTimeout,
    ConnectFailed,
    ContextTooLong,
    EndpointUnreachable,
    FatalCallError,
    Interrupted,
    LLMError,
    RetryableError,
)
from ..prompts import PER_MESSAGE_TOKENS, PER_REQUEST_TOKENS
from ..records import ChatRequest, ChatResult
from ..stats import RunStats, StageStats
from ..store.db import Store
from ..store.key_index import KeyIndex
from ..store.rows import CallRequestRow, LedgerRow
from ..tokens import TokenCounter
from .calibration import FirstCallAlone
from .call_rows import (
    CallState,
    LoggedCall,
    Where,
    cached_log_row,
    close_row,
    log_row,
    retry_history,
)
from .client import stored_result
from .outbox import Outbox, Place
from .pool import EndpointPool
from .reach import Reachability
from .retrying import retrying

__all__ = ["CallFailure", "CallRunner"]


@dataclass(frozen=True, slots=True)
class CallFailure:
    key: str
    error_class: str
    message: str
    status: int = 0

    @property
    def reason(self) -> str:
        return "context_length" if self.error_class == "ContextTooLong" else "call_failed"


class CallRunner:
    def __init__(
        self,
        *,
        run_id: str,
        pool: EndpointPool,
        ledger: Ledger,
        price: ModelPrice,
        counter: TokenCounter,
        store: Store,
        stats: RunStats,
        retry: RetryPolicy = RetryPolicy(),
        margin: PromptMargin | None = None,
        first_call_id: int = 1,
        sleep: Callable[[float], Any] = asyncio.sleep,
        outbox: Outbox | None = None,
        clock: Callable[[], float] | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.pool = pool  # the endpoints: each attempt goes to one with room
        self.ledger = ledger
        self.price = price
        self.counter = counter
        self.count_tokens = counter.count
        self.store = store
        self.writer = store.writer
        self.stats = stats
        self.retry = retry
        self.margin = margin or PromptMargin()
        self._first = FirstCallAlone(self.margin)
        self.outbox = outbox or Outbox()  # the first Ctrl-C closes it (session.drive)
        self.reach = Reachability(
            pool.url, window=retry.unreachable_after, clock=clock or _loop_time
        )
        self._notify = notify or (lambda message: None)
        self._next_call_id = first_call_id
        self._sleep = sleep
        self._rng = random.Random()  # backoff jitter only: never affects results
        self._known: KeyIndex = store.response_index()
        self._inflight: dict[str, asyncio.Future[ChatResult | CallFailure]] = {}
        # attempts between their rate-limit slot and their last durable write (reservation,
        # then answer or close): the durable writers the store's writer can expect
        self.writing = 0
        self.auth_failed: AuthError | None = None
        # told the server's window when a context-length error names it (context_window.py)
        self.on_context_window: Callable[[int], None] | None = None

    def estimate_prompt_tokens(self, request: ChatRequest) -> int:
        return PER_REQUEST_TOKENS + sum(
            PER_MESSAGE_TOKENS + self.count_tokens(m.get("content", "")) for m in request.messages
        )

    async def call(
        self,
        request: ChatRequest,
        *,
        stage: str,
        task: str,
        seed_key: str = "",
        est_prompt_tokens: int | None = None,
        max_attempts: int | None = None,
    ) -> ChatResult | CallFailure:
        """One logical call; ``max_attempts`` overrides the retry policy (probes use 1)."""
        key = request.key
        shared = self._inflight.get(key)
        if shared is not None:  # the same request is already on its way: share its answer
            return await asyncio.shield(shared)
        fut: asyncio.Future[ChatResult | CallFailure] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            result = await self._call(
                request, key, stage, task, seed_key, est_prompt_tokens, max_attempts
            )
        except BaseException as exc:
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()  # mark retrieved: sharers re-raise it, nobody else must
            raise
        finally:
            self._inflight.pop(key, None)
        fut.set_result(result)
        return result

    async def _call(
        self,
        request: ChatRequest,
        key: str,
        stage: str,
        task: str,
        seed_key: str,
        est_prompt_tokens: int | None,
        max_attempts: int | None = None,
    ) -> ChatResult | CallFailure:
        st = self.stats.stage(task, stage)
        call_id = self._next_call_id
        self._next_call_id += 1

        if key in self._known:
            cached = await self._from_cache(request, key, call_id, stage, task, seed_key)
            if cached is not None:
                st.done += 1
                st.cached += 1
                return cached

        self.outbox.check()  # stopping: a call that has not started does not start
        est = (
            est_prompt_tokens
            if est_prompt_tokens is not None
            else (self.estimate_prompt_tokens(request))
        )
        call = CallState(call_id, key, stage, task, seed_key, request, est, self.pool.body(request))
        call.max_attempts = max_attempts or self.retry.max_attempts
        st.started += 1
        try:
            return await self._attempts(call, st)
        except BaseException as exc:
            # the call ends here without an answer (budget, 401, Ctrl-C, the store): once it
            # had money reserved or was queued, it still gets its row, so that the calls
            # view shows every call in a terminal status (released ones: 'cancelled', $0)
            if not call.logged and (call.res_no or isinstance(exc, Interrupted)):
                status = "budget_exhausted" if isinstance(exc, BudgetExhausted) else "cancelled"
                if isinstance(exc, LLMError):
                    status = "failed"
                self._log_end(call, status, exc if isinstance(exc, LLMError) else None)
            raise

    async def _attempts(self, call: CallState, st: StageStats) -> ChatResult | CallFailure:
        request = call.request
        max_out = request.n * request.max_tokens
        common: Where = (call.key, call.stage, call.task, request.model, call.seed_key)

        async def attempt() -> ChatResult:
            with self.outbox.place() as place:  # after Ctrl-C: Interrupted, no (re)try
                alone = await self._first.turn()
                answered = False
                try:
                    outcome = await self._attempt(call, st, place, max_out, common)
                    answered = isinstance(outcome, ChatResult)
                finally:
                    self._first.done(alone, answered)
            if isinstance(outcome, ChatResult):
                return outcome
            try:  # gone or frozen for good: the run stops
                if isinstance(outcome, ConnectFailed):
                    self.reach.connect_failed(outcome)
                elif isinstance(outcome, CallTimeout):
                    self.reach.timed_out(outcome)
            except EndpointUnreachable:
                self._log_end(call, "failed", outcome)
                raise
            if isinstance(outcome, RetryableError):
                call.errors.append(_describe(outcome))
            raise outcome

        def retried(exc: RetryableError) -> None:
            st.retries += 1

        async def wait(delay: float) -> None:
            with self.outbox.place():  # Ctrl-C releases a call waiting to retry
                await self._sleep(delay)

        try:
            return await retrying(
                attempt,
                policy=self.retry,
                rng=self._rng,
                max_attempts=call.max_attempts,
                sleep=wait,
                on_retry=retried,
                counts=self.reach.counts_attempt,
            )
        except (RetryableError, FatalCallError) as exc:
            last_error: LLMError = exc
        if isinstance(last_error, ContextTooLong) and last_error.window and self.on_context_window:
            self.on_context_window(last_error.window)
        if isinstance(last_error, AuthError):
            self.auth_failed = last_error
            self._log_end(call, "failed", last_error)
            raise last_error
        self._log_end(call, "failed", last_error)
        if isinstance(last_error, ConnectFailed):
            never = self.reach.never_reached(last_error, call.attempts)
            if never is not None:  # no connection was ever made: a wrong URL or no network
                raise never
        st.failed += 1
        self.stats.note_failure(_describe(last_error, short=True))
        return CallFailure(call.key, last_error.error_class, str(last_error), last_error.status)

    async def _attempt(
        self, call: CallState, st: StageStats, place: Place, max_out: int, common: Where
    ) -> ChatResult | LLMError:
        """One attempt: its money, its rate-limit slot, its durable reservation, the request.

        Returns the answer or the attempt's error (its reservation closed either way);
        systemic errors and cancellation raise. The slot is held until the answer (or the
        close) is durable, so the reservations a kill leaves open are at most the
        concurrency: those of requests at the provider, and never of calls answered but not
        yet written.
        """
        reserve_tokens = self.margin.reserve_tokens(call.est)
        amount = self.price.cost(reserve_tokens, max_out)
        # The money first, in memory (BudgetExhausted propagates), then the rate-limit slot.
        # A request whose money does not fit yet therefore never holds a slot: it waits for
        # calls in flight to settle without taking a concurrency place or a share of the
        # requests/tokens per minute, which go to requests that can leave now (a slot held
        # through that wait would be paced for a moment long past and sent in a later one).
        reservation = await self.ledger.reserve(amount, queued=True)
        call.res_no += 1
        res_no = call.res_no
        # "queued" -> "durable" (its row may be written) -> "sent" -> "closed" (in memory)
        phase = "queued"
        writing = False
        try:
            async with self.pool.slot(reserve_tokens + max_out) as attempt:
                phase = "durable"
                self.writing += 1
                writing = True
                await self.writer.put_journaled(
                    [LedgerRow(call.call_id, res_no, self.run_id, "reserve", amount, *common)]
                )
                # a pause in the durable write must not let the requests it held go at once
                await attempt.departure()
                place.leave()  # at the provider from here: Ctrl-C no longer releases it
                self.ledger.leaving(reservation)
                call.reserved += amount
                st.reserved_pusd += amount
                call.attempts += 1
                st.in_flight += 1
                phase = "sent"
                try:
                    result = await attempt.send(call.request, body=call.body)
                except RetryableError as exc:  # raised by send only: the request had left
                    if exc.status:
                        self.reach.answered()
                    phase = "closed"
                    await self._close(call, st, reservation, res_no, exc.billed_maybe)
                    raise  # the slot sees how it ended (a timeout lowers the cap)
                except FatalCallError:
                    self.reach.answered()
                    phase = "closed"
                    await self._close(call, st, reservation, res_no, False)
                    raise
                finally:
                    st.in_flight -= 1
                phase = "closed"
                return await self._succeeded(call, st, reservation, res_no, result, common)
        except BaseException as exc:
            if phase == "closed" and isinstance(exc, RetryableError | FatalCallError):
                return exc  # the attempt's error, its reservation closed above
            # released (Ctrl-C), cancelled (a second Ctrl-C, the run failing) or a bug. Once
            # the request may be at the provider it counts as spent, as after a crash;
            # before it left nothing can be billed. (No await here: we are unwinding.)
            if phase == "sent":
                call.cost += reservation.amount
                st.reserved_pusd -= reservation.amount
                st.cost_pusd += reservation.amount
                self.ledger.consume(reservation)
                self.writer.put_journaled_nowait(
                    [close_row(call.call_id, res_no, self.run_id, "consume", reservation.amount)]
                )
            elif phase != "closed":
                self.ledger.release(reservation)
                if phase == "durable":  # its reserve row may be durable: close it the same way
                    self.writer.put_journaled_nowait(
                        [close_row(call.call_id, res_no, self.run_id, "release", 0)]
                    )
            raise
        finally:
            if writing:
                self.writing -= 1

    async def _succeeded(
        self,
        call: CallState,
        st: StageStats,
        reservation: Reservation,
        res_no: int,
        result: ChatResult,
        common: Where,
    ) -> ChatResult:
        self.reach.answered()
        cost = self.price.cost(result.prompt_tokens, result.completion_tokens, result.cached_tokens)
        call.cost += cost
        st.reserved_pusd -= reservation.amount
        st.cost_pusd += cost
        over = self.ledger.settle(reservation, cost)
        if not result.usage_estimated:
            self.margin.observe(call.est, result.prompt_tokens)
        if over:
            self._overshot(call, result, reservation.amount, cost)
        status = "content_filter" if "content_filter" in result.finish_reasons else "ok"
        call.logged = True
        # The answer is durable before the call counts as done: after a kill -9 a resume
        # re-pays only what was in flight, never an answer that already came back.
        await self.writer.put_journaled(
            [
                LedgerRow(call.call_id, res_no, self.run_id, "settle", cost, *common),
                log_row(
                    call,
                    self.run_id,
                    status,
                    result=result,
                    message=retry_history(call.errors),
                    body=False,
                ),
            ]
        )
        # the request body is most of the bytes and not needed to reuse the answer
        self.writer.put([CallRequestRow(call.call_id, call.body.decode())])
        if status == "ok":
            self._known.add(call.key)
        st.done += 1
        st.prompt_tokens += result.prompt_tokens
        st.completion_tokens += result.completion_tokens
        # the provider's prompt cache: what it served, and what that saved at the card's prices
        st.cached_input_tokens += min(result.cached_tokens, result.prompt_tokens)
        full = self.price.cost(result.prompt_tokens, result.completion_tokens)
        st.cache_saved_pusd += full - cost
        self.stats.record_call(result.prompt_tokens + result.completion_tokens)
        return _with_attempts(result, call.attempts)

    async def _close(
        self,
        call: CallState,
        st: StageStats,
        reservation: Reservation,
        res_no: int,
        billed_maybe: bool,
    ) -> None:
        """Close a reservation after a failed attempt, durably (else a crash counts it lost)."""
        if billed_maybe:
            spend = reservation.amount
            self.ledger.consume(reservation)
            event = "consume"
        else:
            spend = 0
            self.ledger.release(reservation)
            event = "release"
        call.cost += spend
        st.reserved_pusd -= reservation.amount
        st.cost_pusd += spend
        await self.writer.put_journaled(
            [close_row(call.call_id, res_no, self.run_id, event, spend)]
        )

    def _overshot(self, call: CallState, result: ChatResult, reserved: int, cost: int) -> None:
        """The provider billed more than was reserved: say so once, as it happens (the
        overshoots view lists every one; ``Ledger.overshoot_note`` sums them up at the end)."""
        if self.ledger.overshoots > 1:
            return
        self._notify(
            f"note: the provider counted {result.prompt_tokens:,} prompt tokens where "
            f"{call.est:,} were estimated ({call.stage} call): {format_usd(cost)} billed "
            f"against {format_usd(reserved)} reserved. Reservations now allow "
            f"{self.margin.factor:.2f}x the estimate"
        )

    def _log_end(self, call: CallState, status: str, error: LLMError | None) -> None:
        """The call_log row of a call that ended without an answer."""
        call.logged = True
        message = str(error) if error is not None else status.replace("_", " ")
        # the reasons of earlier attempts (the last one's is the message itself)
        earlier = call.errors[:-1] if error is not None and call.errors else call.errors
        if earlier:
            message = f"{message}; {retry_history(earlier)}"
        self.writer.put([log_row(call, self.run_id, status, error=error, message=message[:1000])])

    async def _from_cache(
        self, request: ChatRequest, key: str, call_id: int, stage: str, task: str, seed_key: str
    ) -> ChatResult | None:
        row = await self.store.answers.get(key)
        result = stored_result(row, request.model) if row is not None else None
        if row is None or result is None:
            return None  # an unreadable cache entry is simply not a hit
        self.writer.put(
            [
                cached_log_row(
                    LoggedCall(call_id, key, self.run_id, stage, task, request.model, seed_key),
                    result,
                )
            ]
        )
        return result


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


def _with_attempts(result: ChatResult, attempts: int) -> ChatResult:
    if attempts == result.attempts:
        return result
    from dataclasses import replace

    return replace(result, attempts=attempts)


def _describe(exc: LLMError, *, short: bool = False) -> str:
    """``HTTP 503: <what the server said>``, the status said once: most messages begin
    with it already (client.py's ``HTTP {status}{detail}``)."""
    where = f"HTTP {exc.status}" if exc.status else exc.error_class
    message = str(exc)
    if message == where or message.startswith((f"{where}:", f"{where} ")):
        message = message[len(where) :].lstrip(": ")
    return f"{where}: {message[: 200 if short else 160]}" if message else where
