"""A recognition experiment: can model M tell hallucinated answers from right ones?

Per item, an RNG seeded by (eval seed, item key) decides which answer is shown (or, for
the contrast strategy, their order); the model's verdict is parsed (or scored from
logprobs) and stored with the truth in ``judgements``. Replies are read strictly by default
(``readers``: the reply contract's line, its JSON field or one word; anything else is
unsure); ``--read lenient`` interprets prose instead, for replies to other prompts. A text
verdict the reader cannot read is asked again once, in the same conversation, with a
stricter instruction that quotes the contract (``prompts/<task>/judge_again.txt``,
``judge_contrast_again.txt`` for contrast), as the filter does; the row keeps how often it
was asked, the first reply's verdict and which reader read it, so the report counts
first-reply invalids, re-asks and final invalids apart and names the reader. Same budget,
limits, request keys and resume as generation: a resumed run skips items it has judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import ObjectSendStream
from rich.console import Console

from ..batch.modes import SendNow
from ..batch.run import run_in_batches
from ..config import RunConfig
from ..cost.prices import format_usd
from ..cost.run_price import resolve_price
from ..crew import crew_size, run_crew
from ..endings import closing, with_failed_work
from ..errors import UsageError
from ..llm.capabilities import JSON_SCHEMA, MODES
from ..llm.strategy import CallMode
from ..llm.transport import Transport
from ..prompts import Template
from ..session import CallSession, OnRun, call_session, drive, resolve_model
from ..store import session_queries
from ..store.key_index import KeyIndex, key_prefix
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog, read_task
from ..tasks.stored import remember
from ..tasks.templates import task_template
from . import judge
from .config import EvalConfig, EvalOutcome, run_identity
from .items import items_from_files, items_from_store, partial_general_items
from .judging import judge_worker
from .readers import check_reader

if TYPE_CHECKING:
    pass

__all__ = ["evaluate"]


def _items(cfg: EvalConfig, spec: TaskSpec, session: CallSession) -> Iterator[judge.EvalItem]:
    source = (
        items_from_files(list(cfg.data), spec)
        if cfg.data
        else items_from_store(session.store, spec, gen_run=cfg.gen_run, labels=cfg.labels)
    )
    for n, item in enumerate(source):
        if cfg.limit is not None and n >= cfg.limit:
            return
        yield item


async def _feed(
    cfg: EvalConfig,
    spec: TaskSpec,
    session: CallSession,
    done: KeyIndex,
    send: ObjectSendStream[judge.EvalItem],
) -> None:
    st = session.stats
    total = 0
    async with send:
        for item in _items(cfg, spec, session):
            total += 1
            if session.flags.stop_admitting:
                return
            if item.key in done:
                st.bump(st.already_done, cfg.task)
                continue
            done.add(item.key)
            st.bump(st.admitted, cfg.task)
            await send.send(item)
        st.seeds_total[cfg.task] = total


def _partial_items(cfg: EvalConfig) -> str | None:
    """The general task from the store judges the items its label rule admits, as the
    exports do: items with fewer labels than ``--per-item`` are an error unless
    ``--allow-partial`` takes them; then the note saying how many."""
    if cfg.task != "general" or cfg.data or not Path(cfg.run.db).exists():
        return None
    from ..annotate.resolve import LabelRule
    from ..store.db import open_store

    labels = cfg.labels or LabelRule()
    with open_store(cfg.run.db, read_only=True) as store:
        partial = partial_general_items(store, labels)
    if partial and not labels.allow_partial:
        raise UsageError(labels.refused(partial))
    return labels.taken(partial)


async def evaluate(
    cfg: EvalConfig,
    *,
    task: TaskSpec | None = None,
    transport: Transport | None = None,
    console: Console | None = None,
    on_run: OnRun | None = None,
) -> EvalOutcome:
    """Judge ``cfg``'s items: the calls sent now, or with ``--batch`` in batch mode's passes
    (batch/run.py), each a session of ``_evaluate_session``. ``task`` is the task
    ``cfg.task`` names, read where the command starts; without it, ``cfg.task`` (a name or a
    task folder's path) is read here (the Python API's entry)."""
    spec = read_task(cfg.task, TaskCatalog()) if task is None else task
    if cfg.run.batch is None:
        return await _evaluate_session(
            cfg, spec, SendNow(), transport=transport, console=console, on_run=on_run
        )
    cfg = (await _prepare(cfg, spec, transport))[0]  # checked, its model settled, first
    return await run_in_batches(
        partial(_batch_pass, cfg, spec),
        cfg.run,
        resolve_price(cfg.run).price,
        transport=transport,
        console=console,
        on_run=on_run,
    )


async def _batch_pass(
    cfg: EvalConfig,
    spec: TaskSpec,
    run: RunConfig,
    calls: CallMode,
    *,
    transport: Transport,
    console: Console,
    on_run: OnRun | None,
) -> EvalOutcome:
    """A planning pass of batch mode: a session with the pass's run settings."""
    return await _evaluate_session(
        replace(cfg, run=run), spec, calls, transport=transport, console=console, on_run=on_run
    )


