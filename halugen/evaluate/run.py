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

import dataclasses
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from rich.console import Console

from ..batch.modes import SendNow
from ..batch.run import run_in_batches
from ..config import RunConfig
from ..cost.prices import format_usd
from ..crew import crew_size, run_crew
from ..endings import closing, with_failed_work
from ..errors import RunStopping, UsageError
from ..llm.calls import CallFailure
from ..llm.capabilities import JSON_SCHEMA, LOGPROBS, MODES
from ..llm.endpoint import prompt_cache_key, takes_cache_key
from ..llm.strategy import DEFERRED, CallMode
from ..llm.transport import Transport
from ..options.table import default
from ..prompts import Template
from ..records import ChatRequest, ChatResult, fingerprint
from ..session import CallSession, OnRun, call_session, drive, resolve_model
from ..store import session_queries
from ..store.db import KeyIndex, key_prefix
from ..store.rows import JudgementRow
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog, read_task
from ..tasks.stored import remember
from ..tasks.templates import task_template
from . import judge
from .items import items_from_files, items_from_store, partial_general_items
from .readers import check_reader, read_pick, read_verdict
from .verdicts import verdict_from_logprobs

if TYPE_CHECKING:
    from ..annotate.resolve import LabelRule

__all__ = ["EvalConfig", "EvalOutcome", "evaluate"]


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    run: RunConfig  # endpoint, model, budget, limits, store, eval seed (run_seed), resume
    task: str
    # the defaults are the settings' (options/recognition.py, options/run_*.py)
    strategy: str = default("strategy")
    data: tuple[str, ...] = default("data")  # HaluEval files; empty: the samples in the store
    gen_run: str | None = default("gen_run")  # only samples of this generation run
    scoring: str = default("scoring")  # parse | logprobs
    limit: int | None = default("limit")
    structured: str = default("structured")  # a JSON verdict: auto (when supported) | on | off
    read: str = default("read")  # strict (the reply contract only) | lenient (interprets prose)
    # the general task from the store: which annotated items count (--per-item,
    # --allow-partial); None: the default rule, which refuses items with too few labels
    labels: LabelRule | None = None


@dataclass(frozen=True)
class EvalOutcome:
    run_id: str
    status: str
    message: str
    exit_code: int
    judged: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Judged:
    item: judge.EvalItem
    shown: str
    truth: bool
    verdict: str
    p_yes: float | None
    shown_length: int | None
    raw: str
    call_key: str
    asked: int = 1  # 2: the first reply was unreadable and the judge was asked again
    first_verdict: str = ""  # the first reply's verdict ("" when asked once: the same)
    first_raw: str = ""  # the first reply, when asked again


def _identity(cfg: EvalConfig, template: Template) -> dict[str, object]:
    r = cfg.run
    return {
        "task": cfg.task,
        "strategy": cfg.strategy,
        "data": list(cfg.data),
        "gen_run": cfg.gen_run,
        "scoring": cfg.scoring,
        "model": r.model,  # not the endpoint: a moved server or a fleet continues the run
        "seed": r.run_seed,
        "template": template.hash,
        # only when forced, so runs made before the option existed resume as they were
        **({"structured": cfg.structured} if cfg.structured != "auto" else {}),
        # likewise: the default reader is strict; a lenient run is another run
        **({"read": cfg.read} if cfg.read != "strict" else {}),
        # likewise: a run that took partly labelled items judged another set of items
        **_labels_identity(cfg),
    }


def _labels_identity(cfg: EvalConfig) -> dict[str, object]:
    from ..annotate.resolve import LabelRule

    labels = cfg.labels
    if cfg.task != "general" or cfg.data or labels is None or labels == LabelRule():
        return {}
    return {"labels": {"per_item": labels.per_item, "allow_partial": labels.allow_partial}}


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


def _rng(seed: int, item_key: str) -> random.Random:
    return random.Random(fingerprint([seed, item_key, "shown"], size=16))


