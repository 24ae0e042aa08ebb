"""What every kind of run shares: opening the run, the money and call machinery, driving a
pipeline under the progress view and Ctrl-C, and turning the end into a status.

Generation (engine.py), recognition experiments (evaluate/) and pre-selection
(preselect/) each build their own pipeline and hand it to ``drive``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from ._groups import most_serious
from .budget import Ledger
from .config import RunConfig
from .cost.prices import ModelPrice, usd_to_pusd
from .cost.run_price import RunPrice
from .errors import BudgetExhausted, HalugenError, RunStopping
from .llm.calls import CallRunner
from .llm.capabilities import Capabilities
from .llm.endpoint import EndpointInfo, describe_endpoint, is_openai, pick_model
from .llm.outbox import Outbox
from .llm.pool import EndpointPool
from .llm.strategy import CallMode, CallStrategy, StageWriter
from .llm.transport import AiohttpTransport, Transport
from .signals import on_signals
from .stats import RunStats
from .store.db import Store, open_store
from .store.run_open import OnOpen, mark_lost_reservations, open_run
from .tokens import TokenCounter, get_counter

__all__ = [
    "CallSession",
    "OnRun",
    "RunStart",
    "StopFlags",
    "call_session",
    "drive",
    "prepare_endpoint",
    "resolve_model",
]


@dataclass(frozen=True)
class RunStart:
    """What a session says as it opens (or resumes) its run, to its ``OnRun``."""

    run_id: str
    resumed: bool
    model: str  # the model it calls (known only once the endpoint was asked)
    tasks: tuple[str, ...]
    budget_pusd: int | None
    db: Path


# told when a session opens its run
OnRun = Callable[[RunStart], None]
# told when a session has made its run or found the one to resume, before that one is marked
# running: (store, run id, resumed?); raising refuses the session (seeds/stamps.py)

STOP_WAIT_S = 30.0  # after the first Ctrl-C, how long requests at the provider may take
PACE_RECORD_S = 10.0  # how often the run records what binds its pace, for `halugen status`


@dataclass
class StopFlags:
    """Why a pipeline stops admitting work; stages check these, nothing is killed."""

    budget_exhausted: bool = False
    interrupted: bool = False
    input_error: BaseException | None = None  # the input broke off; what was read finishes

    @property
    def stop_admitting(self) -> bool:
        return self.budget_exhausted or self.interrupted

    def stopped_by(self, stop: RunStopping) -> None:
        """A call was not made because the run is stopping (stages catch ``RunStopping``
        and go on, so the pipeline drains): stop admitting work for the same reason."""
        if isinstance(stop, BudgetExhausted):
            self.budget_exhausted = True
        else:
            self.interrupted = True


@dataclass
class CallSession:
    """An open run: its store, money, endpoints (each with its limits) and how calls are made.

    ``runner`` sends calls now (probes use it in every mode); ``calls`` is the strategy the
    pipeline calls through, given by the call mode the session's opener chose (sending now,
    or batch mode's planning); ``writer`` is where the stages write, through that
    strategy's row filter; ``capabilities`` settles what the endpoint accepts before the
    requests that need it.
    """

    store: Store
    run_id: str
    resumed: bool
    ledger: Ledger
    pool: EndpointPool
    runner: CallRunner
    calls: CallStrategy
    writer: StageWriter
    capabilities: Capabilities
    stats: RunStats
    price: ModelPrice
    counter: TokenCounter
    flags: StopFlags = field(default_factory=StopFlags)
    notes: list[str] = field(default_factory=list)
    # where calls wait before they leave; the first Ctrl-C closes it (``drive``)
    outbox: Outbox = field(default_factory=Outbox)


async def prepare_endpoint(
    cfg: RunConfig, transport: Transport
) -> tuple[RunConfig, EndpointInfo, list[str]]:
    """Ask the server what it serves; settle the model before the run's identity is made.

    Every command that needs the model asks this way. OpenAI's API is not asked: its
    default model is known and its model list gives no windows.
    """
    info = (
        EndpointInfo()
        if is_openai(cfg.base_url)
        else await describe_endpoint(transport, cfg.base_url, cfg.api_key)
    )
    model, note = pick_model(cfg.model, cfg.base_url, info)
    notes = [note] if note else []
    return dataclasses.replace(cfg, model=model), info, notes


async def resolve_model(cfg: RunConfig, transport: Transport | None = None) -> RunConfig:
    """``cfg`` with its model settled (see ``prepare_endpoint``); the note is logged."""
    if cfg.model:
        return cfg
    probe = transport or AiohttpTransport()
    try:
        cfg, _, notes = await prepare_endpoint(cfg, probe)
    finally:
        if transport is None:
            await probe.aclose()
    for note in notes:
        logging.getLogger("halugen").warning(note)
    return cfg


def _say(message: str) -> None:
    """A one-line message while a run goes (an endpoint out of rotation); above a live view."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(message, markup=False)