async def _prepare(
    cfg: EvalConfig, spec: TaskSpec, transport: Transport | None
) -> tuple[EvalConfig, Template, Template | None, str | None]:
    """``cfg`` checked, with its model settled (before its identity is made); its judge
    templates; the note on partly labelled items taken."""
    cfg = replace(cfg, task=spec.name)  # a task folder's path: its name
    if cfg.scoring not in ("parse", "logprobs"):
        raise UsageError(f"--scoring must be parse or logprobs, not {cfg.scoring!r}")
    check_reader(cfg.read)
    if cfg.structured not in MODES:
        raise UsageError(f"--structured must be one of {', '.join(MODES)}, not {cfg.structured!r}")
    template = task_template(spec, judge.template_name(spec, cfg.strategy), cfg.run.prompts_dir)
    again = (
        None
        if cfg.scoring == "logprobs"
        else task_template(spec, judge.again_template_name(spec, cfg.strategy), cfg.run.prompts_dir)
    )
    if cfg.data:  # fail fast on unreadable input, before a run is opened
        next(iter(items_from_files(list(cfg.data), spec)), None)
    taken = _partial_items(cfg)  # likewise: partly labelled general items, refused unasked
    cfg = replace(cfg, run=await resolve_model(cfg.run, transport))  # before its identity
    return cfg, template, again, taken


async def _evaluate_session(
    cfg: EvalConfig,
    spec: TaskSpec,
    calls: CallMode,
    *,
    transport: Transport | None,
    console: Console | None,
    on_run: OnRun | None,
) -> EvalOutcome:
    """One session judging ``cfg``'s items (of the task ``spec``), its calls made as
    ``calls`` says."""
    cfg, template, again, taken = await _prepare(cfg, spec, transport)
    async with call_session(
        cfg.run,
        kind="eval",
        identity=run_identity(cfg, template),
        tasks=cfg.task,
        calls=calls,
        run_price=resolve_price(cfg.run),
        transport=transport,
        on_run=on_run,
        modes={JSON_SCHEMA: cfg.structured},
    ) as session:
        remember(session.store, spec)
        rows = session_queries.judged_item_keys(session.store, session.run_id)
        done = KeyIndex(key_prefix(r[0]) for r in rows)
        session.stats.seeds_total[cfg.task] = cfg.limit
        session.stats.words.update(
            seeds="items", sampled="judged", rejected="invalid", acceptance="valid", per="per item"
        )

        async def pipeline() -> None:
            tx, rx = anyio.create_memory_object_stream[judge.EvalItem](16)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_feed, cfg, spec, session, done, tx)
                async with rx:  # workers as the endpoints take calls at once (halugen/crew.py)
                    await run_crew(
                        lambda: judge_worker(cfg, spec, session, template, rx.clone(), again),
                        lambda: crew_size(session.pool.wanted()),
                    )

        try:
            status, message = await drive(
                session, pipeline, progress=cfg.run.progress, console=console
            )
        except UsageError:
            raise
        session.notes.extend(session.capabilities.notes())
        if taken:
            session.notes.append(taken)
        session.store.writer.flush_blocking()
        judged = session_queries.judgement_count(session.store, session.run_id)
        spent = format_usd(session.store.spent(session.run_id))
        if status == "done" and session.stats.seeds_total.get(cfg.task) == 0:
            status = "input_error"
            where = (
                "the data files hold no items"
                if cfg.data
                else f"the store has no {cfg.task} samples"
                + (f" of run {cfg.gen_run}" if cfg.gen_run else "")
                + " (run 'halugen run' first, or give --data)"
            )
            message = f"nothing to judge: {where}"
        status, message = with_failed_work(
            status,
            message,
            failed=session.stats.failed.get(cfg.task, 0),
            what="item(s)",
            cause=session.stats.main_failure(),
        )
        message, exit_code = closing(
            status,
            what=f"eval run {session.run_id} ({cfg.task}/{cfg.strategy} with {cfg.run.model})",
            summary=f"{judged} item(s) judged; spent {spent}",
            detail=message,
            budget=format_usd(session.ledger.budget),
        )
        session.store.update_run(session.run_id, status=status, status_detail=message[:1000])
        return EvalOutcome(session.run_id, status, message, exit_code, judged, tuple(session.notes))