async def _judge_one(
    cfg: EvalConfig,
    spec: TaskSpec,
    session: CallSession,
    template: Template,
    item: judge.EvalItem,
    again: Template | None = None,
) -> _Judged | CallFailure | None:
    """The item judged; the failure of a call it needed; None for an item without a label."""
    rng = _rng(cfg.run.run_seed, item.key)
    right, hallucinated = judge.shown_texts(spec, item)
    if cfg.strategy == "contrast":
        hallucinated_first = rng.random() < 0.5
        order = (hallucinated, right) if hallucinated_first else (right, hallucinated)
        values = judge.judge_values(spec, cfg.strategy, item, "", order)
        shown, truth, shown_text = "both", True, None
    elif cfg.task == "general":
        if item.human_label is None:
            return None
        values = judge.judge_values(spec, cfg.strategy, item, right)
        shown, truth, shown_text = "response", item.human_label, right
    else:
        show_hallucinated = rng.random() < 0.5
        shown_text = hallucinated if show_hallucinated else right
        values = judge.judge_values(spec, cfg.strategy, item, shown_text)
        shown = "hallucinated" if show_hallucinated else "right"
        truth = show_hallucinated
    logprobs = cfg.scoring == "logprobs"
    request = ChatRequest(
        model=cfg.run.model,
        messages=template.render(values),
        temperature=0.0,
        max_tokens=judge.max_tokens_for(cfg.strategy),
        logprobs=logprobs,
        top_logprobs=5 if logprobs else None,
        cache_key=prompt_cache_key(template.name) if takes_cache_key(cfg.run.base_url) else None,
    )
    est = template.estimate_tokens(values, session.counter)
    where = dict(stage="judge", task=cfg.task, seed_key=item.key)
    # the verdict read from the logprobs needs them and no JSON schema; else JSON if taken
    ready = (
        await _logprobs_given(session)
        if logprobs
        else await session.capabilities.formatted(request, judge.response_format(cfg.strategy))
    )
    if isinstance(ready, CallFailure):
        return ready  # the probe it waited for got no answer; a resume retries the item
    if isinstance(ready, ChatRequest):
        request = ready
    result = await session.calls.call(request, est_prompt_tokens=est, **where)
    if (
        logprobs
        and isinstance(result, ChatResult)
        and not (result.logprobs or result.from_cache or result.finish_reason == "content_filter")
    ):
        _no_logprobs(session, "a reply had none")
    if isinstance(result, CallFailure):
        return result  # logged in calls; the item stays unjudged and a resume retries it

    def read(text: str) -> str:
        if cfg.strategy != "contrast":
            return read_verdict(text, cfg.read)
        pick = read_pick(text, cfg.read)
        return "invalid" if pick is None else ("yes" if (pick == 1) == hallucinated_first else "no")

    p_yes = None
    if logprobs and result.logprobs:
        verdict, p_yes = verdict_from_logprobs(result.logprobs[0], reader=cfg.read)
    else:
        verdict = read(result.text)
    first_verdict, first_raw, asked = "", "", 1
    if (
        verdict == "invalid"
        and not logprobs  # a probability is not a text to ask about again
        and again is not None
        and result.finish_reason != "content_filter"  # an outcome, not an unreadable reply
    ):
        # the reply says nothing readable: ask once more, stricter, in the same conversation
        request = dataclasses.replace(
            request,
            messages=(
                *request.messages,
                {"role": "assistant", "content": result.text},
                *again.render({}),
            ),
        )
        est += session.counter.count(result.text) + again.estimate_tokens({}, session.counter)
        second = await session.calls.call(request, est_prompt_tokens=est, **where)
        if isinstance(second, CallFailure):
            return second  # as for the first call: unjudged, a resume asks again
        first_verdict, first_raw, asked = verdict, result.text, 2
        result, verdict = second, read(second.text)
    return _Judged(
        item,
        shown,
        truth,
        verdict,
        p_yes,
        len(shown_text) if shown_text is not None else None,
        result.text[:4000],
        request.key,
        asked,
        first_verdict,
        first_raw[:4000],
    )


async def _logprobs_given(session: CallSession) -> CallFailure | None:
    """Whether the endpoint gives logprobs is settled before the first judge call; a run
    that needs them stops with one line where it does not (never judging nothing)."""
    decision = await session.capabilities.decide(LOGPROBS)
    if isinstance(decision, CallFailure):
        return decision
    if not decision.supported:
        _no_logprobs(session, decision.detail)
    return None


def _no_logprobs(session: CallSession, why: str) -> None:
    raise UsageError(
        f"{session.pool.url} gives no logprobs ({why}); judge with --scoring parse instead"
    )


async def _worker(
    cfg: EvalConfig,
    spec: TaskSpec,
    session: CallSession,
    template: Template,
    receive: ObjectReceiveStream[judge.EvalItem],
    again: Template | None = None,
) -> None:
    st = session.stats
    async with receive:
        async for item in receive:
            if session.flags.interrupted:
                continue
            try:
                judged = await _judge_one(cfg, spec, session, template, item, again)
            except RunStopping as stop:  # budget used up or Ctrl-C: the item stays pending
                session.flags.stopped_by(stop)
                continue
            if judged is None or isinstance(judged, CallFailure):
                # a call deferred to a batch (batch mode's planning pass) has not failed
                if not (isinstance(judged, CallFailure) and judged.error_class == DEFERRED):
                    st.bump(st.failed, cfg.task)
                continue
            session.writer.put(
                [
                    JudgementRow(
                        run_id=session.run_id,
                        task=cfg.task,
                        item_key=item.key,
                        item_id=item.item_id,
                        strategy=cfg.strategy,
                        model=cfg.run.model,
                        shown=judged.shown,
                        truth=judged.truth,
                        verdict=judged.verdict,
                        p_yes=judged.p_yes,
                        shown_length=judged.shown_length,
                        raw=judged.raw,
                        call_key=judged.call_key,
                        template_hash=template.hash,
                        asked=judged.asked,
                        first_verdict=judged.first_verdict or judged.verdict,
                        first_raw=judged.first_raw or None,
                        reader=cfg.read,
                    )
                ]
            )
            st.bump(st.sampled if judged.verdict != "invalid" else st.rejected, cfg.task)


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
        identity=_identity(cfg, template),
        tasks=cfg.task,
        calls=calls,
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
                        lambda: _worker(cfg, spec, session, template, rx.clone(), again),
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
