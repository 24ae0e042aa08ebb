"""Batch mode, stage after stage: plan, send, wait, collect, plan again.

    planning pass (a session of the kind's own pipeline, opened by the kind's ``OpenPass``
    with a ``PlanForBatch`` call mode: calls answered from the store or planned)
        -> nothing planned and nothing at the provider: that pass wrote everything, done
        -> else: send the planned requests in batches (limits, budget), wait until one
           ends, settle its lines into the store, and plan again

The kind's entry (``generate``, ``evaluate``, ``preselect``) chooses batch mode and hands
``run_in_batches`` its session factory; nothing here knows the kinds.

Sampling requests come first; once their answers are in the store, the next pass plans the
filter requests of the seeds they completed, and so on. Batches are polled every
``BatchOptions.poll_seconds``; the live view shows them beside the budget. Ctrl-C asks
whether to leave the batches running (the default; the next run collects them) or cancel
them; a kill leaves them running, and the same command picks them up.
"""

from __future__ import annotations

import dataclasses
import io
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

import anyio
from rich.console import Console

from ..budget import Ledger
from ..config import BatchOptions, RunConfig, Timeouts
from ..cost.prices import ModelPrice, format_usd
from ..endings import closing_line
from ..errors import EXIT_CODES, HalugenError
from ..llm.batch_client import BatchClient
from ..llm.calls import CallFailure
from ..llm.limiter import RateLimiter
from ..llm.transport import AiohttpTransport, Transport
from ..progress import ProgressView
from ..session import OnRun
from ..signals import on_signals
from ..stats import RunStats
from ..store.db import open_store
from ..tokens import get_counter
from .jobs import BatchJobs
from .modes import OpenPass, PlanForBatch
from .plan import PassPlan

__all__ = ["ask_on_interrupt", "pass_config", "run_in_batches"]


class KindOutcome(Protocol):
    """What every kind's outcome is: a dataclass with these fields (and maybe spent_pusd)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @property
    def run_id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def message(self) -> str: ...

    @property
    def exit_code(self) -> int: ...

    @property
    def notes(self) -> tuple[str, ...]: ...


Out = TypeVar("Out", bound=KindOutcome)  # the kind's outcome


@dataclass
class _Session:
    """What batch mode did in this session, across its passes."""

    failures: dict[str, CallFailure] = field(default_factory=dict)
    reported: set[str] = field(default_factory=set)
    attempts: dict[str, int] = field(default_factory=dict)
    stats: RunStats = field(default_factory=RunStats)  # the batches' lines, for the view
    pass_stats: RunStats = field(default_factory=RunStats)  # what the passes did, together
    batches: int = 0
    requests: int = 0
    settled_pusd: int = 0


@dataclass(frozen=True)
class _Stopped:
    """Why a batch session stops before its work is done, with the figures its closing line
    says (``_stop``)."""

    status: str  # budget_exhausted | interrupted | failed
    detail: str = ""  # failed: what failed
    spent: int = 0
    reserved: int = 0
    budget: int | None = None
    waiting: int = 0  # budget_exhausted: requests that wait for money
    left: int = 0  # interrupted: batches still running at the provider
    cancelled: bool = False  # interrupted: they were asked to cancel


def pass_config(cfg: RunConfig, run_id: str) -> RunConfig:
    """The settings of one planning pass: after the first, the run the first one opened."""
    if run_id:  # later passes resume that run (never --fresh again)
        return dataclasses.replace(cfg, progress=False, run_id=run_id, fresh=False)
    return dataclasses.replace(cfg, progress=False)


def ask_on_interrupt(live: int) -> str:
    """After Ctrl-C: 'leave' (the default) or 'cancel'; asked only on a terminal."""
    if not sys.stdin.isatty():
        return "leave"
    noun = "batch is" if live == 1 else "batches are"
    answer = input(
        f"\n{live} {noun} still running at the provider. Leave them running and use their "
        f"answers the next time you run this command [L], or cancel them [c]? "
    )
    return "cancel" if answer.strip().lower() in ("c", "cancel") else "leave"


async def run_in_batches(
    open_pass: OpenPass[Out],
    cfg: RunConfig,
    price: ModelPrice,
    *,
    transport: Transport | None = None,
    console: Console | None = None,
    on_run: OnRun | None = None,
) -> Out:
    """Run a kind's pipeline in batch mode (``cfg.batch``), one planning pass after another:
    each pass is the session ``open_pass(pass settings, PlanForBatch(plan), transport=,
    console=, on_run=)``. ``cfg``'s model and its ``price`` are settled by the caller."""
    opts = cfg.batch
    assert opts is not None
    console = console or Console(stderr=True)
    own_transport = transport is None
    transport = transport or AiohttpTransport()
    state = _Session()
    try:
        first = True
        run_id = ""  # known once the first pass has opened the run
        while True:
            plan = PassPlan(
                failures=state.failures,
                reported=state.reported,
                stats=state.pass_stats,
                run_id=run_id,
            )
            outcome = await open_pass(
                pass_config(cfg, run_id),
                PlanForBatch(plan),
                transport=transport,
                console=_quiet(),
                on_run=on_run if first else None,
            )
            first = False
            run_id = outcome.run_id or run_id
            state.reported.update(
                k for k, seed in plan.returned.items() if seed not in plan.deferred_seeds
            )
            if outcome.status in ("failed", "interrupted", "input_error"):
                return _finish(outcome, state)
            if plan.requests or plan.waiting:
                console.print(
                    f"[halugen] batch planning: {len(plan.requests):,} request(s) to send, "
                    f"{plan.waiting:,} waiting for batches already sent, {plan.answered:,} "
                    f"answered from the store",
                    markup=False,
                    highlight=False,
                )
            try:
                step = await _send_and_wait(
                    cfg, opts, price, plan, outcome, transport, console, state
                )
            except HalugenError as exc:
                step = _Stopped("failed", detail=f"{_what(outcome)} failed: {exc}")
            if step == "nothing":
                return _finish(outcome, state)
            if isinstance(step, _Stopped):
                return _stop(cfg, outcome, state, step)
    finally:
        if own_transport:
            await transport.aclose()


