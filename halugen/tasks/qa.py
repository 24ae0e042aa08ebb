"""The QA task: HotpotQA-style seeds (knowledge, question, right answer) -> hallucinated answers.

Templates live in ``prompts/qa/``. A sampling reply is ``Pattern: ...`` / ``Answer: ...``;
the filter judge sees ``Answer 1: ...`` lines and replies ``Choice: <n>``. The guards: an
answer holding the right one (or held in it) is not wrong; a sentence where the right
answer is a short span, or an answer in another length class, gives itself away.
"""

from __future__ import annotations

from .base import TaskSpec
from .checks import ContainsRight, LengthClass, ShortSpanForm
from .shapes import one_line

__all__ = ["PATTERNS", "QA"]

PATTERNS = ("comprehension", "factualness", "specificity", "inference")

QA = TaskSpec(
    name="qa",
    seed_fields=("knowledge", "question", "right_answer"),
    right_field="right_answer",
    hallucinated_field="hallucinated_answer",
    patterns=PATTERNS,
    # stems, so "factual", "Specific", "inferential" and "comprehending" still name one
    pattern_words=(
        (r"comprehen\w*", "comprehension"),
        (r"factual\w*", "factualness"),
        (r"specific\w*", "specificity"),
        (r"infer\w*", "inference"),
    ),
    # the prompts ask for "Answer"; the demonstrations show "Hallucinated answer"
    reply_labels=("Answer", "Hallucinated answer", "Hallucinated"),
    stop_labels=("Knowledge", "Question", "Right answer", "Correct answer"),
    shape=one_line,
    candidate_label="Answer",
    filter_context=("knowledge", "question"),
    checks=(ContainsRight(), ShortSpanForm(), LengthClass(max_gap=1)),
    long_field="knowledge",
)
