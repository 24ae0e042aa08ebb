"""Sampling stage: two hallucinated candidates per seed, one per instruction style."""

from __future__ import annotations

from anyio.abc import ObjectReceiveStream, ObjectSendStream

from ..errors import BudgetExhausted
from ..llm.calls import CallFailure
from ..records import Candidate, ChatRequest, Seed
from ..tasks.base import TaskSpec, normalise
from .context import GenContext, LoadedTask

__all__ = ["run_sample_stage", "sample_seed"]

# candidate statuses that a resumed run keeps (anything else is sampled again)
FINAL_STATUSES = frozenset(
    {
        "ok",
        "unparseable",
        "refusal",
        "equals_right_answer",
        "content_filter",
        "truncated",
        "too_long",
        # not "context_length": a seed comes back only when the window changed, and then
        # its candidates are asked for again
    }
)


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
            except BudgetExhausted:
                ctx.flags.budget_exhausted = True
                continue  # the seed stays pending; a resume with more budget finishes it
            await send.send((seed, candidates))


async def sample_seed(ctx: GenContext, seed: Seed) -> list[Candidate]:
    task = ctx.tasks[seed.task]
    stored = {
        row[0]: row for row in ctx.resumed_candidates.pop(seed.key, []) if row[6] in FINAL_STATUSES
    }
    results: list[Candidate | None] = [None] * len(task.sample_templates)
    for idx, row in stored.items():
        if idx < len(results):
            results[idx] = _candidate_from_row(seed, row)

    # One candidate after the other: a seed's calls need no parallelism of their own, the
    # worker pool keeps the endpoint busy (and a task group per seed costs CPU).
    for idx, cand in enumerate(results):
        if cand is None:
            results[idx] = await _sample_one(ctx, task, seed, idx)
    return [c for c in results if c is not None]


async def _sample_one(ctx: GenContext, task: LoadedTask, seed: Seed, idx: int) -> Candidate:
    spec = task.spec
    template = task.sample_templates[idx]
    request = ChatRequest(
        model=ctx.model,
        messages=template.render(seed.fields),
        temperature=ctx.sampling.temperature,
        max_tokens=ctx.sampling.max_tokens,
        top_p=ctx.sampling.top_p,
        seed=ctx.request_seed(seed.key, idx),
        index=idx,
    )
    est = template.estimate_tokens(seed.fields, ctx.runner.counter)
    result = await ctx.runner.call(
        request, stage="sample", task=seed.task, seed_key=seed.key, est_prompt_tokens=est
    )
    base = dict(
        seed_key=seed.key,
        index=idx,
        template=template.name,
        template_hash=template.hash,
        call_key=request.key,
    )
    if isinstance(result, CallFailure):
        cand = Candidate(
            **base, text="", pattern="", status=result.reason, detail=result.message[:300]
        )
    else:
        cand = _candidate_from_reply(spec, seed, base, result.text, result.finish_reason)
    ctx.writer.put(
        [
            (
                "candidates",
                (
                    ctx.run_id,
                    seed.task,
                    seed.key,
                    idx,
                    cand.template,
                    cand.template_hash,
                    cand.call_key,
                    cand.text,
                    cand.pattern,
                    cand.status,
                    cand.detail,
                    cand.raw,
                ),
            )
        ]
    )
    return cand


def _candidate_from_reply(
    spec: TaskSpec, seed: Seed, base: dict, text: str, finish: str
) -> Candidate:
    if finish == "content_filter":
        return Candidate(**base, text="", pattern="", status="content_filter", raw=text)
    parsed = spec.parse_candidate(text)
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
    right = seed.fields.get(spec.right_field, "")
    if normalise(answer) == normalise(right):
        return Candidate(
            **base, text=answer, pattern=parsed.pattern, status="equals_right_answer", raw=text
        )
    if spec.check_candidate is not None:
        problem = spec.check_candidate(seed.fields, answer)
        if problem:
            return Candidate(**base, text=answer, pattern=parsed.pattern, status=problem, raw=text)
    return Candidate(**base, text=answer, pattern=parsed.pattern, raw=text)


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
