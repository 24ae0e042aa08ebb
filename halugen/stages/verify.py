"""Verify stage: a judge checks each accepted sample's labels against its knowledge.

Two questions per sample, each in the reply contract (``reply_contract.VERDICT``, the last
line ``Verdict: Yes|No``, Yes = supported): is the hallucinated text supported by the
knowledge (it must not be), and is the right text (it must be)? The template is the task's
``prompts/verify.txt``: the fixed instruction first and the record last, so a provider's
prompt cache serves the opening. Where the endpoint has structured outputs the verdict is
asked as ``{"verdict": "Yes" | "No"}``. A reply the strict reader cannot read is asked again
once, with ``VERDICT.reask()`` in the same conversation; still unreadable is ``unsure``.

A sample is flagged when the hallucinated text is judged supported
(``hallucination_supported``), else when the right text is judged unsupported
(``right_unsupported``), else when either stayed ``unsure``. Flagged samples stay in the
store (``label_check_rows``; the ``samples`` view's ``label_check`` and ``flag_reason``) and
are left out of exports unless ``--include-suspect``.

The stage runs after the pipeline, over the run's stored samples that the judge model has
not checked with this template (``store.label_checks.unchecked_samples``): a resumed run
checks what is left, samples of an earlier session without ``--verify`` included, and pays
nothing twice (every call goes through the session's call strategy, by request key).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream

from ..config import Sampling
from ..crew import crew_size, run_crew
from ..errors import ConfigError, RunStopping
from ..llm.calls import CallFailure
from ..llm.capabilities import Capabilities
from ..llm.strategy import DEFERRED, CallStrategy
from ..prompts import Template
from ..records import ChatRequest, ChatResult
from ..reply_contract import VERDICT
from ..session import StopFlags
from ..stats import RunStats
from ..store.db import Store
from ..store.label_checks import unchecked_samples
from ..store.rows import LabelCheckRow
from ..tasks.base import TaskSpec
from ..tasks.template_fields import VERIFY_TEMPLATE, VERIFY_TEXT
from ..tasks.templates import task_template
from .context import GenContext

__all__ = [
    "MIN_VERIFY_TOKENS",
    "REASONS",
    "VERIFY_TEMPLATE",
    "Answer",
    "Verifier",
    "VerifyItem",
    "check_items",
    "outcome_of",
    "stored_items",
    "verdict_format",
    "verify_run",
    "verify_templates",
]

# room for the contract line, or '{"verdict": "Yes"}', whatever the judge's max_tokens says
MIN_VERIFY_TOKENS = 32
# why a sample is flagged, in the order they are looked for
REASONS = ("hallucination_supported", "right_unsupported", "unsure")


def verdict_format() -> dict[str, Any]:
    """The ``response_format`` of a verify question: the contract's own schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT.schema()},
    }


@dataclass(frozen=True, slots=True)
class VerifyItem:
    """One sample to check: its task's record fields under the task's names."""

    task: str
    key: str  # the seed key (a run's sample) or the item's fingerprint (an audited file)
    pattern: str
    fields: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Answer:
    """What one question came to: supported | unsupported | unsure | failed."""

    verdict: str
    key: str = ""  # request key of its last call
    raw: str = ""  # the last reply
    asked: int = 0
    detail: str = ""


def outcome_of(hallucination: Answer, right: Answer) -> tuple[str, str | None]:
    """(passed | flagged | call_failed, the reason a flagged sample is flagged)."""
    if "failed" in (hallucination.verdict, right.verdict):
        return "call_failed", None
    if hallucination.verdict == "supported":
        return "flagged", "hallucination_supported"
    if right.verdict == "unsupported":
        return "flagged", "right_unsupported"
    if "unsure" in (hallucination.verdict, right.verdict):
        return "flagged", "unsure"
    return "passed", None


