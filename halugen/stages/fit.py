"""Fitting a record into the model's context window before any call is made.

A record whose largest prompt (its sampling templates, or the filter with its candidates)
plus the reply would not fit the context window is either cut down — its long field
(the document, the knowledge) truncated, with the number of tokens removed recorded — or
skipped with the reason, as the user chooses (``--long-documents truncate|skip``).

A field too long to count exactly on the event loop (``tokens.EXACT_LIMIT``, e.g. 50 MB with
no whitespace) is counted by its upper bound, so it is never taken to fit when it does not;
its cut is counted exactly. The tokens removed are then an upper bound as well.
"""

from __future__ import annotations

import dataclasses

from ..records import BadRecord, Seed
from ..tasks.loaded import LoadedTask
from ..tasks.steps import lay_out_candidates
from ..tokens import TokenCounter

__all__ = ["FitResult", "fit_to_context"]

_SAFETY = 0.95  # our count is an estimate: keep 5% of the window free


@dataclasses.dataclass(frozen=True, slots=True)
class FitResult:
    seed: Seed | None  # None when skipped
    bad: BadRecord | None = None


def _largest_prompt(
    task: LoadedTask, fields: dict[str, str], counter: TokenCounter, answer_tokens: int
) -> int:
    sizes = [t.estimate_tokens(fields, counter) for t in task.sample_templates]
    # the filter shows every candidate: assume each as long as the right answer
    right = fields.get(task.spec.right_field, "")
    values = lay_out_candidates(task.spec, fields, [right] * len(task.sample_templates))
    sizes.append(task.filter_template.estimate_tokens(values, counter) + answer_tokens)
    return max(sizes)


def fit_to_context(
    seed: Seed,
    task: LoadedTask,
    counter: TokenCounter,
    *,
    context_window: int,
    max_tokens: int,
    policy: str,
    safety: float = _SAFETY,
) -> FitResult:
    limit = int(context_window * safety) - max_tokens
    fields = dict(seed.fields)
    needed = _largest_prompt(task, fields, counter, 0)
    if needed <= limit:
        return FitResult(seed)
    long_field = task.spec.long_field
    reason = (
        f"needs about {needed:,} prompt tokens + {max_tokens:,} for the reply; the model's "
        f"context window is {context_window:,}"
    )
    if policy == "skip" or not long_field or long_field not in fields:
        return FitResult(
            None,
            bad=BadRecord(seed.source_file, seed.source_line, f"too long for the model: {reason}"),
        )
    original = fields[long_field]
    original_tokens = counter.count(original)  # an upper bound for a huge field
    keep = original_tokens - (needed - limit)
    while keep > 0:
        fields[long_field] = counter.truncate(original, keep)
        kept = counter.count(fields[long_field])
        needed = _largest_prompt(task, fields, counter, 0)
        if needed <= limit:
            removed = original_tokens - kept
            return FitResult(dataclasses.replace(seed, fields=fields, truncated_tokens=removed))
        # the field may appear in a prompt more than once: cut by what is still over
        keep = min(keep, kept) - max(16, needed - limit)
    return FitResult(
        None,
        bad=BadRecord(
            seed.source_file,
            seed.source_line,
            f"too long for the model even with its {long_field} cut: {reason}",
        ),
    )
