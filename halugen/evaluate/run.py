"""A recognition experiment: can model M tell hallucinated answers from right ones?

Per item, an RNG seeded by (eval seed, item key) decides which answer is shown (or, for
the contrast strategy, their order); the model's verdict is parsed (or scored from
logprobs) and stored with the truth in ``judgements``. Same budget, limits, request keys
and resume as generation: a resumed run skips items it has judged.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from rich.console import Console

from ..budget import format_usd
from ..config import RunConfig
from ..crew import crew_size, run_crew
from ..errors import BudgetExhausted, UsageError
from ..llm.calls import CallFailure
from ..llm.capabilities import MODES, structured_outputs
from ..llm.transport import Transport
from ..prompts import Template, load_template
from ..records import ChatRequest, fingerprint
from ..session import CallSession, call_session, closing, drive, resolve_model
from ..store.db import KeyIndex, key_prefix
from . import judge
from .items import check_task, items_from_files, items_from_store
from .logprobs_check import LogprobsCheck
from .verdicts import parse_contrast, parse_verdict, verdict_from_logprobs

__all__ = ["EvalConfig", "EvalOutcome", "evaluate"]


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    run: RunConfig  # endpoint, model, budget, limits, store, eval seed (run_seed), resume
    task: str
    strategy: str = "plain"
    data: tuple[str, ...] = ()  # HaluEval files; empty: the samples in the store
    gen_run: str | None = None  # only samples of this generation run
    scoring: str = "parse"  # parse | logprobs
    limit: int | None = None
    structured: str = "auto"  # ask for a JSON verdict: auto (when supported) | on | off


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
    }


def _items(cfg: EvalConfig, session: CallSession) -> Iterator[judge.EvalItem]:
    source = (
        items_from_files(list(cfg.data), cfg.task)
        if cfg.data
        else items_from_store(session.store, cfg.task, gen_run=cfg.gen_run)
    )
    for n, item in enumerate(source):
        if cfg.limit is not None and n >= cfg.limit:
            return
        yield item


def _rng(seed: int, item_key: str) -> random.Random:
    return random.Random(fingerprint([seed, item_key, "shown"], size=16))


async def _judge_one(
    cfg: EvalConfig, session: CallSession, template: Template, item: judge.EvalItem
) -> _Judged | None:
    rng = _rng(cfg.run.run_seed, item.key)
    right, hallucinated = judge.shown_texts(item)
    if cfg.strategy == "contrast":
        hallucinated_first = rng.random() < 0.5
        order = (hallucinated, right) if hallucinated_first else (right, hallucinated)
        values = judge.judge_values(cfg.task, cfg.strategy, item, "", order)
        shown, truth, shown_text = "both", True, None
    elif cfg.task == "general":
        if item.human_label is None:
            return None
        values = judge.judge_values(cfg.task, cfg.strategy, item, right)
        shown, truth, shown_text = "response", item.human_label, right
    else:
        show_hallucinated = rng.random() < 0.5
        shown_text = hallucinated if show_hallucinated else right
        values = judge.judge_values(cfg.task, cfg.strategy, item, shown_text)
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
    )
    est = template.estimate_tokens(values, session.counter)
    if logprobs:  # the verdict is read from the logprobs: no JSON schema, and a check first
        result = await _logprobs_check(session, cfg).call(
            request, stage="judge", task=cfg.task, seed_key=item.key, est_prompt_tokens=est
        )
    else:
        structured = structured_outputs(session.runner, cfg.run.model, cfg.structured)
        result, _ = await structured.call(
            request,
            judge.response_format(cfg.strategy),
            stage="judge",
            task=cfg.task,
            seed_key=item.key,
            est_prompt_tokens=est,
        )
    if isinstance(result, CallFailure):
        return None  # logged in calls; the item stays unjudged and a resume retries it
    p_yes = None
    if cfg.strategy == "contrast":
        pick = parse_contrast(result.text)
        verdict = (
            "invalid" if pick is None else ("yes" if (pick == 1) == hallucinated_first else "no")
        )
    elif logprobs and result.logprobs:
        verdict, p_yes = verdict_from_logprobs(result.logprobs[0])
    else:
        verdict = parse_verdict(result.text)
    return _Judged(
        item,
        shown,
        truth,
        verdict,
        p_yes,
        len(shown_text) if shown_text is not None else None,
        result.text[:4000],
        request.key,
    )


_CHECKS: dict[int, LogprobsCheck] = {}


def _logprobs_check(session: CallSession, cfg: EvalConfig) -> LogprobsCheck:
    check = _CHECKS.get(id(session.runner))
    if check is None or check._runner is not session.runner:
        check = _CHECKS[id(session.runner)] = LogprobsCheck(session.runner, cfg.run.base_url)
    return check


async def _worker(
    cfg: EvalConfig,
    session: CallSession,
    template: Template,
    receive: ObjectReceiveStream[judge.EvalItem],
) -> None:
    st = session.stats
    async with receive:
        async for item in receive:
            if session.flags.interrupted:
                continue
            try:
                judged = await _judge_one(cfg, session, template, item)
            except BudgetExhausted:
                session.flags.budget_exhausted = True
                continue
            if judged is None:
                st.bump(st.failed, cfg.task)
                continue
            session.store.writer.put(
                [
                    (
                        "judgements",
                        (
                            session.run_id,
                            cfg.task,
                            item.key,
                            item.item_id,
                            cfg.strategy,
                            cfg.run.model,
                            judged.shown,
                            judged.truth,
                            judged.verdict,
                            judged.p_yes,
                            judged.shown_length,
                            judged.raw,
                            judged.call_key,
                            template.hash,
                        ),
                    )
                ]
            )
            st.bump(st.sampled if judged.verdict != "invalid" else st.rejected, cfg.task)


async def _feed(
    cfg: EvalConfig, session: CallSession, done: KeyIndex, send: ObjectSendStream[judge.EvalItem]
) -> None:
    st = session.stats
    total = 0
    async with send:
        for item in _items(cfg, session):
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


async def evaluate(
    cfg: EvalConfig,
    *,
    transport: Transport | None = None,
    console: Console | None = None,
    on_run: Callable[[str, bool], None] | None = None,
) -> EvalOutcome:
    check_task(cfg.task)
    if cfg.scoring not in ("parse", "logprobs"):
        raise UsageError(f"--scoring must be parse or logprobs, not {cfg.scoring!r}")
    if cfg.structured not in MODES:
        raise UsageError(f"--structured must be one of {', '.join(MODES)}, not {cfg.structured!r}")
    template = load_template(
        cfg.task, judge.template_name(cfg.task, cfg.strategy), cfg.run.prompts_dir
    )
    if cfg.data:  # fail fast on unreadable input, before a run is opened
        next(iter(items_from_files(list(cfg.data), cfg.task)), None)
    cfg = replace(cfg, run=await resolve_model(cfg.run, transport))  # before its identity
    if cfg.run.batch is not None and cfg.run.batch.plan is None:  # --batch
        from ..batch.run import pass_config, run_in_batches

        return await run_in_batches(
            lambda b, first, quiet: evaluate(
                replace(cfg, run=pass_config(cfg.run, b)),
                transport=transport,
                on_run=first,
                console=quiet,
            ),
            cfg.run,
            transport=transport,
            console=console,
            on_run=on_run,
        )
    async with call_session(
        cfg.run,
        kind="eval",
        identity=_identity(cfg, template),
        tasks=cfg.task,
        transport=transport,
        on_run=on_run,
    ) as session:
        rows = session.store.query(
            "SELECT item_key FROM judgements WHERE run_id = ?", [session.run_id]
        )
        done = KeyIndex(key_prefix(r[0]) for r in rows)
        session.stats.seeds_total[cfg.task] = cfg.limit
        session.stats.words.update(
            seeds="items", sampled="judged", rejected="invalid", acceptance="valid", per="per item"
        )

        async def pipeline() -> None:
            tx, rx = anyio.create_memory_object_stream[judge.EvalItem](16)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_feed, cfg, session, done, tx)
                async with rx:  # workers as the endpoints take calls at once (halugen/crew.py)
                    await run_crew(
                        lambda: _worker(cfg, session, template, rx.clone()),
                        lambda: crew_size(session.pool.wanted()),
                    )

        try:
            status, message = await drive(
                session, pipeline, progress=cfg.run.progress, console=console
            )
        except UsageError:
            raise
        note = structured_outputs(session.runner, cfg.run.model, cfg.structured).note
        if note:
            session.notes.append(note)
        session.store.writer.flush_blocking()
        judged = session.store.query(
            "SELECT count(*) FROM judgements WHERE run_id = ?", [session.run_id]
        )[0][0]
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
        message, exit_code = closing(
            status,
            message,
            what=f"eval run {session.run_id} ({cfg.task}/{cfg.strategy} with {cfg.run.model})",
            summary=f"{judged} item(s) judged; spent {spent}",
        )
        session.store.update_run(session.run_id, status=status, status_detail=message[:1000])
        return EvalOutcome(session.run_id, status, message, exit_code, judged, tuple(session.notes))