def _quiet() -> Console:
    """The console of a planning pass: its figures are not the session's (one line after)."""
    return Console(file=io.StringIO(), stderr=False)


async def _send_and_wait(
    cfg: RunConfig,
    opts: BatchOptions,
    price: ModelPrice,
    plan: PassPlan,
    outcome: KindOutcome,
    transport: Transport,
    console: Console,
    state: _Session,
) -> str | _Stopped:
    """Send what was planned, then poll until a batch is collected.

    Returns "collected" (plan again), "nothing" (no batch and nothing to send: done), or
    why it stops: budget_exhausted or interrupted.
    """
    run_id = outcome.run_id
    store = open_store(cfg.db)
    try:
        run = store.get_run(run_id)
        assert run is not None
        timeouts = Timeouts(
            connect=cfg.timeouts.connect,
            read=max(cfg.timeouts.read, 600.0),  # batch files are large
            total=max(cfg.timeouts.total, 3600.0),
        )
        client = BatchClient(
            base_url=cfg.base_url, api_key=cfg.api_key, transport=transport, timeouts=timeouts
        )
        ledger = Ledger(run["budget_pusd"], spent=store.spent(run_id))
        counter = get_counter(price.tokenizer)
        jobs = BatchJobs(
            store=store,
            run_id=run_id,
            client=client,
            ledger=ledger,
            price=price,
            counter=counter,
            stats=state.stats,
            retry=cfg.retry,
            base_url=cfg.base_url,
            failures=state.failures,
            attempts=state.attempts,
        )
        state.stats.run_id = run_id
        # the view's seed counters are the passes' (what they finished); its stage rows are
        # the batches' lines
        for name in ("seeds_total", "sampled", "rejected", "failed", "bad_records", "words"):
            setattr(state.stats, name, getattr(state.pass_stats, name))
        view: ProgressView | None = None
        presses = 0
        scope = anyio.CancelScope()

        def on_sigint() -> None:
            nonlocal presses
            presses += 1
            if presses > 1:
                scope.cancel()  # a second Ctrl-C: stop at once, batches stay running

        failures_before = len(state.failures)
        try:
            with on_signals(on_sigint), scope:
                await jobs.resume()
                if plan.requests:
                    await jobs.submit(plan.requests.values(), opts, stop=lambda: presses > 0)
                # the view: the batches now at the provider, beside the budget
                if cfg.progress:
                    view = ProgressView(
                        stats=state.stats,
                        ledger=ledger,
                        limiter_snapshot=RateLimiter(cfg.rate).snapshot,
                        console=console,
                        batches=jobs.rows,
                    )
                if not jobs.live and not presses:
                    if jobs.budget_short:
                        ledger.exhausted = True
                        return _Stopped(
                            "budget_exhausted",
                            spent=ledger.spent,
                            budget=ledger.budget,
                            waiting=len(plan.requests),
                        )
                    # requests waited for batches that turned out never to have been made,
                    # or failed for good (too large for any batch): the next pass sees that
                    changed = plan.waiting or len(state.failures) > failures_before
                    return "collected" if changed else "nothing"
                if jobs.live:
                    if view is not None:
                        view.start()
                    store.update_run(
                        run_id,
                        status="running",
                        status_detail=f"{len(jobs.live)} batch(es) running",
                    )
                    while True:
                        if await jobs.poll():
                            return "collected"
                        if presses:
                            break
                        await _wait(opts.poll_seconds, lambda: presses > 0, view)
                        if presses:
                            break
        finally:
            if view is not None:
                view.stop()
            state.batches += jobs.submitted_batches
            state.requests += jobs.submitted_requests
            state.settled_pusd += jobs.settled_pusd
            store.writer.flush_blocking()
        # Ctrl-C while batches run: leave them (default) or cancel them
        left = len(jobs.live)
        cancelled = bool(left) and presses == 1 and ask_on_interrupt(left) == "cancel"
        if cancelled:
            problems = await jobs.cancel_all()
            store.writer.flush_blocking()
            for problem in problems:
                console.print(f"note: {problem}", markup=False, highlight=False)
        return _Stopped(
            "interrupted",
            spent=ledger.spent,
            reserved=ledger.reserved,
            left=left,
            cancelled=cancelled,
        )
    finally:
        store.close()