@contextlib.asynccontextmanager
async def call_session(
    cfg: RunConfig,
    *,
    kind: str,
    identity: dict[str, Any],
    tasks: str,
    calls: CallMode,
    run_price: RunPrice,
    transport: Transport | None = None,
    on_run: OnRun | None = None,
    modes: Mapping[str, str] | None = None,
    on_open: OnOpen | None = None,
) -> AsyncIterator[CallSession]:
    """Open (or resume) the run of ``kind`` whose settings are ``identity``.

    ``calls``: how the pipeline's calls are made, as the caller chose (llm/strategy.py).
    ``run_price``: the run's price, settled by the caller before the session (cost/run_price.py).
    ``modes``: how to ask about each capability (llm/capabilities.py), auto | on | off.
    ``on_open``: what a generation run does with its run before it starts (``OnOpen``):
    record the stamps of the files it reads, or check them on resume (``seeds.stamps``).
    """
    price, notes = run_price.price, list(run_price.notes)
    budget = usd_to_pusd(cfg.budget_usd) if cfg.budget_usd is not None else None
    store = open_store(cfg.db)
    owned_transport = transport is None
    transport = transport or AiohttpTransport()
    try:
        counter = get_counter(price.tokenizer)
        run_id, resumed = open_run(
            store,
            run_id=cfg.run_id,
            fresh=cfg.fresh,
            kind=kind,
            identity=identity,
            tasks=tasks,
            model=cfg.model,
            endpoint=cfg.endpoint_label,
            price=price.as_record(),
            budget=budget,
            on_open=on_open,
        )
        if on_run is not None:
            on_run(RunStart(run_id, resumed, cfg.model, tuple(tasks.split(",")), budget, cfg.db))
        lost = mark_lost_reservations(store, run_id)
        if lost:
            notes.append(
                f"{lost} request(s) at the provider when the last session stopped were "
                f"counted as spent (the provider may have billed them)"
            )
        run = store.get_run(run_id)
        assert run is not None
        ledger = Ledger(
            run["budget_pusd"], spent=store.spent(run_id), in_flight_share=cfg.in_flight_share
        )
        # a planning pass counts into the batch session's counters, so the last reports all
        stats = calls.stats if calls.stats is not None else RunStats()
        stats.run_id = run_id
        fleet = cfg.fleet()
        pool = EndpointPool(
            fleet,
            transport=transport,
            timeouts=cfg.timeouts,
            count_tokens=counter.count,
            notify=_say,
        )
        if calls.sends:  # a server that says how many requests it serves gets no more
            await pool.ask_slots()
        outbox = Outbox()
        runner = CallRunner(
            run_id=run_id,
            pool=pool,
            ledger=ledger,
            price=price,
            counter=counter,
            store=store,
            stats=stats,
            retry=cfg.retry,
            first_call_id=store.next_call_id(),
            outbox=outbox,
            notify=_say,
        )
        # a call writes durably before its request leaves and when its answer is back: the
        # writer groups their commits until every such call waits (store/writer.py)
        store.writer.expected_writers = lambda: runner.writing
        store.writer.more_coming = pool.paced_waiters
        strategy: CallStrategy = calls.strategy(runner, store=store, run_id=run_id, stats=stats)
        capabilities = Capabilities(
            store=store,
            run_id=run_id,
            endpoint=pool.url,
            model=cfg.model,
            modes=modes or {},
            runner=runner if calls.probes else None,
            task=tasks.split(",")[0],
        )
        session = CallSession(
            store=store,
            run_id=run_id,
            resumed=resumed,
            ledger=ledger,
            pool=pool,
            runner=runner,
            calls=strategy,
            writer=StageWriter(store.writer, strategy),
            capabilities=capabilities,
            stats=stats,
            price=price,
            counter=counter,
            notes=notes,
            outbox=outbox,
        )
        if ledger.remaining is not None and ledger.remaining <= 0:
            ledger.exhausted = True
            session.flags.budget_exhausted = True
        yield session
        store.writer.flush_blocking()
    finally:
        if owned_transport:
            await transport.aclose()
        store.close()