def verify_templates(
    specs: Iterable[TaskSpec], prompts_dir: Any = None
) -> tuple[dict[str, Template], list[str]]:
    """The verify template of each task that has one, and a note per task without."""
    templates: dict[str, Template] = {}
    notes: list[str] = []
    for spec in specs:
        try:
            templates[spec.name] = task_template(spec, VERIFY_TEMPLATE, prompts_dir)
        except ConfigError:
            notes.append(
                f"verify: task {spec.name} has no prompts/{VERIFY_TEMPLATE}.txt, so its "
                f"labels are not verified"
            )
    return templates, notes


class _Deferred(Exception):
    """A question's call waits for a batch: the sample is checked by a later pass."""


@dataclass
class Verifier:
    """Asks the two questions of a sample and turns the answers into a check."""

    run_id: str
    model: str  # the judge model
    calls: CallStrategy
    capabilities: Capabilities | None  # None: ask for text (no structured outputs)
    judge: Sampling
    specs: Mapping[str, TaskSpec]
    templates: Mapping[str, Template]
    stats: RunStats
    cache_key: Callable[[str], str | None] = lambda name: None

    async def check(self, item: VerifyItem) -> LabelCheckRow | None:
        """The check of ``item``; None when one of its calls waits for a batch."""
        spec = self.specs[item.task]
        texts = (
            item.fields.get(spec.hallucinated_field, ""),
            item.fields.get(spec.right_field, ""),
        )
        got: list[Answer | BaseException] = [Answer("failed"), Answer("failed")]

        async def ask(i: int) -> None:  # both at once: a batch plans them in one pass
            try:
                got[i] = await self._ask(item, texts[i])
            except (_Deferred, RunStopping) as exc:
                got[i] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, 0)
            tg.start_soon(ask, 1)
        for answer in got:
            if isinstance(answer, RunStopping):
                raise answer
        hallucination, right = got
        if not isinstance(hallucination, Answer) or not isinstance(right, Answer):
            return None  # a question waits for a batch: a later pass checks the sample
        outcome, reason = outcome_of(hallucination, right)
        details = [a.detail for a in (hallucination, right) if a.detail]
        return LabelCheckRow(
            run_id=self.run_id,
            task=item.task,
            seed_key=item.key,
            model=self.model,
            outcome=outcome,
            reason=reason,
            hallucination_verdict=hallucination.verdict,
            right_verdict=right.verdict,
            asked=hallucination.asked + right.asked,
            hallucination_key=hallucination.key or None,
            right_key=right.key or None,
            template_hash=self.templates[item.task].hash,
            hallucination_raw=hallucination.raw[:2000] or None,
            right_raw=right.raw[:2000] or None,
            detail="; ".join(details)[:500] or None,
        )

    async def _ask(self, item: VerifyItem, text: str) -> Answer:
        """Is ``text`` supported by the item's knowledge? Asked once, and once more strictly
        when the reply holds no contract line."""
        template = self.templates[item.task]
        values = {**item.fields, VERIFY_TEXT: text}
        request = ChatRequest(
            model=self.model,
            messages=template.render(values),
            temperature=self.judge.temperature,
            max_tokens=max(self.judge.max_tokens, MIN_VERIFY_TOKENS),
            top_p=self.judge.top_p,
            cache_key=self.cache_key(template.name),
        )
        if self.capabilities is not None:
            formatted = await self.capabilities.formatted(request, verdict_format())
            if isinstance(formatted, CallFailure):
                return Answer("failed", request.key, "", 0, formatted.message[:200])
            request = formatted
        est = template.estimate_tokens(values, self.calls.counter)
        for asked in (1, 2):
            result = await self.calls.call(
                request, stage="verify", task=item.task, seed_key=item.key, est_prompt_tokens=est
            )
            if isinstance(result, CallFailure):
                if result.error_class == DEFERRED:
                    raise _Deferred
                return Answer("failed", request.key, "", asked, result.message[:200])
            if result.finish_reason == "content_filter":
                return Answer("unsure", request.key, result.text, asked, "content_filter")
            verdict = VERDICT.read(result.text)
            if verdict is not None:
                word = "supported" if verdict == "Yes" else "unsupported"
                return Answer(word, request.key, result.text, asked)
            if asked == 2:
                return Answer("unsure", request.key, result.text, asked)
            request = _reasked(request, result)
            est += 2 * MIN_VERIFY_TOKENS
        raise AssertionError("unreachable")


