"""A generation run from start to end: set up, resume, run the pipeline, report.

``generate(config)`` is the Python API behind ``halugen run`` and ``halugen demo``: it
settles the run's tasks, inputs and model once, then runs one session that sends its calls
now, or, with ``--batch``, hands batch/run.py ``generate_session`` to open each of batch
mode's passes; ``batch export`` runs one planning pass of ``generate_session`` itself.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
from rich.console import Console

from .batch.modes import SendNow
from .batch.run import run_in_batches
from .budget import Ledger
from .config import RunConfig
from .context_window import session_window, window_learner
from .cost.prices import ModelPrice, format_usd
from .cost.run_price import RunPrice, check_judge_price, resolve_price
from .cut_note import cut_note, window_origin, window_phrase
from .endings import closing, with_failed_work
from .errors import UsageError
from .llm.capabilities import JSON_SCHEMA
from .llm.endpoint import EndpointInfo, is_openai, takes_cache_key
from .llm.strategy import CallMode
from .llm.transport import AiohttpTransport, Transport
from .seeds import expand_paths, formats_by_task, read_seeds
from .seeds.stamps import settle_stamps, stamp_files
from .session import OnRun, call_session, drive, prepare_endpoint
from .stages.context import GenContext
from .stages.seeds import SeedSource
from .stages.verify import verify_run
from .stages.wiring import run_pipeline
from .stats import RunStats
from .store import session_queries
from .store.db import Store
from .store.queries import cut_counts
from .store.run_open import pending_seeds
from .tasks import TASK_NAMES
from .tasks.base import TaskSpec
from .tasks.catalog import TaskCatalog, read_tasks
from .tasks.loaded import LoadedTask, plan_task
from .tasks.stored import remember
from .tasks.templates import task_template
from .tokens import TokenCounter

__all__ = [
    "RunOutcome",
    "generate",
    "generate_session",
    "generated_tasks",
    "load_tasks",
    "read_run_tasks",
    "resolve_tasks",
]


log = logging.getLogger("halugen")


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    status: str  # a status of errors.EXIT_CODES
    message: str
    exit_code: int
    spent_pusd: int
    budget_pusd: int | None
    stats: RunStats
    notes: tuple[str, ...] = ()


def load_tasks(specs: Iterable[TaskSpec], prompts_dir: Path | None = None) -> dict[str, LoadedTask]:
    tasks = {}
    for spec in specs:
        # the sampling templates, then the filter's: each read the same way
        *sampling, filtering = (
            task_template(spec, stem, prompts_dir)
            for stem in (*spec.sample_templates, spec.filter_template)
        )
        tasks[spec.name] = LoadedTask(
            spec=spec, sample_templates=tuple(sampling), filter_template=filtering
        )
    return tasks


def read_run_tasks(cfg: RunConfig) -> tuple[RunConfig, TaskCatalog]:
    """``cfg`` with its ``--task`` arguments (names or task folders' paths) read: each folder
    is read and checked in full here, before anything is called, and becomes its task's
    name; the catalog holds the tasks read. Where a run starts (the command line, the
    Python API's ``generate``), once."""
    names = tuple(dict.fromkeys(cfg.tasks))
    if names == ("all",):
        return cfg, TaskCatalog()
    specs, catalog = read_tasks(names)
    return dataclasses.replace(cfg, tasks=_task_names(specs)), catalog


def resolve_tasks(cfg: RunConfig, catalog: TaskCatalog) -> tuple[RunConfig, dict[str, list[str]]]:
    """Which tasks run and which seed files feed each.

    ``--task all`` means every task that has seed files among ``--seeds``; a list of tasks
    sends each file to the task of its format. One task reads every file (a file of
    another task's format is then an error). Unreadable input fails here, before a run.
    ``cfg.tasks`` are names of ``catalog``'s tasks (``read_run_tasks``).
    """
    if cfg.long_documents not in ("truncate", "skip"):
        raise UsageError(f"--long-documents must be truncate or skip, not {cfg.long_documents!r}")
    names = tuple(dict.fromkeys(cfg.tasks))
    if names != ("all",):
        names = generated_tasks([catalog[name] for name in names])
        folders = [n for n in names if not catalog[n].builtin]
        if folders and len(names) > 1:
            raise UsageError(
                f"a task folder's task runs on its own (its seeds have no format of their "
                f"own to send them by): run {folders[0]} in a run of its own"
            )
    if names == ("all",) or len(names) > 1:
        groups = formats_by_task(list(cfg.seeds), fmt=cfg.seed_format, mapping=cfg.seed_mapping)
        if names == ("all",):
            names = tuple(t for t in TASK_NAMES if t in groups)
        for name in names:
            if name not in groups:
                found = ", ".join(f"{t} ({len(f)} file(s))" for t, f in groups.items())
                raise UsageError(f"task {name} has no seed file among --seeds (found: {found})")
        files_of = {name: [path for path, _ in groups[name]] for name in names}
    else:
        files_of = {names[0]: list(cfg.seeds)}
    for name in names:  # fail fast: detect formats, open the first record
        spec = catalog[name]
        for _ in read_seeds(files_of[name], spec, fmt=cfg.seed_format, mapping=cfg.seed_mapping):
            break
    return dataclasses.replace(cfg, tasks=names), files_of


def generated_tasks(specs: Sequence[TaskSpec]) -> tuple[str, ...]:
    """The names of the tasks ``specs``; a task that is not generated, or two folders
    declaring one name, is a ``UsageError``."""
    for spec in specs:
        if not spec.generated:
            raise UsageError(
                f"the {spec.name} task is judged only (its items come from annotation): "
                "there is nothing to generate; see 'halugen annotate' and 'halugen eval'"
            )
    return _task_names(specs)


def _task_names(specs: Sequence[TaskSpec]) -> tuple[str, ...]:
    """The names of ``specs``, once each; two folders declaring one name are a
    ``UsageError``."""
    by_name: dict[str, TaskSpec] = {}
    for spec in specs:
        first = by_name.setdefault(spec.name, spec)
        if first.folder != spec.folder:
            raise UsageError(
                f"task folders {first.folder} and {spec.folder} both declare the task "
                f"{spec.name!r}: rename one (its task.toml's name)"
            )
    return tuple(by_name)


def plan_tasks(
    tasks: dict[str, LoadedTask], price: ModelPrice, counter: TokenCounter, *, batch: bool
) -> dict[str, LoadedTask]:
    """The tasks with the template variants the cache plan sends (``cost.cache``)."""
    return {name: plan_task(task, price, counter, batch=batch) for name, task in tasks.items()}


def _cache_plan(store: Store, run_id: str, *, batch: bool) -> str:
    """'interactive' or 'batch': the way of paying the run's templates are planned for. Its
    first session decides; a resume in the other mode (``batch export`` then ``run``, or
    ``--batch`` then an interactive rerun) sends the same requests, so nothing is paid twice."""
    row = store.get_run(run_id)
    plan = row.get("cache_plan") if row else None
    if plan not in ("interactive", "batch"):
        plan = "batch" if batch else "interactive"
        store.update_run(run_id, cache_plan=plan)
    return str(plan)


def template_hashes(tasks: dict[str, LoadedTask]) -> dict[str, str]:
    out = {}
    for task in tasks.values():
        for t in (*task.sample_templates, task.filter_template):
            out[t.name] = t.hash
    return out


async def generate(
    cfg: RunConfig,
    *,
    tasks: TaskCatalog | None = None,
    transport: Transport | None = None,
    console: Console | None = None,
    on_run: OnRun | None = None,
) -> RunOutcome:
    """Run (or resume) generation for ``cfg``: its calls sent now, or with ``cfg.batch`` in
    batch mode's passes (each a ``generate_session``). Raises HalugenError for bad
    input/setup.

    ``tasks`` holds the tasks ``cfg.tasks`` names (``read_run_tasks``); without it, the
    ``--task`` arguments in ``cfg`` are read here (the Python API's entry).
    """
    if not cfg.seeds:
        raise UsageError("no seed files given: pass --seeds FILE (or set seeds in halugen.toml)")
    if tasks is None:
        cfg, tasks = read_run_tasks(cfg)
    owned = transport is None
    transport = transport or AiohttpTransport()
    try:
        # the tasks, inputs, model and price are settled (and checked) once, before any call
        run = await _settle(cfg, tasks, transport)
        if cfg.batch is None:
            return await _generate(run, transport, console, on_run, SendNow())
        return await run_in_batches(
            partial(generate_session, tasks=tasks),
            run.cfg,
            run.price.price,
            transport=transport,
            console=console,
            on_run=on_run,
        )
    finally:
        if owned:
            await transport.aclose()


async def generate_session(
    cfg: RunConfig,
    calls: CallMode,
    *,
    tasks: TaskCatalog,
    transport: Transport | None = None,
    console: Console | None = None,
    on_run: OnRun | None = None,
) -> RunOutcome:
    """One session of generation for ``cfg``, its calls made as ``calls`` says; ``tasks``
    holds the tasks ``cfg.tasks`` names (``read_run_tasks``)."""
    owned = transport is None
    transport = transport or AiohttpTransport()
    try:
        return await _generate(await _settle(cfg, tasks, transport), transport, console,
                               on_run, calls)  # fmt: skip
    finally:
        if owned:
            await transport.aclose()


@dataclass(frozen=True)
class _Settled:
    """What a session of generation settles before its run opens."""

    cfg: RunConfig  # its tasks resolved, its model settled
    files_of: dict[str, list[str]]  # the seed files of each task
    tasks: dict[str, LoadedTask]
    info: EndpointInfo  # what the server said of itself
    notes: list[str]  # the endpoint's notes, for the user
    price: RunPrice


async def _settle(cfg: RunConfig, catalog: TaskCatalog, transport: Transport) -> _Settled:
    """``cfg``'s tasks, inputs, model and price, each read and checked once."""
    if not cfg.seeds:
        raise UsageError("no seed files given: pass --seeds FILE (or set seeds in halugen.toml)")
    cfg, files_of = resolve_tasks(cfg, catalog)
    tasks = load_tasks((catalog[name] for name in cfg.tasks), cfg.prompts_dir)
    cfg, info, notes = await prepare_endpoint(cfg, transport)
    price = resolve_price(cfg)
    check_judge_price(cfg, price.price)  # before the run opens
    return _Settled(cfg, files_of, tasks, info, notes, price)


async def _generate(
    run: _Settled,
    transport: Transport,
    console: Console | None,
    on_run: OnRun | None,
    calls: CallMode,
) -> RunOutcome:
    cfg, files_of, tasks, info = run.cfg, run.files_of, run.tasks, run.info
    files = expand_paths([path for paths in files_of.values() for path in paths])
    async with call_session(
        cfg,
        kind="generate",
        identity=cfg.identity(template_hashes(tasks)),
        tasks=",".join(cfg.tasks),
        calls=calls,
        run_price=run.price,
        transport=transport,
        on_run=on_run,
        modes={JSON_SCHEMA: cfg.structured},
        on_open=settle_stamps(await anyio.to_thread.run_sync(stamp_files, files)),
    ) as session:
        store, run_id = session.store, session.run_id
        # the identity above names the template files; what is sent follows the card's prices
        # in the way the run was first paid for, whatever mode this session uses
        plan = _cache_plan(store, run_id, batch=cfg.batch is not None)
        tasks = plan_tasks(tasks, session.price, session.runner.counter, batch=plan == "batch")
        for loaded in tasks.values():  # a user's task folder: read back without the folder
            remember(store, loaded.spec)
        session.notes[:0] = run.notes
        announced = info.window(cfg.model)  # what the server says of its window, if anything
        cache_keys = takes_cache_key(cfg.base_url)

        def lower_window(server_window: int) -> None:
            if server_window < ctx.context_window:
                ctx.context_window = server_window
                ctx.stats.window = server_window
                ctx.stats.window_origin = window_origin(
                    source="learned", window=server_window, slots=None
                )

        # a window a context-length reply names lowers the session's (``ctx``, made below
        # before any call) and is remembered for the endpoint's next runs
        session.runner.on_context_window = window_learner(
            store.writer, base_url=cfg.base_url, model=cfg.model, apply=lower_window
        )
        # seeds rejected for an earlier, smaller window are queued again: before the pending
        # seeds are read below
        window, source, requeued = session_window(
            store,
            run_id,
            flag=cfg.context_window,
            announced=announced,
            announced_by=info.source,
            base_url=cfg.base_url,
            model=cfg.model,
            card_window=session.price.context_window,
        )
        ctx = GenContext(
            run_id=run_id,
            model=cfg.model,
            run_seed=cfg.run_seed,
            runner=session.calls,
            writer=session.writer,
            capabilities=session.capabilities,
            stats=session.stats,
            tasks=tasks,
            sampling=cfg.sampling,
            judge=cfg.judge,
            flags=session.flags,
            context_window=window,
            fit_safety=0.95 if is_openai(cfg.base_url) else 0.85,
            long_documents=cfg.long_documents,
            prompts_dir=cfg.prompts_dir,
            cache_keys=cache_keys,
        )
        sources = []
        for task in cfg.tasks:
            pending = pending_seeds(store, run_id, task)
            for seed in pending:
                rows = store.stored_candidates(run_id, task, seed.key)
                if rows:
                    ctx.resumed_candidates[seed.key] = rows
            bad_seen = {
                (r[0], r[1]) for r in session_queries.bad_record_places(store, run_id, task)
            }
            sources.append(
                SeedSource(
                    task=task,
                    read=partial(
                        read_seeds,
                        files_of[task],
                        tasks[task].spec,
                        fmt=cfg.seed_format,
                        mapping=cfg.seed_mapping,
                    ),
                    pending=pending,
                    admitted=store.admitted_seeds(run_id, task),
                    bad_seen=bad_seen,
                    limit=cfg.limit,
                )
            )
            session.stats.seeds_total[task] = cfg.limit
        session.stats.window = window
        session.stats.window_origin = window_origin(
            source=source, window=window, slots=info.slots if info is not None else None
        )
        if requeued:
            session.notes.append(
                f"{requeued} seed(s) rejected for context_length are tried again: the context "
                f"window is now {window:,} tokens (from {source})"
            )

        async def pipeline() -> None:
            await run_pipeline(ctx, sources, wanted=session.pool.wanted)
            if cfg.verify:  # the stored samples' labels, checked by a judge
                session.notes.extend(
                    await verify_run(ctx, store, model=cfg.judge_model, wanted=session.pool.wanted)
                )

        status, message = await drive(session, pipeline, progress=cfg.progress, console=console)
        session.notes.extend(f"filter {note}" for note in session.capabilities.notes())
        store.writer.flush_blocking()
        return _finish(store, ctx, session.ledger, status, message, session.notes)


def _finish(
    store: Store, ctx: GenContext, ledger: Ledger, status: str, message: str, notes: list[str]
) -> RunOutcome:
    st = ctx.stats
    run_id = ctx.run_id
    sampled = sum(st.sampled.values())
    rejected = sum(st.rejected.values())
    failed = sum(st.failed.values())
    pending = session_queries.unfinished_seed_count(store, run_id)
    spent = store.spent(run_id)
    bad = sum(st.bad_records.values())
    summary = (
        f"{sampled} sampled, {rejected} rejected, {failed} failed, {bad} bad record(s) this "
        f"session; spent {format_usd(spent)} of {format_usd(ledger.budget)}"
    )
    admitted_ever = session_queries.admitted_seed_count(store, run_id)
    what = f"run {run_id}"
    detail = message
    if status == "done" and bad and not admitted_ever:
        status = "input_error"
        detail = (
            f"every record in the seed files is bad ({bad} bad record(s), listed in the "
            f"bad_records table with their reasons); check the files and --seed-format"
        )
        summary = ""
    elif status == "done" and pending:
        status, detail = with_failed_work(
            status, detail, failed=pending, what="seed(s)", cause=st.main_failure()
        )
    elif status in ("budget_exhausted", "interrupted"):
        summary += f"; {pending} seed(s) pending"
    fitted = window_phrase(st.window, st.window_origin) if st.window else None
    cut, records, stored = cut_counts(store, run_id)
    said = cut_note(cut, records, fitted or stored or window_phrase(None))
    if said and summary:
        summary += f"; {said}"
    message, code = closing(
        status, what=what, summary=summary, detail=detail, budget=format_usd(ledger.budget)
    )
    if fitted is None:
        store.update_run(run_id, status=status, status_detail=message[:1000])
    else:
        store.update_run(run_id, status=status, status_detail=message[:1000], fitted_window=fitted)
    return RunOutcome(
        run_id=run_id,
        status=status,
        message=message,
        exit_code=code,
        spent_pusd=spent,
        budget_pusd=ledger.budget,
        stats=st,
        notes=tuple(notes),
    )
