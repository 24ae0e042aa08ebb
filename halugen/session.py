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
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
from rich.console import Console

from . import __version__
from ._groups import most_serious
from .budget import Ledger, ModelPrice, find_price, usd_to_pusd
from .config import RunConfig
from .errors import HalugenError, UsageError
from .llm.calls import CallRunner
from .llm.endpoint import EndpointInfo, describe_endpoint, pick_model
from .llm.pool import EndpointPool
from .llm.transport import AiohttpTransport, Transport
from .records import fingerprint
from .stats import RunStats
from .store.db import Store, open_store
from .tokens import TokenCounter, get_counter

__all__ = [
    "CallSession",
    "StopFlags",
    "call_session",
    "closing",
    "drive",
    "prepare_endpoint",
    "resolve_model",
    "resolve_price",
]

STOP_WAIT_S = 30.0  # after the first Ctrl-C, how long calls in flight may take to finish
PACE_RECORD_S = 10.0  # how often the run records what binds its pace, for `halugen status`
EXIT_CODES = {"done": 0, "budget_exhausted": 3, "interrupted": 130, "input_error": 2}


@dataclass
class StopFlags:
    """Why a pipeline stops admitting work; stages check these, nothing is killed."""

    budget_exhausted: bool = False
    interrupted: bool = False
    input_error: BaseException | None = None  # the input broke off; what was read finishes

    @property
    def stop_admitting(self) -> bool:
        return self.budget_exhausted or self.interrupted


@dataclass
class CallSession:
    """An open run: its store, money, endpoints (each with its limits) and the call runner."""

    store: Store
    run_id: str
    resumed: bool
    ledger: Ledger
    pool: EndpointPool
    runner: CallRunner
    stats: RunStats
    price: ModelPrice
    counter: TokenCounter
    flags: StopFlags = field(default_factory=StopFlags)
    notes: list[str] = field(default_factory=list)


async def prepare_endpoint(
    cfg: RunConfig, transport: Transport
) -> tuple[RunConfig, EndpointInfo, list[str]]:
    """Ask the server what it serves; settle the model before the run's identity is made."""
    info = await describe_endpoint(transport, cfg.base_url, cfg.api_key)
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


def resolve_price(cfg: RunConfig) -> tuple[ModelPrice, list[str]]:
    """The price to account with, and notes for the user. Unknown + budget is an error."""
    price = find_price(
        cfg.model, card=cfg.price_card, price_in=cfg.price_in, price_out=cfg.price_out
    )
    if price is not None:
        return price, []
    if cfg.budget_usd is not None:
        raise UsageError(
            f"no price card lists model {cfg.model!r}, so a budget cannot be enforced; give "
            f"--price-in and --price-out (USD per million tokens), or --price-card local for "
            f"a self-hosted server"
        )
    return (
        ModelPrice.per_million(cfg.model, 0.0, 0.0, card="unpriced"),
        [
            f"no price is known for model {cfg.model!r}: costs are counted as $0 "
            f"(give --price-in/--price-out to count them)"
        ],
    )


def _open_run(
    store: Store,
    cfg: RunConfig,
    *,
    kind: str,
    identity: dict[str, Any],
    tasks: str,
    price: ModelPrice,
    budget: int | None,
) -> tuple[str, bool]:
    config_hash = fingerprint(identity)
    run = None
    if cfg.run_id:
        run = store.get_run(cfg.run_id)
        if run is None:
            raise UsageError(f"no run {cfg.run_id!r} in {store.path} (see 'halugen status')")
        if run["config_hash"] != config_hash or run["kind"] != kind:
            raise UsageError(
                f"run {cfg.run_id} was made with other settings (task, inputs, model, prompts "
                f"or sampling); repeat its settings, or start a new run with --fresh"
            )
    elif not cfg.fresh:
        run = store.find_run(config_hash=config_hash, kind=kind)
    if run is None:
        run_id = store.create_run(
            kind=kind,
            config_hash=config_hash,
            config=identity,
            tasks=tasks,
            model=cfg.model,
            base_url=cfg.endpoint_label,
            price=price.as_record(),
            budget_pusd=budget,
            version=__version__,
        )
        return run_id, False
    run_id = run["run_id"]
    updates: dict[str, Any] = {
        "status": "running",
        "status_detail": None,
        "price_json": orjson.dumps(price.as_record()).decode(),
    }
    if budget is not None:
        updates["budget_pusd"] = budget
    store.update_run(run_id, **updates)
    return run_id, True