def _reasked(request: ChatRequest, result: ChatResult) -> ChatRequest:
    """The same conversation with the reply and the contract's strict follow-up."""
    return dataclasses.replace(
        request,
        messages=(
            *request.messages,
            {"role": "assistant", "content": result.text},
            {"role": "user", "content": VERDICT.reask()},
        ),
    )


async def check_items(
    verifier: Verifier,
    items: Iterable[VerifyItem],
    *,
    write: Callable[[LabelCheckRow], None],
    flags: StopFlags,
    wanted: Callable[[], int],
    buffer: int = 16,
) -> None:
    """Check ``items`` with as many workers as the endpoints take calls (``crew``),
    ``write`` each check; stops admitting when the run stops (budget, Ctrl-C)."""
    tx, rx = anyio.create_memory_object_stream[VerifyItem](buffer)

    async def feed() -> None:
        async with tx:
            for item in items:
                if flags.stop_admitting:
                    break
                await tx.send(item)

    async def worker(receive: ObjectReceiveStream[VerifyItem]) -> None:
        async with receive:
            async for item in receive:
                try:
                    row = await verifier.check(item)
                except RunStopping as stop:
                    flags.stopped_by(stop)
                    continue
                if row is not None:
                    write(row)

    async def workers() -> None:
        async with rx:
            await run_crew(lambda: worker(rx.clone()), lambda: crew_size(wanted(), 0.5))

    async with anyio.create_task_group() as tg:
        tg.start_soon(feed)
        tg.start_soon(workers)


def stored_items(store: Store, run_id: str, verifier: Verifier) -> list[VerifyItem]:
    """The run's samples the verifier's model has not checked with its templates."""
    items = []
    for task, template in verifier.templates.items():
        spec = verifier.specs[task]
        rows = unchecked_samples(
            store, run_id, task, spec.record_fields, model=verifier.model,
            template_hash=template.hash,
        )  # fmt: skip
        items += [VerifyItem(task, key, pattern, fields) for key, pattern, fields in rows]
    return items


async def verify_run(
    ctx: GenContext, store: Store, *, model: str, wanted: Callable[[], int]
) -> list[str]:
    """Check the run's unchecked samples with ``model`` (after the pipeline has written its
    samples); returns notes for the user (tasks without a verify template)."""
    specs = {name: task.spec for name, task in ctx.tasks.items()}
    templates, notes = verify_templates(specs.values(), ctx.prompts_dir)
    verifier = Verifier(
        run_id=ctx.run_id,
        model=model,
        calls=ctx.runner,
        capabilities=ctx.capabilities,
        judge=ctx.judge,
        specs=specs,
        templates=templates,
        stats=ctx.stats,
        cache_key=ctx.cache_key,
    )
    await store.writer.flush()  # the samples the pipeline has just written
    if ctx.flags.stop_admitting:
        return notes
    items = await anyio.to_thread.run_sync(stored_items, store, ctx.run_id, verifier)
    outcomes: dict[str, int] = {}

    def write(row: LabelCheckRow) -> None:
        ctx.writer.put([row])
        outcomes[row.outcome] = outcomes.get(row.outcome, 0) + 1

    await check_items(verifier, items, write=write, flags=ctx.flags, wanted=wanted)
    checked = outcomes.get("passed", 0) + outcomes.get("flagged", 0)
    if checked or outcomes.get("call_failed"):
        from ..label_noise import flagged_share

        flagged = outcomes.get("flagged", 0)
        failed = outcomes.get("call_failed", 0)
        notes.append(
            f"verify: {checked:,} sample(s) checked by {model} this session, {flagged:,} "
            f"flagged ({flagged_share(flagged, checked)})"
            + (
                f"; {failed:,} not checked after call errors (a resume tries again)"
                if failed
                else ""
            )
            + "; per task and pattern in 'halugen status'"
        )
    return notes
