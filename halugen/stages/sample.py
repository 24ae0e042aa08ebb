"""Sampling stage: two hallucinated candidates per seed, one per instruction style."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anyio.abc import ObjectReceiveStream, ObjectSendStream

from ..errors import RunStopping
from ..llm.calls import CallFailure
from ..records import Candidate, ChatRequest, Seed
from ..store.rows import CandidateRow
from ..tasks.base import TaskSpec
from ..tasks.loaded import LoadedTask
from ..tasks.steps import check, read_reply
from .context import GenContext
from .follow_ups import load_follow_ups

__all__ = ["run_sample_stage", "sample_seed"]

# A stored candidate is kept on resume unless its call failed (then it is sampled again,
# which a later session may get through) or it did not fit the context window (its seed
# comes back only when the window changed); stored usable ones are checked again with the
# current guards, which cost no call.
RETRY_STATUSES = frozenset({"call_failed", "context_length"})

# A candidate a guard turns away (out of form, or not wrong) is asked for again with a new
# request seed (with ``--reask explain``, also the rejected reply followed by a line naming
# the failed guard: follow_ups.py), up to this many asks in all per candidate, each within
# the run's budget like any call; the last answer is what is stored, with the reasons of the
# ones before it.
GUARD_ATTEMPTS = 3


async def run_sample_stage(
    ctx: GenContext,
    receive: ObjectReceiveStream[Seed],
    send: ObjectSendStream[tuple[Seed, list[Candidate]]],
) -> None:
    """One worker: for each seed, sample its candidates and pass them on."""
    async with receive, send:
        async for seed in receive:
            try:
                candidates = await sample_seed(ctx, seed)
            except RunStopping as stop:  # budget used up or Ctrl-C
                ctx.flags.stopped_by(stop)
                continue  # the seed stays pending; the next run finishes it
            await send.send((seed, candidates))


async def sample_seed(ctx: GenContext, seed: Seed) -> list[Candidate]:
    task = ctx.tasks[seed.task]
    stored = {
        row[0]: row
        for row in ctx.resumed_candidates.pop(seed.key, [])
        if row[6] not in RETRY_STATUSES
    }
    results: list[Candidate | None] = [None] * len(task.sample_templates)
    for idx, row in stored.items():
        if idx < len(results):
            rechecked = _recheck(task.spec, seed, _candidate_from_row(seed, row))
            if rechecked.status != row[6]:
                _store(ctx, seed, rechecked)  # the new verdict is what status counts
            results[idx] = rechecked

    # One candidate after the other: a seed's calls need no parallelism of their own, the
    # worker pool keeps the endpoint busy (and a task group per seed costs CPU).
    for idx, cand in enumerate(results):
        if cand is None:
            results[idx] = await _sample_one(ctx, task, seed, idx)
    return [c for c in results if c is not None]


async def _sample_one(ctx: GenContext, task: LoadedTask, seed: Seed, idx: int) -> Candidate:
    turned_away: list[str] = []
    rejected: Candidate | None = None
    for attempt in range(GUARD_ATTEMPTS):
        cand = await _ask(ctx, task, seed, idx, attempt, rejected)
        if not _by_guard(cand):
            break
        turned_away.append(cand.status)
        rejected = cand if ctx.sampling.reask == "explain" else None
    if turned_away and cand.ok:
        cand = replace(cand, detail=f"asked again after: {', '.join(turned_away)}")
    elif _by_guard(cand) and len(turned_away) > 1:
        cand = replace(cand, detail=f"asked {len(turned_away)} times: {', '.join(turned_away)}")
    _store(ctx, seed, cand)
    return cand


def _by_guard(cand: Candidate) -> bool:
    """Was ``cand`` read, then turned away by the task's checks (its status a guard's)?"""
    return bool(cand.text) and cand.status not in ("ok", "truncated")


async def _ask(
    ctx: GenContext,
    task: LoadedTask,
    seed: Seed,
    idx: int,
    attempt: int,
    rejected: Candidate | None = None,
) -> Candidate:
    """One sampling call; after a guard's rejection, the rejected reply and a line naming
    the guard follow the template's messages."""
    spec = task.spec
    template = task.sample_templates[idx]
    messages = template.render(seed.fields)
    est = template.estimate_tokens(seed.fields, ctx.runner.counter)
    if rejected is not None:
        follow_ups = load_follow_ups()
        reply = rejected.raw or rejected.text
        messages = (*messages, *follow_ups.messages(reply, rejected.status))
        est += follow_ups.estimate_tokens(reply, rejected.status, ctx.runner.counter)
    request = ChatRequest(
        model=ctx.model,
        messages=messages,
        temperature=ctx.sampling.temperature,
        max_tokens=ctx.sampling.max_tokens,
        top_p=ctx.sampling.top_p,
        seed=ctx.request_seed(seed.key, idx, attempt),
        cache_key=ctx.cache_key(template.name),
        index=idx,
    )
    result = await ctx.runner.call(
        request, stage="sample", task=seed.task, seed_key=seed.key, est_prompt_tokens=est
    )
    base: dict[str, Any] = dict(
        seed_key=seed.key,
        index=idx,
        template=template.name,
        template_hash=template.hash,
        call_key=request.key,
    )
    if isinstance(result, CallFailure):
        return Candidate(
            **base, text="", pattern="", status=result.reason, detail=result.message[:300]
        )
    cand = _candidate_from_reply(spec, seed, base, result.text, result.finish_reason)
    if cand.status == "truncated" and result.completion_tokens < request.max_tokens:
        # cut before max_tokens: the server shortened the reply to fit its context
        cand = replace(
            cand,
            detail=f"the server cut the reply at {result.completion_tokens} tokens to fit "
            f"its context window (max_tokens was {request.max_tokens}); a larger window "
            f"or a shorter record avoids it",
        )
    return cand


