"""A generation run from start to end: set up, resume, run the pipeline, report.

``generate(config)`` is the Python API behind ``halugen run`` and ``halugen demo``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson
from rich.console import Console

from . import __version__
from ._groups import most_serious
from .budget import Ledger, ModelPrice, find_price, format_usd
from .config import RunConfig
from .errors import AuthError, HalugenError, InputError, StoreError, UsageError
from .llm.calls import CallRunner
from .llm.client import ChatClient
from .llm.limiter import RateLimiter
from .llm.transport import AiohttpTransport, Transport
from .pipeline import run_pipeline
from .prompts import load_template
from .records import Seed, fingerprint
from .seeds import formats_by_task, read_seeds
from .stages.context import GenContext, LoadedTask
from .stages.seeds import SeedSource
from .stats import RunStats
from .store.db import Store, open_store
from .tasks import TASK_NAMES, get_task
from .tokens import get_counter

__all__ = ["RunOutcome", "generate", "load_tasks", "resolve_price", "resolve_tasks"]

log = logging.getLogger("halugen")

EXIT_OK, EXIT_FAILED, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 3, 130


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    status: str  # done | budget_exhausted | interrupted | failed
    message: str
    exit_code: int
    spent_pusd: int
    budget_pusd: int | None
    stats: RunStats
    notes: tuple[str, ...] = ()


def load_tasks(names: tuple[str, ...], prompts_dir: Path | None = None
               ) -> dict[str, LoadedTask]:
    tasks = {}
    for name in names:
        spec = get_task(name)
        tasks[name] = LoadedTask(
            spec=spec,
            sample_templates=tuple(load_template(name, t, prompts_dir)
                                   for t in spec.sample_templates),
            filter_template=load_template(name, spec.filter_template, prompts_dir),
        )
    return tasks


def resolve_tasks(cfg: RunConfig) -> tuple[RunConfig, dict[str, list[str]]]:
    """Which tasks run and which seed files feed each.

    ``--task all`` means every task that has seed files among ``--seeds``; a list of tasks
    sends each file to the task of its format. One task reads every file (a file of
    another task's format is then an error). Unreadable input fails here, before a run.
    """
    if cfg.long_documents not in ("truncate", "skip"):
        raise UsageError(f"--long-documents must be truncate or skip, not {cfg.long_documents!r}")
    names = tuple(dict.fromkeys(cfg.tasks))
    if names == ("all",) or len(names) > 1:
        groups = formats_by_task(list(cfg.seeds), fmt=cfg.seed_format)
        if names == ("all",):
            names = tuple(t for t in TASK_NAMES if t in groups)
        for name in names:
            get_task(name)
            if name not in groups:
                found = ", ".join(f"{t} ({len(f)} file(s))" for t, f in groups.items())
                raise UsageError(f"task {name} has no seed file among --seeds (found: {found})")
        files_of = {name: [path for path, _ in groups[name]] for name in names}
    else:
        get_task(names[0])
        files_of = {names[0]: list(cfg.seeds)}
    for name in names:  # fail fast: detect formats, open the first record
        for _ in read_seeds(files_of[name], name, fmt=cfg.seed_format):
            break
    return dataclasses.replace(cfg, tasks=names), files_of


def template_hashes(tasks: dict[str, LoadedTask]) -> dict[str, str]:
    out = {}
    for task in tasks.values():
        for t in (*task.sample_templates, task.filter_template):
            out[t.name] = t.hash
    return out


def resolve_price(cfg: RunConfig) -> tuple[ModelPrice, list[str]]:
    """The price to account with, and notes for the user. Unknown + budget is an error."""
    price = find_price(cfg.model, card=cfg.price_card, price_in=cfg.price_in,
                       price_out=cfg.price_out)
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
        [f"no price is known for model {cfg.model!r}: costs are counted as $0 "
         f"(give --price-in/--price-out to count them)"],
    )


def _seed_from_row(task: str, row: tuple[Any, ...]) -> Seed:
    seed_key, seed_id, dataset, source_file, source_line, fields_json, truncated = row
    return Seed(task=task, fields=orjson.loads(fields_json), seed_id=seed_id or "",
                source_file=source_file or "", source_line=source_line or 0,
                dataset=dataset or "", key=seed_key, truncated_tokens=truncated or 0)


def _open_run(store: Store, cfg: RunConfig, tasks: dict[str, LoadedTask], price: ModelPrice,
              budget: int | None) -> tuple[str, bool]:
    identity = cfg.identity(template_hashes(tasks))
    config_hash = fingerprint(identity)
    run = None
    if cfg.run_id:
        run = store.get_run(cfg.run_id)
        if run is None:
            raise UsageError(f"no run {cfg.run_id!r} in {store.path} (see 'halugen status')")
        if run["config_hash"] != config_hash:
            raise UsageError(
                f"run {cfg.run_id} was made with other settings (task, seeds, model, prompts "
                f"or sampling); repeat its settings, or start a new run with --fresh"
            )
    elif not cfg.fresh:
        run = store.find_run(config_hash=config_hash, kind="generate")
    if run is None:
        run_id = store.create_run(
            kind="generate", config_hash=config_hash, config=identity,
            tasks=",".join(cfg.tasks), model=cfg.model, base_url=cfg.base_url,
            price=price.as_record(), budget_pusd=budget, version=__version__,
        )
        return run_id, False
    run_id = run["run_id"]
    updates: dict[str, Any] = {"status": "running", "status_detail": None,
                               "price_json": orjson.dumps(price.as_record()).decode()}
    if budget is not None:
        updates["budget_pusd"] = budget
    store.update_run(run_id, **updates)
    return run_id, True


def _mark_lost(store: Store, run_id: str) -> int:
    """Reservations never closed (a crash): count them as spent. Returns how many."""
    rows = store.open_reservations(run_id)
    if rows:
        store.writer.put([("ledger", (call_id, res_no, run_id, "lost", pusd, None, None, None,
                                      None, None)) for call_id, res_no, pusd in rows])
        store.writer.flush_blocking()
    return len(rows)


async def generate(
    cfg: RunConfig,
    *,
    transport: Transport | None = None,
    console: Console | None = None,
    on_run: Callable[[str, bool], None] | None = None,
) -> RunOutcome:
    """Run (or resume) generation for ``cfg``. Raises HalugenError for bad input/setup."""
    if not cfg.seeds:
        raise UsageError("no seed files given: pass --seeds FILE (or set seeds in halugen.toml)")
    cfg, files_of = resolve_tasks(cfg)
    tasks = load_tasks(cfg.tasks, cfg.prompts_dir)
    price, notes = resolve_price(cfg)
    budget = None
    if cfg.budget_usd is not None:
        from .budget import usd_to_pusd

        budget = usd_to_pusd(cfg.budget_usd)
    counter = get_counter(price.tokenizer)
    store = open_store(cfg.db)
    owned_transport = transport is None
    transport = transport or AiohttpTransport()
    try:
        run_id, resumed = _open_run(store, cfg, tasks, price, budget)
        if on_run is not None:
            on_run(run_id, resumed)
        lost = _mark_lost(store, run_id)
        if lost:
            notes.append(f"{lost} call(s) in flight when the last session stopped were counted "
                         f"as spent (the provider may have billed them)")
        run = store.get_run(run_id)
        assert run is not None
        budget = run["budget_pusd"]
        ledger = Ledger(budget, spent=store.spent(run_id))
        stats = RunStats(run_id=run_id)
        limiter = RateLimiter(cfg.rate)
        client = ChatClient(base_url=cfg.base_url, api_key=cfg.api_key, transport=transport,
                            timeouts=cfg.timeouts, observe=limiter.observe,
                            count_tokens=counter.count)
        runner = CallRunner(run_id=run_id, client=client, limiter=limiter, ledger=ledger,
                            price=price, counter=counter, store=store, stats=stats,
                            retry=cfg.retry, first_call_id=store.next_call_id())
        ctx = GenContext(run_id=run_id, model=cfg.model, run_seed=cfg.run_seed, runner=runner,
                         writer=store.writer, stats=stats, tasks=tasks, sampling=cfg.sampling,
                         judge=cfg.judge, context_window=price.context_window,
                         long_documents=cfg.long_documents)
        sources = []
        for task in cfg.tasks:
            pending = [_seed_from_row(task, r) for r in store.pending_seeds(run_id, task)]
            for seed in pending:
                rows = store.stored_candidates(run_id, task, seed.key)
                if rows:
                    ctx.resumed_candidates[seed.key] = rows
            bad_seen = {(r[0], r[1]) for r in store.query(
                "SELECT source_file, source_line FROM bad_records WHERE run_id = ? AND task = ?",
                [run_id, task])}
            sources.append(SeedSource(
                task=task,
                read=lambda task=task: read_seeds(files_of[task], task, fmt=cfg.seed_format),
                pending=pending, admitted=store.admitted_seeds(run_id, task),
                bad_seen=bad_seen, limit=cfg.limit,
            ))
            stats.seeds_total[task] = cfg.limit
        if budget is not None and ledger.remaining is not None and ledger.remaining <= 0:
            ledger.exhausted = True
            ctx.flags.budget_exhausted = True
        with _quiet_gc():
            status, message = await _drive(ctx, sources, cfg, ledger, limiter, console)
        store.writer.flush_blocking()
        return _finish(store, ctx, ledger, status, message, notes)
    finally:
        if owned_transport:
            await transport.aclose()
        store.close()


async def _drive(ctx: GenContext, sources: list[SeedSource], cfg: RunConfig, ledger: Ledger,
                 limiter: RateLimiter, console: Console | None) -> tuple[str, str]:
    """Run the pipeline with the progress view and Ctrl-C handling; returns (status, msg)."""
    from .progress import ProgressView

    view = ProgressView(stats=ctx.stats, ledger=ledger, limiter_snapshot=limiter.snapshot,
                        console=console) if cfg.progress else None
    workers = max(1, cfg.rate.concurrency)
    error: BaseException | None = None
    async with anyio.create_task_group() as outer:
        cancel_scope = outer.cancel_scope
        presses = 0

        def on_sigint() -> None:
            nonlocal presses
            presses += 1
            ctx.flags.interrupted = True
            if presses > 1:
                cancel_scope.cancel()

        loop = asyncio.get_running_loop()
        handled = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            handled = True

        async def tick() -> None:
            while True:
                await anyio.sleep(0.25)  # the view renders on this thread, 4 times a second
                if view is not None:
                    view.tick()

        if view is not None:
            view.start()
            outer.start_soon(tick)
        try:
            await run_pipeline(ctx, sources, sample_workers=workers,
                               filter_workers=max(1, workers // 2))
        except BaseException as exc:  # sorted out below: systemic errors become a status
            error = most_serious(exc) if isinstance(exc, BaseExceptionGroup) else exc
            if isinstance(error, asyncio.CancelledError):
                error = None
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGINT)
            if view is not None:
                view.stop()
            cancel_scope.cancel()
    if isinstance(error, AuthError):
        return "failed", str(error)
    if isinstance(error, StoreError):
        return "failed", str(error)
    if isinstance(error, HalugenError):
        return "failed", str(error)
    if error is not None:
        raise error
    if ctx.flags.interrupted:
        return "interrupted", ""
    if ctx.flags.budget_exhausted:
        return "budget_exhausted", ""
    if ctx.flags.input_error is not None:
        return "input_error", str(ctx.flags.input_error)
    return "done", ""


@contextlib.contextmanager
def _quiet_gc() -> Iterator[None]:
    """Fewer garbage-collector passes while the pipeline runs.

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


def _finish(store: Store, ctx: GenContext, ledger: Ledger, status: str, message: str,
            notes: list[str]) -> RunOutcome:
    st = ctx.stats
    run_id = ctx.run_id
    sampled = sum(st.sampled.values())
    rejected = sum(st.rejected.values())
    failed = sum(st.failed.values())
    pending = store.query(
        "SELECT count(*) FROM seed_progress WHERE run_id = ? AND outcome IN ('pending', 'failed')",
        [run_id])[0][0]
    spent = store.spent(run_id)
    summary = (f"{sampled} sampled, {rejected} rejected, {failed} failed this session; "
               f"spent {format_usd(spent)} of {format_usd(ledger.budget)}")
    if status == "done" and pending:
        status, code = "incomplete", EXIT_FAILED
        message = (f"run {run_id}: {pending} seed(s) failed on call errors ({summary}); run the "
                   f"same command again to retry them")
    elif status == "done":
        code = EXIT_OK
        message = f"run {run_id} done: {summary}"
    elif status == "budget_exhausted":
        code = EXIT_BUDGET
        message = (f"run {run_id} stopped: the budget of {format_usd(ledger.budget)} is used up "
                   f"({summary}; {pending} seed(s) pending). State is saved: run the same "
                   f"command with a larger --budget to continue")
    elif status == "interrupted":
        code = EXIT_INTERRUPTED
        message = (f"run {run_id} interrupted ({summary}; {pending} seed(s) pending). State is "
                   f"saved: run the same command again to resume")
    elif status == "input_error":
        code = InputError.exit_code
        message = f"run {run_id}: {message} ({summary})"
    else:
        code = EXIT_FAILED
        message = f"run {run_id} failed: {message}"
    store.update_run(run_id, status=status, status_detail=message[:1000])
    return RunOutcome(run_id=run_id, status=status, message=message, exit_code=code,
                      spent_pusd=spent, budget_pusd=ledger.budget, stats=st, notes=tuple(notes))