async def _wait(seconds: float, stop: Callable[[], bool], view: ProgressView | None) -> None:
    """Sleep ``seconds`` (ticking the view), or less when ``stop()`` becomes true."""
    deadline = time.monotonic() + seconds
    while True:  # at least one turn of the event loop, so that Ctrl-C is seen
        await anyio.sleep(max(0.0, min(0.25, deadline - time.monotonic())))
        if view is not None:
            view.tick()
        if stop() or time.monotonic() >= deadline:
            return


# -- outcomes --------------------------------------------------------------------------------


def _what(outcome: KindOutcome) -> str:
    return f"run {outcome.run_id}"


def _notes(outcome: KindOutcome, state: _Session) -> tuple[str, ...]:
    notes = tuple(outcome.notes)
    if state.batches:
        notes += (
            f"batch mode: {state.requests:,} request(s) in {state.batches} batch(es) this "
            f"session, {format_usd(state.settled_pusd)} settled at the batch price",
        )
    return notes


def _finish(outcome: Out, state: _Session) -> Out:
    return dataclasses.replace(outcome, notes=_notes(outcome, state))


def _stop(cfg: RunConfig, outcome: Out, state: _Session, stopped: _Stopped) -> Out:
    """The outcome of a batch session that stopped (budget, Ctrl-C, a Batch API failure):
    its closing line, recorded on the run."""
    status = stopped.status
    message = _closing(outcome, stopped)
    run_id = outcome.run_id
    with open_store(cfg.db) as store:
        store.update_run(run_id, status=status, status_detail=message[:1000])
        spent = store.spent(run_id)
    changes: dict[str, Any] = {
        "status": status,
        "message": message,
        "exit_code": EXIT_CODES[status],
    }
    if "spent_pusd" in outcome.__dataclass_fields__:
        changes["spent_pusd"] = spent
    changes["notes"] = _notes(outcome, state)
    return dataclasses.replace(outcome, **changes)


def _closing(outcome: KindOutcome, stopped: _Stopped) -> str:
    """The closing line of a batch session that stopped."""
    if stopped.status == "failed":
        return stopped.detail
    spent = format_usd(stopped.spent)
    if stopped.status == "budget_exhausted":
        return closing_line(
            "budget_exhausted",
            what=_what(outcome),
            budget=format_usd(stopped.budget),
            summary=f"{stopped.waiting:,} request(s) wait for money; spent {spent}",
        )
    noun = "batch" if stopped.left == 1 else "batches"
    parts = {"what": _what(outcome), "summary": f"spent {spent}"}
    if stopped.cancelled:
        parts.update(
            detail=f"{stopped.left} {noun} asked to cancel",
            summary=f"spent {spent} so far",
            next_step="Run the same command again to use what they finished and continue",
        )
    elif stopped.left:
        parts.update(
            detail=f"{stopped.left} {noun} left running at the provider",
            summary=f"spent {spent} so far, {format_usd(stopped.reserved)} reserved",
            next_step="Run the same command again to use their answers and continue",
        )
    return closing_line("interrupted", **parts)
