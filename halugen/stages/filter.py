"""Filtering stage: a judge picks the most plausible of a seed's candidates.

The judge sees the candidates in an order drawn from an RNG seeded by (run seed, seed key)
and never the right answer, so it picks the candidate closest to the truth. Identical or
single valid candidates need no call. The judge is asked for the reply contract
(``reply_contract.choice_contract``): ``{"choice": n}`` as a JSON schema with an enum when the
session asks for JSON (``llm.capabilities``, settled before the first filter request), else
the last line ``Choice: n``. The pick is read strictly (``TaskSpec.parse_choice``): a reply
off the contract is unsure, followed once by a stricter instruction quoting the contract in
the same conversation (``prompts/<task>/filter_again.txt``) before the seed is rejected.
Unsure picks are recorded, never data.
"""

from __future__ import annotations

import dataclasses

import orjson
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from ..errors import RunStopping
from ..llm.calls import CallFailure
from ..prompts import Template
from ..records import Candidate, ChatRequest, ChatResult, Judgement, Rejected, Sample, Seed
from ..reply_contract import choice_contract
from ..store.rows import FilterDecisionRow
from ..tasks.base import TaskSpec, normalise
from ..tasks.steps import lay_out_candidates, read_choice
from ..tasks.templates import task_template
from .context import GenContext

__all__ = ["AGAIN_TEMPLATE", "MIN_FILTER_TOKENS", "decide", "run_filter_stage"]

# Room for a short reply ("Choice: 2", '{"choice": 2}', "Choice: Answer 2 (Vladivostok)")
# whatever the judge's max_tokens says: a pick cut off mid-word is a pick lost.
MIN_FILTER_TOKENS = 32
# prompts/<task>/filter_again.txt: the one stricter follow-up after an unreadable pick
AGAIN_TEMPLATE = "filter_again"


async def run_filter_stage(
    ctx: GenContext,
    receive: ObjectReceiveStream[tuple[Seed, list[Candidate]]],
    send: ObjectSendStream[Sample | Rejected],
) -> None:
    async with receive, send:
        async for seed, candidates in receive:
            try:
                outcome = await decide(ctx, seed, candidates)
            except RunStopping as stop:  # budget used up or Ctrl-C
                ctx.flags.stopped_by(stop)
                continue  # pending: its candidates are stored, a resume only filters
            await send.send(outcome)


async def decide(ctx: GenContext, seed: Seed, candidates: list[Candidate]) -> Sample | Rejected:
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
    return await _judge(ctx, seed, candidates, [valid[i] for i in order])


async def _judge(
    ctx: GenContext, seed: Seed, candidates: list[Candidate], shown: list[Candidate]
) -> Sample | Rejected:
    """Ask the judge (as JSON when the endpoint can; once more, stricter, when its reply
    names no candidate) and turn its pick into a sample."""
    task = ctx.tasks[seed.task]
    template = task.filter_template
    texts = [c.text for c in shown]
    values = lay_out_candidates(task.spec, seed.fields, texts)
    request = ChatRequest(
        model=ctx.model,
        messages=template.render(values),
        temperature=ctx.judge.temperature,
        max_tokens=max(ctx.judge.max_tokens, MIN_FILTER_TOKENS),
        top_p=ctx.judge.top_p,
        cache_key=ctx.cache_key(template.name),
    )
    est = template.estimate_tokens(values, ctx.runner.counter)
    shown_idx = tuple(c.index for c in shown)
    contract = choice_contract(len(shown))
    formatted = await ctx.capabilities.formatted(request, contract.response_format())
    result: ChatResult | CallFailure
    if isinstance(formatted, CallFailure):
        result = formatted  # the probe it waited for got no answer: a failed call
    else:
        request = formatted
        ctx.stats.bump(ctx.stats.filter_calls, seed.task)
        result = await ctx.runner.call(
            request, stage="filter", task=seed.task, seed_key=seed.key, est_prompt_tokens=est
        )
    first_reply = ""
    for attempt in (1, 2):
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
            return Rejected(
                seed, "filter", "judge_content_filter", "", tuple(candidates), judgement
            )
        position = read_choice(result.text, texts)
        if position is not None:
            chosen = shown[position - 1]
            method = "judge" if attempt == 1 else "judge_again"
            judgement = Judgement(
                seed.key,
                shown_idx,
                chosen.index,
                method,
                request.key,
                template.hash,
                result.text[:2000],
                first_reply[:300],
            )
            _record(ctx, seed, judgement)
            return _sample(ctx, seed, chosen, judgement)
        if attempt == 2:
            break
        # the reply names no candidate: ask once more, stricter, in the same conversation
        first_reply = result.text
        again = _again_template(ctx, task.spec)
        request = dataclasses.replace(
            request,
            messages=(
                *request.messages,
                {"role": "assistant", "content": result.text},
                *again.render({"count": str(len(shown))}),
            ),
        )
        ctx.stats.bump(ctx.stats.filter_calls, seed.task)
        result = await ctx.runner.call(
            request,
            stage="filter",
            task=seed.task,
            seed_key=seed.key,
            est_prompt_tokens=est + 2 * MIN_FILTER_TOKENS,
        )
    assert isinstance(result, ChatResult)  # the second reply, read and unparseable
    judgement = Judgement(
        seed.key,
        shown_idx,
        None,
        "unparseable",
        request.key,
        template.hash,
        result.text[:2000],
        first_reply[:300],
    )
    _record(ctx, seed, judgement)
    detail = f"{first_reply[:150]} | again: {result.text[:150]}"
    return Rejected(seed, "filter", "judge_unparseable", detail, tuple(candidates), judgement)


def _again_template(ctx: GenContext, spec: TaskSpec) -> Template:
    return task_template(spec, AGAIN_TEMPLATE, getattr(ctx, "prompts_dir", None))


def _sample(ctx: GenContext, seed: Seed, chosen: Candidate, judgement: Judgement) -> Sample:
    spec = ctx.tasks[seed.task].spec
    fields = {name: seed.fields[name] for name in spec.seed_fields}
    fields[spec.hallucinated_field] = chosen.text
    return Sample(seed=seed, candidate=chosen, judgement=judgement, fields=fields)


def _record(ctx: GenContext, seed: Seed, j: Judgement) -> None:
    ctx.writer.put(
        [
            FilterDecisionRow(
                run_id=ctx.run_id,
                task=seed.task,
                seed_key=seed.key,
                shown_order=orjson.dumps(list(j.order)).decode(),
                chosen=j.chosen,
                method=j.method,
                call_key=j.call_key or None,
                template_hash=j.template_hash or None,
                raw=j.raw or None,
                detail=j.detail or None,
            )
        ]
    )