async def drive(
    session: CallSession,
    pipeline: Callable[[], Awaitable[None]],
    *,
    progress: bool,
    console: Console | None = None,
) -> tuple[str, str]:
    """Run ``pipeline`` with the progress view and Ctrl-C handling; returns (status, detail).

    First Ctrl-C: stop admitting work and send nothing more: calls waiting for money, a
    rate-limit slot or a retry are released at $0; requests already at the provider finish
    (at most ``STOP_WAIT_S``). Second: abandon those too (they count as spent). Systemic
    errors become status "failed".
    """
    from .progress import ProgressView, abandoned_message, stopping_message

    flags = session.flags
    outbox = session.outbox
    # --no-progress means plain lines every few seconds instead of the live view, not silence
    view = ProgressView(
        stats=session.stats,
        ledger=session.ledger,
        limiter_snapshot=session.pool.snapshot,
        console=console,
        live=None if progress else False,
    )
    say = view.console
    error: BaseException | None = None
    released = abandoned = 0
    with _quiet_gc():
        async with anyio.create_task_group() as outer:
            cancel_scope = outer.cancel_scope
            presses = 0

            def give_up(reason: str) -> None:
                nonlocal abandoned
                if cancel_scope.cancel_called:
                    return
                abandoned = outbox.at_provider
                say.print(abandoned_message(reason, abandoned), markup=False, highlight=False)
                cancel_scope.cancel()

            def on_sigint() -> None:
                nonlocal presses, released
                presses += 1
                flags.interrupted = True
                if presses > 1:
                    give_up("stopping now")
                    return
                at_provider, released = outbox.close()
                say.print(
                    stopping_message(at_provider, released, STOP_WAIT_S),
                    markup=False,
                    highlight=False,
                )
                loop.call_later(STOP_WAIT_S, give_up, f"stopped waiting after {STOP_WAIT_S:g} s")

            loop = asyncio.get_running_loop()

            async def tick() -> None:
                recorded = loop.time()
                while True:
                    await anyio.sleep(0.25)  # the view renders on this thread, 4 times a second
                    view.tick()
                    if loop.time() - recorded >= PACE_RECORD_S:
                        recorded = loop.time()
                        _record_pace(session)

            view.start()
            outer.start_soon(tick)
            with on_signals(on_sigint):
                try:
                    await pipeline()
                except BaseException as exc:  # sorted out below: systemic errors become a status
                    error = most_serious(exc) if isinstance(exc, BaseExceptionGroup) else exc
                    if isinstance(error, asyncio.CancelledError):
                        error = None
                finally:
                    view.stop()
                    _record_pace(session)
                    cancel_scope.cancel()
    note = session.ledger.overshoot_note()
    if note:
        session.notes.append(note)
    if isinstance(error, RunStopping):  # a stop no stage caught: the same as its flag
        flags.stopped_by(error)
        error = None
    if isinstance(error, HalugenError):
        return "failed", str(error)
    if error is not None:
        raise error
    if flags.interrupted:
        return "interrupted", _interrupted_detail(released, abandoned)
    if flags.budget_exhausted:
        return "budget_exhausted", ""
    if flags.input_error is not None:
        return "input_error", str(flags.input_error)
    return "done", ""


def _interrupted_detail(released: int, abandoned: int) -> str:
    """What Ctrl-C did with the calls under way, for the closing line."""
    parts = []
    if released:
        parts.append(f"{released} queued call(s) released at $0")
    if abandoned:
        parts.append(f"{abandoned} request(s) at the provider abandoned, counted as spent")
    return "; ".join(parts)


def _record_pace(session: CallSession) -> None:
    """What bound the session's pace most, and for what share of it ("limit 93%"), on the
    run's row, where `halugen status` shows it (llm/binding.py)."""
    summary = session.pool.gauge.summary()
    if summary:
        session.store.update_run(session.run_id, bound_by=summary)


@contextlib.contextmanager
def _quiet_gc() -> Iterator[None]:
    """Fewer garbage-collector passes while a pipeline runs.

    At thousands of calls per second the collector's passes over everything imported and
    set up (hundreds of thousands of long-lived objects) cost a fifth of the event loop's
    time. Freezing what exists now and collecting the young generation less often keeps
    that cost small; the previous settings come back afterwards. No full collection first:
    what is garbage now is only held until the run ends (``unfreeze`` hands it back), and a
    full pass over a large heap (a process that loaded torch: 0.2 s) costs every session.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
