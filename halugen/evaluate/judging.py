"""Judging one item of a recognition experiment: which answer is shown (an RNG seeded by the
eval seed and the item key), the call, its verdict read strictly or scored from logprobs, the
one stricter re-ask of an unreadable reply; and the worker that stores each judgement."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from anyio.abc import ObjectReceiveStream

from ..errors import RunStopping, UsageError
from ..llm.calls import CallFailure
from ..llm.capabilities import LOGPROBS
from ..llm.endpoint import prompt_cache_key, takes_cache_key
from ..llm.strategy import DEFERRED
from ..prompts import Template
from ..records import ChatRequest, ChatResult, fingerprint
from ..session import CallSession
from ..store.rows import JudgementRow
from ..tasks.base import TaskSpec
from . import judge
from .config import EvalConfig
from .logprob_verdicts import verdict_from_logprobs
from .readers import read_pick, read_verdict

__all__ = ["Judged", "judge_worker"]


@dataclass(frozen=True)
class Judged:
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


def _rng(seed: int, item_key: str) -> random.Random:
    return random.Random(fingerprint([seed, item_key, "shown"], size=16))


async def _judge_one(
    cfg: EvalConfig,
    spec: TaskSpec,
    session: CallSession,
    template: Template,
    item: judge.EvalItem,
    again: Template | None = None,
) -> Judged | CallFailure | None:
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
    return Judged(
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


async def judge_worker(
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