def _say(message: str) -> None:
    """A one-line message while a run goes (an endpoint out of rotation); above a live view."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(message, markup=False)


def _mark_lost(store: Store, run_id: str) -> int:
    """Reservations never closed (a crash): count them as spent. Returns how many."""
    rows = store.open_reservations(run_id)
    if rows:
        store.writer.put(
            [
                ("ledger", (call_id, res_no, run_id, "lost", pusd, None, None, None, None, None))
                for call_id, res_no, pusd in rows
            ]
        )
        store.writer.flush_blocking()
    return len(rows)


@contextlib.asynccontextmanager
async def call_session(
    cfg: RunConfig,
    *,
    kind: str,
    identity: dict[str, Any],
    tasks: str,
    transport: Transport | None = None,
    on_run: Callable[[str, bool], None] | None = None,
) -> AsyncIterator[CallSession]:
    """Open (or resume) the run of ``kind`` whose settings are ``identity``."""
    price, notes = resolve_price(cfg)
    budget = usd_to_pusd(cfg.budget_usd) if cfg.budget_usd is not None else None
    counter = get_counter(price.tokenizer)
    store = open_store(cfg.db)
    owned_transport = transport is None
    transport = transport or AiohttpTransport()
    try:
        run_id, resumed = _open_run(
            store, cfg, kind=kind, identity=identity, tasks=tasks, price=price, budget=budget
        )
        if on_run is not None:
            on_run(run_id, resumed)
        lost = _mark_lost(store, run_id)
        if lost:
            notes.append(
                f"{lost} call(s) in flight when the last session stopped were counted "
                f"as spent (the provider may have billed them)"
            )
        run = store.get_run(run_id)
        assert run is not None
        ledger = Ledger(run["budget_pusd"], spent=store.spent(run_id))
        stats = RunStats(run_id=run_id)
        pool = EndpointPool(
            cfg.fleet(),
            transport=transport,
            timeouts=cfg.timeouts,
            count_tokens=counter.count,
            notify=_say,
        )
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
        )
        session = CallSession(
            store=store,
            run_id=run_id,
            resumed=resumed,
            ledger=ledger,
            pool=pool,
            runner=runner,
            stats=stats,
            price=price,
            counter=counter,
            notes=notes,
        )
        if ledger.remaining is not None and ledger.remaining <= 0:
            ledger.exhausted = True
            session.flags.budget_exhausted = True
        from .batch.planner import adapt_session

        adapt_session(session, cfg.batch)  # a batch-mode planning pass; else: no live batch
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
    """Run ``pipeline`` with the progress view and Ctrl-C handling; returns (status, msg).

    First Ctrl-C: stop admitting work, let calls in flight finish. Second: cancel them
    (their reservations count as spent). Systemic errors become status "failed".
    """
    from .progress import ProgressView

    flags = session.flags
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
    with _quiet_gc():
        async with anyio.create_task_group() as outer:
            cancel_scope = outer.cancel_scope
            presses = 0

            def give_up(reason: str) -> None:
                if cancel_scope.cancel_called:
                    return
                left = session.stats.totals().in_flight
                say.print(
                    f"{reason}: {left} call(s) abandoned; they count as spent "
                    f"(the provider may bill them)",
                    markup=False,
                    highlight=False,
                )
                cancel_scope.cancel()

            def on_sigint() -> None:
                nonlocal presses
                presses += 1
                flags.interrupted = True
                if presses > 1:
                    give_up("stopping now")
                    return
                in_flight = session.stats.totals().in_flight
                say.print(
                    f"stopping: {in_flight} call(s) in flight will finish (waiting at most "
                    f"{STOP_WAIT_S:g} s); Ctrl-C again abandons them and counts them as spent",
                    markup=False,
                    highlight=False,
                )
                loop.call_later(STOP_WAIT_S, give_up, f"stopped waiting after {STOP_WAIT_S:g} s")

            loop = asyncio.get_running_loop()
            handled = False
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signal.SIGINT, on_sigint)
                handled = True

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
            try:
                await pipeline()
            except BaseException as exc:  # sorted out below: systemic errors become a status
                error = most_serious(exc) if isinstance(exc, BaseExceptionGroup) else exc
                if isinstance(error, asyncio.CancelledError):
                    error = None
            finally:
                if handled:
                    loop.remove_signal_handler(signal.SIGINT)
                view.stop()
                _record_pace(session)
                cancel_scope.cancel()
    if isinstance(error, HalugenError):
        return "failed", str(error)
    if error is not None:
        raise error
    if flags.interrupted:
        return "interrupted", ""
    if flags.budget_exhausted:
        return "budget_exhausted", ""
    if flags.input_error is not None:
        return "input_error", str(flags.input_error)
    return "done", ""


def _record_pace(session: CallSession) -> None:
    """What bound the session's pace most, and for what share of it ("limit 93%"), on the
    run's row, where `halugen status` shows it (llm/binding.py)."""
    summary = session.pool.gauge.summary()
    if summary:
        session.store.update_run(session.run_id, bound_by=summary)


def closing(status: str, detail: str, *, what: str, summary: str) -> tuple[str, int]:
    """The one-line message and exit code that end a run of any kind."""
    if status == "done":
        message = f"{what} done: {summary}"
    elif status == "budget_exhausted":
        message = (
            f"{what} stopped: the budget is used up ({summary}). State is saved: run the "
            f"same command with a larger --budget to continue"
        )
    elif status == "interrupted":
        message = (
            f"{what} interrupted ({summary}). State is saved: run the same command again to resume"
        )
    else:
        message = f"{what} failed: {detail} ({summary})"
    return message, EXIT_CODES.get(status, 1)


@contextlib.contextmanager
def _quiet_gc() -> Iterator[None]:
    """Fewer garbage-collector passes while a pipeline runs.

    At thousands of calls per second the collector's passes over everything imported and
    set up (hundreds of thousands of long-lived objects) cost a fifth of the event loop's
    time. Freezing what exists now and collecting the young generation less often keeps
    that cost small; the previous settings come back afterwards.
    """
    threshold = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
