"""Batch jobs at a provider: submit (reserve, upload, create), poll, collect, cancel.

Every step is recorded before the next one starts, so that a kill at any point leaves the
store saying what the provider may hold:

    lines + their worst case ('batch_reserve') durable  ->  upload  ->  input_file_id durable
    ->  create  ->  provider_batch_id durable ('submitted')  ->  poll ...  ->  final status
    ->  output and error files read  ->  every line settled / released + 'collected', at once

A batch caught between upload and create is looked for at the provider by its input file
(the list of batches) before anything is sent again. Each line is settled from its own
usage at the batch price; failed lines are released; lines a batch did not run (expired,
cancelled, a retryable error in the line) are released and planned again into the next
batch, up to the retry policy's attempts.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import anyio
import orjson

from ..budget import Ledger, PromptMargin, Reservation
from ..config import BatchOptions, RetryPolicy
from ..cost.batch_prices import batch_cost
from ..cost.prices import ModelPrice
from ..errors import AuthError, FatalCallError, HalugenError, RetryableError
from ..llm.batch_client import BatchClient, BatchInfo
from ..llm.calls import CallFailure
from ..llm.retrying import retrying
from ..progress import BatchRow
from ..stats import RunStats
from ..store import batch_queries
from ..store.db import Store, now
from ..store.rows import BatchRow as StoredBatch  # progress.BatchRow is the view's line
from ..store.rows import LedgerRow
from ..store.writer import WriterRow
from ..tokens import TokenCounter
from . import book
from .files import OutputLine, input_line, read_output_lenient, split_lines
from .plan import Planned

__all__ = ["BatchJobs"]

T = TypeVar("T")


@dataclass
class LiveBatch:
    record: StoredBatch  # its row in ``batches`` as this session knows it (replaced, not edited)
    reservation: Reservation
    created_at: datetime
    status: str = ""
    total: int = 0
    completed: int = 0
    failed: int = 0
    error: str = ""  # the last poll's problem, shown until the next good poll
    seen: float = field(default_factory=time.monotonic)


class BatchJobs:
    """The live batches of one run, and what sends, polls and settles them."""

    def __init__(
        self,
        *,
        store: Store,
        run_id: str,
        client: BatchClient,
        ledger: Ledger,
        price: ModelPrice,
        counter: TokenCounter,
        stats: RunStats,
        retry: RetryPolicy,
        base_url: str,
        failures: dict[str, CallFailure],
        attempts: dict[str, int],
        sleep: Callable[[float], Awaitable[Any]] = anyio.sleep,
    ) -> None:
        self.store = store
        self.writer = store.writer
        self.run_id = run_id
        self.client = client
        self.ledger = ledger
        self.price = price
        self.counter = counter
        self.stats = stats
        self.retry = retry
        self.base_url = base_url
        self.failures = failures  # request key -> failure known for good (this session)
        self.attempts = attempts  # request key -> batches it was in (this session)
        self.margin = PromptMargin()
        # the margin over our prompt estimate follows what the provider reported before
        for est, reported in batch_queries.prompt_reports(store, run_id):
            self.margin.observe(est, reported)
        self.live: dict[str, LiveBatch] = {}
        self.budget_short = False  # a planned request did not fit the budget
        self.submitted_batches = 0
        self.submitted_requests = 0
        self.settled_pusd = 0
        self._sleep = sleep
        self._rng = random.Random()  # backoff jitter only
        self._next_call_id = store.next_call_id()

    # -- money -------------------------------------------------------------------------

    def line_reserve(self, planned: Planned) -> int:
        """Worst case of one line: prompt estimate with the margin, every output token."""
        tokens = self.margin.reserve_tokens(planned.est_prompt_tokens)
        return batch_cost(self.price, self.price.cost(tokens, planned.max_output_tokens))

    # -- resume --------------------------------------------------------------------------

    async def resume(self) -> None:
        """Take over the run's batches that may still complete (an earlier session's)."""
        for record, created_at in book.live_batches(self.store, self.run_id):
            if record.batch_id in self.live:
                continue
            amount = book.open_reserved(self.store, record.batch_id)
            self.ledger.reserved += amount  # already durable: counted, never re-reserved
            live = LiveBatch(record, Reservation(amount), created_at, status=record.status or "")
            live.total = record.requests
            self.live[record.batch_id] = live
            for line in book.lines_of(self.store, record.batch_id):
                self.stats.stage(line.task, line.stage).in_flight += 1
            if record.state == "submitting":
                await self._recover(live)

    async def _recover(self, live: LiveBatch) -> None:
        """A batch that was being sent when the last session stopped: find out its fate."""
        record = live.record
        if record.input_file_id is None:  # never uploaded: nothing can be billed
            await self._abandon(live, "the session stopped before its file was uploaded")
            return
        try:
            found = await self._find(record.input_file_id)
        except RetryableError as exc:
            live.error = str(exc)
            return  # unknown yet: keep it, look again at the next poll
        except FatalCallError as exc:
            if isinstance(exc, AuthError):
                raise
            await self._lose(live, f"the provider cannot list batches ({exc})")
            return
        if found is None:
            await self._abandon(live, "the provider never created it")
            return
        await self._submitted(live, found)

    async def _find(self, input_file_id: str) -> BatchInfo | None:
        """The provider's batch made from ``input_file_id``, if any (the list, newest first)."""
        after: str | None = None
        for _ in range(100):
            page, more = await self._retrying(partial(self.client.list, after=after))
            for info in page:
                if info.input_file_id == input_file_id:
                    return info
            if not more or not page:
                return None
            after = page[-1].id
        return None

    # -- submit ----------------------------------------------------------------------------

    async def submit(
        self, planned: Iterable[Planned], opts: BatchOptions, *, stop: Callable[[], bool]
    ) -> int:
        """Send the planned requests in batches within the limits and the budget."""
        # requests a batch did not run (expired, cancelled, failed lines) go first this time
        ordered = sorted(planned, key=lambda p: -self.attempts.get(p.key, 0))
        lines = ((p, input_line(p.key, p.body)) for p in ordered)
        sent = 0
        for group in split_lines(lines, max_requests=opts.max_requests, max_bytes=opts.max_bytes):
            if stop():
                break
            if len(group[0][1]) > opts.max_bytes:
                p = group[0][0]
                self.failures[p.key] = CallFailure(
                    p.key,
                    "FatalCallError",
                    f"the request is larger than a batch file may be ({opts.max_bytes} bytes)",
                )
                continue
            amounts = [self.line_reserve(p) for p, _ in group]
            fit = _fitting(amounts, self.ledger.remaining)
            if fit:
                await self._submit_group(group[:fit], amounts[:fit])
                sent += fit
            if fit < len(group):
                self.budget_short = True
                break
        return sent

    async def _submit_group(self, group: list[tuple[Planned, bytes]], amounts: list[int]) -> None:
        batch_id = f"hb-{uuid.uuid4().hex[:12]}"
        total = sum(amounts)
        data = b"".join(line for _, line in group)
        record = book.batch_row(
            batch_id,
            self.run_id,
            kind="api",
            state="submitting",
            requests=len(group),
            reserved_pusd=total,
            size=len(data),
            base_url=self.base_url,
        )
        rows: list[WriterRow] = [record]
        for n, ((p, _), amount) in enumerate(zip(group, amounts, strict=True), start=1):
            call_id = self._next_call_id
            self._next_call_id += 1
            rows.append(book.line_row(batch_id, self.run_id, n, call_id, p, amount))
            rows.append(
                LedgerRow(call_id, 1, self.run_id, "batch_reserve", amount, p.key, p.stage,
                          p.task, p.model, p.seed_key)
            )  # fmt: skip
        reservation = await self.ledger.reserve(total)  # fits: checked by the caller
        try:
            # the worst case of the whole batch is durable before its file leaves
            await self.writer.put_durable(rows)
        except BaseException:
            self.ledger.release(reservation)
            raise
        live = self.live[batch_id] = LiveBatch(record, reservation, now(), status="uploading")
        live.total = len(group)
        for p, _ in group:
            self.stats.stage(p.task, p.stage).in_flight += 1
            self.stats.stage(p.task, p.stage).started += 1
        try:
            file_id = await self._retrying(
                lambda: self.client.upload(data, filename=f"{batch_id}.jsonl")
            )
        except HalugenError as exc:
            await self._abandon(live, f"upload failed: {exc}")
            raise _systemic(exc) from None
        await self.writer.put_durable([book.update_row(batch_id, input_file_id=file_id)])
        live.record = live.record._replace(input_file_id=file_id)
        info = await self._create(live)
        await self._submitted(live, info)
        self.submitted_batches += 1
        self.submitted_requests += len(group)

    async def _create(self, live: LiveBatch) -> BatchInfo:
        file_id = live.record.input_file_id
        assert file_id is not None
        metadata = {"halugen_batch": live.record.batch_id, "halugen_run": self.run_id}
        tried = False

        async def create() -> BatchInfo:
            nonlocal tried
            if tried:
                # the last attempt may have created it all the same: never create a batch twice
                try:
                    found = await self._find(file_id)
                except HalugenError:
                    found = None
                if found is not None:
                    return found
            tried = True
            return await self.client.create(file_id, metadata=metadata)

        try:
            return await self._retrying(create)
        except RetryableError as exc:
            await self._abandon(live, f"creating the batch failed: {exc}")
            raise _systemic(exc) from None
        except FatalCallError as exc:
            await self._abandon(live, f"the provider refused the batch: {exc}")
            raise _systemic(exc) from None

    async def _submitted(self, live: LiveBatch, info: BatchInfo) -> None:
        record = live.record = live.record._replace(state="submitted", provider_batch_id=info.id)
        await self.writer.put_durable(
            [
                book.update_row(
                    record.batch_id,
                    state="submitted",
                    provider_batch_id=info.id,
                    status=info.status,
                    input_file_id=info.input_file_id or record.input_file_id,
                )
            ]
        )
        self._seen(live, info)

    # -- poll and collect ------------------------------------------------------------------

    async def poll(self) -> int:
        """Look at every live batch once; collect those that ended. Returns how many."""
        collected = 0
        for live in list(self.live.values()):
            record = live.record
            if record.state == "submitting":
                await self._recover(live)
                continue
            assert record.provider_batch_id is not None
            try:
                info = await self.client.get(record.provider_batch_id)
            except RetryableError as exc:
                live.error = str(exc)
                continue
            except FatalCallError as exc:
                if isinstance(exc, AuthError):
                    raise
                raise HalugenError(
                    f"batch {record.provider_batch_id} cannot be read ({exc}); use the "
                    f"--base-url and key it was sent with"
                ) from None
            seen_before = (live.status, live.completed, live.failed)
            self._seen(live, info)
            if info.final:
                await self._collect(live, info)
                collected += 1
            elif (info.status, info.completed, info.failed) != seen_before:
                # every change of a batch row goes through the durable lane: the two lanes are
                # two connections, and two transactions updating one row conflict
                await self.writer.put_durable(
                    [
                        book.update_row(
                            record.batch_id,
                            status=info.status,
                            completed=info.completed,
                            failed=info.failed,
                        )
                    ]
                )
        return collected

    def _seen(self, live: LiveBatch, info: BatchInfo) -> None:
        live.status = info.status
        live.record = live.record._replace(status=info.status)
        live.total = info.total or live.record.requests
        live.completed = info.completed
        live.failed = info.failed
        live.error = ""

    async def _collect(self, live: LiveBatch, info: BatchInfo) -> None:
        outputs: dict[str, OutputLine] = {}
        unreadable = 0
        for file_id in (info.output_file_id, info.error_file_id):
            if file_id:
                data = await self._retrying(partial(self.client.content, file_id))
                readable, bad = read_output_lenient(data, f"file {file_id}")
                unreadable += bad
                outputs.update((out.custom_id, out) for out in readable)
        record = live.record
        rows: list[WriterRow] = []
        spent = 0
        for line in book.lines_of(self.store, record.batch_id):
            out = outputs.get(line.custom_id)
            if out is None and unreadable:
                # its answer may be the line we could not read: billed, so spent in full
                rows.append(book.ledger_row(line, "consume", line.reserved_pusd))
                spent += line.reserved_pusd
                self.stats.stage(line.task, line.stage).in_flight -= 1
                continue
            rows_for_line, cost = self._settle_line(line, out, info)
            rows.extend(rows_for_line)
            spent += cost
        rows.append(
            book.update_row(
                record.batch_id,
                state="collected",
                status=info.status,
                output_file_id=info.output_file_id,
                error_file_id=info.error_file_id,
                completed=info.completed,
                failed=info.failed,
                detail="; ".join(info.errors)[:1000] or None,
            )
        )
        # every line of the batch settles in one transaction with its new state
        await self.writer.put_durable(rows)
        self.ledger.settle(live.reservation, spent)
        self.settled_pusd += spent
        del self.live[record.batch_id]
        if info.status == "failed":
            errors = "; ".join(info.errors[:3]) or "no reason given"
            raise HalugenError(
                f"the provider refused batch {info.id} ({errors}); nothing of it was billed"
            )

    def _settle_line(
        self, line: book.LineRecord, out: OutputLine | None, info: BatchInfo
    ) -> tuple[list[WriterRow], int]:
        key = line.custom_id
        attempts = self.attempts[key] = self.attempts.get(key, 0) + 1
        st = self.stats.stage(line.task, line.stage)
        st.in_flight = max(0, st.in_flight - 1)
        if out is not None and out.completion is not None:
            messages = orjson.loads(line.request_json).get("messages") or []
            result = out.completion.result(
                model=line.model, messages=messages, count_tokens=self.counter.count
            )
            cost = batch_cost(
                self.price,
                self.price.cost(
                    result.prompt_tokens, result.completion_tokens, result.cached_tokens
                ),
            )
            status = "content_filter" if "content_filter" in result.finish_reasons else "ok"
            if not result.usage_estimated:
                self.margin.observe(line.est_prompt_tokens, result.prompt_tokens)
            st.done += 1
            st.prompt_tokens += result.prompt_tokens
            st.completion_tokens += result.completion_tokens
            st.cost_pusd += cost
            # the provider's prompt cache in batches (OpenAI: GPT-5 family and later)
            st.cached_input_tokens += min(result.cached_tokens, result.prompt_tokens)
            full = self.price.cost(result.prompt_tokens, result.completion_tokens)
            st.cache_saved_pusd += batch_cost(self.price, full) - cost
            self.stats.record_call(result.prompt_tokens + result.completion_tokens)
            return [
                book.ledger_row(line, "settle", cost),
                book.line_log_row(
                    line,
                    status=status,
                    cost=cost,
                    attempts=attempts,
                    answer=result,
                ),
            ], cost
        rows: list[WriterRow] = [book.ledger_row(line, "release", 0)]
        fatal = out is not None and not out.retryable
        if fatal or attempts >= self.retry.max_attempts:
            message = (
                out.error if out is not None else f"the batch ended {info.status} before it ran"
            )
            error_class = book.error_class(out) if out is not None else "RetryableError"
            status_code = out.status_code if out is not None else 0
            self.failures[key] = CallFailure(key, error_class, message, status_code)
            st.failed += 1
            rows.append(
                book.line_log_row(
                    line,
                    status="failed",
                    cost=0,
                    attempts=attempts,
                    http_status=status_code or None,
                    error_class=error_class,
                    error=message[:500],
                )
            )
        return rows, 0

    # -- stop ------------------------------------------------------------------------------

    async def cancel_all(self) -> list[str]:
        """Ask the provider to cancel every live batch; returns problems, one line each."""
        problems = []
        for live in list(self.live.values()):
            pid = live.record.provider_batch_id
            if pid is None or live.record.state != "submitted":
                continue
            try:
                info = await self.client.cancel(pid)
            except HalugenError as exc:
                problems.append(f"batch {pid}: {exc}")
                continue
            self._seen(live, info)
            await self.writer.put_durable(
                [book.update_row(live.record.batch_id, status=info.status)]
            )
        return problems

    async def _abandon(self, live: LiveBatch, why: str) -> None:
        """The provider never got the batch: release every line."""
        await self._close_lines(live, "abandoned", why, lost=False)

    async def _lose(self, live: LiveBatch, why: str) -> None:
        """The provider may have run it, and we cannot know: every line counts as spent."""
        await self._close_lines(live, "lost", why, lost=True)

    async def _close_lines(self, live: LiveBatch, state: str, why: str, *, lost: bool) -> None:
        rows: list[WriterRow] = []
        spent = 0
        for line in book.lines_of(self.store, live.record.batch_id):
            st = self.stats.stage(line.task, line.stage)
            st.in_flight = max(0, st.in_flight - 1)
            if lost:
                rows.append(book.ledger_row(line, "lost", line.reserved_pusd))
                rows.append(
                    book.line_log_row(
                        line,
                        status="lost",
                        cost=line.reserved_pusd,
                        attempts=1,
                        http_status=None,
                        error_class="BatchLost",
                        error=why[:500],
                    )
                )
                spent += line.reserved_pusd
            else:
                rows.append(book.ledger_row(line, "release", 0))
        rows.append(book.update_row(live.record.batch_id, state=state, detail=why[:1000]))
        await self.writer.put_durable(rows)
        self.ledger.settle(live.reservation, spent)
        self.live.pop(live.record.batch_id, None)

    # -- view ------------------------------------------------------------------------------

    def rows(self) -> list[BatchRow]:
        out = []
        stamp = now()
        for live in self.live.values():
            elapsed = (stamp - live.created_at).total_seconds()
            status = live.status or live.record.state
            if live.error:
                status += " (poll failed)"
            out.append(
                BatchRow(
                    live.record.provider_batch_id or live.record.batch_id,
                    status,
                    live.completed,
                    live.failed,
                    live.total,
                    max(0.0, elapsed),
                )
            )
        return out

    # -- helpers ---------------------------------------------------------------------------

    async def _retrying(self, step: Callable[[], Awaitable[T]]) -> T:
        return await retrying(step, policy=self.retry, rng=self._rng, sleep=self._sleep)


def _fitting(amounts: list[int], remaining: int | None) -> int:
    """How many of ``amounts``, from the first, fit in ``remaining`` (None: all)."""
    if remaining is None:
        return len(amounts)
    total = 0
    for n, amount in enumerate(amounts):
        total += amount
        if total > remaining:
            return n
    return len(amounts)


def _systemic(exc: HalugenError) -> HalugenError:
    """A failure of the Batch API itself, said once, with what to do."""
    if isinstance(exc, AuthError):
        return exc
    status = getattr(exc, "status", 0)
    if status in (404, 405):
        return HalugenError(
            f"the endpoint does not offer the Batch API ({exc}); run without --batch, or "
            f"write the requests to a file with 'halugen batch export' for your own engine"
        )
    return HalugenError(f"the Batch API failed: {exc}")
