"""Sink: a seed's final outcome lands in the store in one group (sample + outcome together)."""

from __future__ import annotations

from anyio.abc import ObjectReceiveStream

from ..records import Rejected, Sample
from ..tasks.columns import extra_fields
from .context import GenContext

__all__ = ["run_sink", "sample_row"]


async def run_sink(ctx: GenContext, receive: ObjectReceiveStream[Sample | Rejected]) -> None:
    async with receive:
        async for outcome in receive:
            if isinstance(outcome, Sample):
                write_sample(ctx, outcome)
            else:
                write_rejection(ctx, outcome)


def sample_row(ctx: GenContext, sample: Sample) -> tuple:
    seed = sample.seed
    spec = ctx.tasks[seed.task].spec
    f = sample.fields
    # a comparison: the seed's surrounding whitespace (kept as given) does not count
    right = f.get(spec.right_field, "").strip()
    hallucinated = f.get(spec.hallucinated_field, "").strip()
    ratio = len(hallucinated) / len(right) if right else None
    filter_hash = ctx.tasks[seed.task].filter_template.hash
    return (
        ctx.run_id,
        seed.task,
        seed.key,
        seed.seed_id,
        seed.dataset,
        seed.source_file,
        seed.source_line,
        sample.candidate.pattern,
        sample.candidate.template,
        sample.candidate.template_hash,
        filter_hash,
        sample.judgement.method,
        ctx.model,
        f.get("knowledge"),
        f.get("question"),
        f.get("right_answer"),
        f.get("hallucinated_answer"),
        f.get("dialogue_history"),
        f.get("right_response"),
        f.get("hallucinated_response"),
        f.get("document"),
        f.get("right_summary"),
        f.get("hallucinated_summary"),
        ratio,
        extra_fields(f),  # a task folder's fields without a column of their own
        seed.truncated_tokens or None,
    )


def write_sample(ctx: GenContext, sample: Sample) -> None:
    seed = sample.seed
    ctx.writer.put(
        [
            ("sample_rows", sample_row(ctx, sample)),
            ("seed_outcomes", (ctx.run_id, seed.task, seed.key, "sampled", "filter", None, None)),
        ]
    )
    ctx.stats.bump(ctx.stats.sampled, seed.task)


def write_rejection(ctx: GenContext, rejected: Rejected) -> None:
    seed = rejected.seed
    # call errors end as 'failed', which a resume tries again; the rest are final
    outcome = "failed" if rejected.reason == "call_failed" else "rejected"
    ctx.writer.put(
        [
            (
                "seed_outcomes",
                (
                    ctx.run_id,
                    seed.task,
                    seed.key,
                    outcome,
                    rejected.stage,
                    rejected.reason,
                    rejected.detail[:500] if rejected.detail else None,
                ),
            )
        ]
    )
    ctx.stats.bump(ctx.stats.failed if outcome == "failed" else ctx.stats.rejected, seed.task)