def _store(ctx: GenContext, seed: Seed, cand: Candidate) -> None:
    ctx.writer.put(
        [
            CandidateRow(
                run_id=ctx.run_id,
                task=seed.task,
                seed_key=seed.key,
                idx=cand.index,
                template=cand.template,
                template_hash=cand.template_hash,
                call_key=cand.call_key,
                text=cand.text,
                pattern=cand.pattern,
                status=cand.status,
                detail=cand.detail,
                raw=cand.raw,
            )
        ]
    )


def _candidate_from_reply(
    spec: TaskSpec, seed: Seed, base: dict, text: str, finish: str
) -> Candidate:
    if finish == "content_filter":
        return Candidate(**base, text="", pattern="", status="content_filter", raw=text)
    parsed = read_reply(spec, text)
    if parsed.problem and finish == "length":  # cut off before its answer: not malformed
        return Candidate(
            **base,
            text="",
            pattern=parsed.pattern,
            status="truncated",
            detail="the reply hit max_tokens before its answer",
            raw=text,
        )
    if parsed.problem:
        status = "refusal" if parsed.problem == "refusal" else "unparseable"
        return Candidate(
            **base, text="", pattern=parsed.pattern, status=status, detail=parsed.problem, raw=text
        )
    answer = " ".join(parsed.answer.split())
    if finish == "length":
        return Candidate(
            **base,
            text=answer,
            pattern=parsed.pattern,
            status="truncated",
            detail="the reply hit max_tokens",
            raw=text,
        )
    # equality with the right text, containment, form and length: the task's guards
    problem = check(spec, seed.fields, answer)
    return Candidate(**base, text=answer, pattern=parsed.pattern, status=problem or "ok", raw=text)


def _recheck(spec: TaskSpec, seed: Seed, cand: Candidate) -> Candidate:
    """A stored usable candidate under today's guards (a resumed run made before a guard
    existed must not turn its candidates into data unchecked)."""
    if not cand.ok:
        return cand
    problem = check(spec, seed.fields, cand.text)
    return replace(cand, status=problem) if problem else cand


def _candidate_from_row(seed: Seed, row: tuple) -> Candidate:
    idx, template, template_hash, call_key, text, pattern, status, detail, raw = row
    return Candidate(
        seed_key=seed.key,
        index=idx,
        template=template or "",
        template_hash=template_hash or "",
        call_key=call_key or "",
        text=text or "",
        pattern=pattern or "",
        status=status,
        detail=detail or "",
        raw=raw or "",
    )
