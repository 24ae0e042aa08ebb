"""Filtering stage: a judge picks the most plausible of a seed's candidates.

The judge sees the candidates in an order drawn from an RNG seeded by (run seed, seed key)
and never the right answer, so it picks the candidate closest to the truth. Identical or
single valid candidates need no call. Unparseable verdicts are recorded, never data.
"""

from __future__ import annotations

import orjson
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from ..errors import BudgetExhausted
from ..llm.calls import CallFailure
from ..records import Candidate, ChatRequest, Judgement, Rejected, Sample, Seed
from ..tasks.base import normalise
from .context import GenContext

__all__ = ["decide", "run_filter_stage"]


async def run_filter_stage(
    ctx: GenContext,
    receive: ObjectReceiveStream[tuple[Seed, list[Candidate]]],
    send: ObjectSendStream[Sample | Rejected],
) -> None:
    async with receive, send:
        async for seed, candidates in receive:
            try:
                outcome = await decide(ctx, seed, candidates)
            except BudgetExhausted:
                ctx.flags.budget_exhausted = True
                continue  # pending: its candidates are stored, a resume only filters
            await send.send(outcome)


async def decide(ctx: GenContext, seed: Seed, candidates: list[Candidate]) -> Sample | Rejected:
    task = ctx.tasks[seed.task]
    # A call that failed after its retries says nothing about the seed: deciding from the
    # other candidate alone would make the dataset depend on provider faults. The seed stays
    # 'failed' (its good candidates are stored) and the next run samples the missing one.
    broken = [c for c in candidates if c.status == "call_failed"]
    if broken:
        return Rejected(seed, "sample", "call_failed", broken[0].detail, tuple(candidates))
    valid: list[Candidate] = []
    seen: set[str] = set()
    for cand in candidates:
        if cand.ok and normalise(cand.text) not in seen:
            seen.add(normalise(cand.text))
            valid.append(cand)
    if not valid:
        statuses = ", ".join(f"{c.index}:{c.status}" for c in candidates)
        failed = [c for c in candidates if c.status == "context_length"]
        if failed:
            return Rejected(seed, "sample", failed[0].status, failed[0].detail, tuple(candidates))
        return Rejected(seed, "sample", "no_valid_candidate", statuses, tuple(candidates))
    if len(valid) == 1:
        oks = [c for c in candidates if c.ok]
        method = "identical" if len(oks) > 1 else "only_valid"
        judgement = Judgement(seed.key, (valid[0].index,), valid[0].index, method)
        _record(ctx, seed, judgement)
        return _sample(ctx, seed, valid[0], judgement)

    order = list(range(len(valid)))
    ctx.rng(seed.key, "filter-order").shuffle(order)
    shown = [valid[i] for i in order]
    template = task.filter_template
    values = task.spec.filter_values(seed.fields, [c.text for c in shown])
    request = ChatRequest(
        model=ctx.model,
        messages=template.render(values),
        temperature=ctx.judge.temperature,
        max_tokens=ctx.judge.max_tokens,
        top_p=ctx.judge.top_p,
    )
    est = template.estimate_tokens(values, ctx.runner.counter)
    ctx.stats.bump(ctx.stats.filter_calls, seed.task)
    result = await ctx.runner.call(
        request, stage="filter", task=seed.task, seed_key=seed.key, est_prompt_tokens=est
    )
    shown_idx = tuple(c.index for c in shown)
    if isinstance(result, CallFailure):
        judgement = Judgement(
            seed.key,
            shown_idx,
            None,
            "call_failed",
            request.key,
            template.hash,
            "",
            result.message[:300],
        )
        _record(ctx, seed, judgement)
        return Rejected(
            seed, "filter", result.reason, result.message[:300], tuple(candidates), judgement
        )
    if result.finish_reason == "content_filter":  # an outcome, not a parsing problem
        judgement = Judgement(
            seed.key, shown_idx, None, "content_filter", request.key, template.hash
        )
        _record(ctx, seed, judgement)
        return Rejected(seed, "filter", "judge_content_filter", "", tuple(candidates), judgement)
    position = task.spec.parse_choice(result.text, [c.text for c in shown])
    if position is None:
        judgement = Judgement(
            seed.key, shown_idx, None, "unparseable", request.key, template.hash, result.text[:2000]
        )
        _record(ctx, seed, judgement)
        return Rejected(
            seed, "filter", "judge_unparseable", result.text[:300], tuple(candidates), judgement
        )
    chosen = shown[position - 1]
    judgement = Judgement(
        seed.key, shown_idx, chosen.index, "judge", request.key, template.hash, result.text[:2000]
    )
    _record(ctx, seed, judgement)
    return _sample(ctx, seed, chosen, judgement)


def _sample(ctx: GenContext, seed: Seed, chosen: Candidate, judgement: Judgement) -> Sample:
    spec = ctx.tasks[seed.task].spec
    fields = {name: seed.fields[name] for name in spec.seed_fields}
    fields[spec.hallucinated_field] = chosen.text
    return Sample(seed=seed, candidate=chosen, judgement=judgement, fields=fields)


def _record(ctx: GenContext, seed: Seed, j: Judgement) -> None:
    ctx.writer.put(
        [
            (
                "filter_decisions",
                (
                    ctx.run_id,
                    seed.task,
                    seed.key,
                    orjson.dumps(list(j.order)).decode(),
                    j.chosen,
                    j.method,
                    j.call_key or None,
                    j.template_hash or None,
                    j.raw or None,
                    j.detail or None,
                ),
            )
        ]
    )
