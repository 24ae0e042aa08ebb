"""The summarization task: CNN/DailyMail-style seeds (document, right summary) ->
hallucinated summaries.

Templates live in ``prompts/summarization/``. A sampling reply is ``Pattern: ...`` /
``Summary: ...``, where the summary may come as several lines or bullets like the
highlights it imitates (they are joined into one line); the filter judge sees ``Summary 1:
...`` lines and replies ``Choice: <n>``. The guards: a summary much longer or shorter than
the reference is told apart by its form alone, and one that talks about the task.
"""

from __future__ import annotations

from .base import TaskSpec
from .checks import LengthRatio, MetaTalk
from .shapes import lines

__all__ = ["MAX_LENGTH_RATIO", "MIN_LENGTH_RATIO", "PATTERNS", "SUMMARIZATION"]

PATTERNS = ("factual", "non-factual", "intrinsic")

# Bounds on len(hallucinated) / len(right summary), in characters.
MAX_LENGTH_RATIO = 1.5
MIN_LENGTH_RATIO = 0.5

# Kept narrow: news summaries legitimately speak of "a leaked document" or "the report".
_META = (
    r"\bhallucinat\w*"
    r"|\b(?:the|this) (?:given|provided|original|source|above) (?:document|article|text|story)\b"
    r"|\b(?:not|never) (?:mentioned|stated|said|reported) in the (?:document|article|text)\b"
    r"|\b(?:right|correct|reference|original) summary\b"
)

SUMMARIZATION = TaskSpec(
    name="summarization",
    seed_fields=("document", "right_summary"),
    right_field="right_summary",
    hallucinated_field="hallucinated_summary",
    patterns=PATTERNS,
    # "non-factual", "Nonfactual", "not factual", "counterfactual" are the second pattern
    # (they start left of "factual", so the leftmost match finds them first)
    pattern_words=(
        (r"(?:non[\s_–—-]*|not[\s_–—-]+|counter[\s_–—-]*)factual\w*", "non-factual"),
        (r"factual\w*", "factual"),
        (r"intrinsic\w*", "intrinsic"),
    ),
    reply_labels=("Summary", "Hallucinated summary", "Hallucinated"),
    stop_labels=(
        "Document",
        "Article",
        "Right summary",
        "Correct summary",
        "Reference",
    ),
    shape=lines,
    candidate_label="Summary",
    filter_context=("document",),
    # length first: an overlong summary is rejected as such even when it also talks meta
    checks=(LengthRatio(MAX_LENGTH_RATIO, MIN_LENGTH_RATIO), MetaTalk(_META)),
    long_field="document",
)
