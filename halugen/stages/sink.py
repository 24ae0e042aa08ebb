"""Sink: a seed's final outcome lands in the store in one group (sample + outcome together)."""

from __future__ import annotations

from anyio.abc import ObjectReceiveStream

from ..records import Rejected, Sample
from ..store.rows import SampleRow, SeedOutcomeRow
from ..store.sample_columns import extra_fields
from .context import GenContext

__all__ = ["run_sink", "sample_row"]


async def run_sink(ctx: GenContext, receive: ObjectReceiveStream[Sample | Rejected]) -> None:
    async with receive:
        async for outcome in receive:
            if isinstance(outcome, Sample):
                write_sample(ctx, outcome)
            else:
                write_rejection(ctx, outcome)


def sample_row(ctx: GenContext, sample: Sample) -> SampleRow:
    seed = sample.seed
    spec = ctx.tasks[seed.task].spec
    f = sample.fields
    # a comparison: the seed's surrounding whitespace (kept as given) does not count
    right = f.get(spec.right_field, "").strip()
    hallucinated = f.get(spec.hallucinated_field, "").strip()
    ratio = len(hallucinated) / len(right) if right else None
    filter_hash = ctx.tasks[seed.task].filter_template.hash
    return SampleRow(
        run_id=ctx.run_id,
        task=seed.task,
        seed_key=seed.key,
        seed_id=seed.seed_id,
        dataset=seed.dataset,
        source_file=seed.source_file,
        source_line=seed.source_line,
        pattern=sample.candidate.pattern,
        template=sample.candidate.template,
        template_hash=sample.candidate.template_hash,
        filter_template_hash=filter_hash,
        selected_by=sample.judgement.method,
        model=ctx.model,
        knowledge=f.get("knowledge"),
        question=f.get("question"),
        right_answer=f.get("right_answer"),
        hallucinated_answer=f.get("hallucinated_answer"),
        dialogue_history=f.get("dialogue_history"),
        right_response=f.get("right_response"),
        hallucinated_response=f.get("hallucinated_response"),
        document=f.get("document"),
        right_summary=f.get("right_summary"),
        hallucinated_summary=f.get("hallucinated_summary"),
        length_ratio=ratio,
        extra_json=extra_fields(f),  # a task folder's fields without a column of their own
        truncated_tokens=seed.truncated_tokens or None,
    )


def write_sample(ctx: GenContext, sample: Sample) -> None:
    seed = sample.seed
    ctx.writer.put(
        [
            sample_row(ctx, sample),
            SeedOutcomeRow(ctx.run_id, seed.task, seed.key, "sampled", "filter", None, None),
        ]
    )
    ctx.stats.bump(ctx.stats.sampled, seed.task)


def write_rejection(ctx: GenContext, rejected: Rejected) -> None:
    seed = rejected.seed
    # call errors end as 'failed', which a resume tries again; the rest are final
    outcome = "failed" if rejected.reason == "call_failed" else "rejected"
    ctx.writer.put(
        [
            SeedOutcomeRow(
                run_id=ctx.run_id,
                task=seed.task,
                seed_key=seed.key,
                outcome=outcome,
                stage=rejected.stage,
                reason=rejected.reason,
                detail=rejected.detail[:500] if rejected.detail else None,
            )
        ]
    )
    ctx.stats.bump(ctx.stats.failed if outcome == "failed" else ctx.stats.rejected, seed.task)
