"""The dialogue task: OpenDialKG-style seeds (knowledge, history, right response) ->
hallucinated responses.

Templates live in ``prompts/dialogue/``. A sampling reply is ``Pattern: ...`` /
``Response: ...``; the filter judge sees ``Response 1: ...`` lines and replies ``Choice:
<n>`` ("reply" and "response" are read as "answer"). The guards: a turn that talks about
the task, or is far longer or shorter than the true one.
"""

from __future__ import annotations

from .base import TaskSpec
from .checks import LengthRatio, MetaTalk
from .shapes import turn

__all__ = ["DIALOGUE", "LENGTH_SLACK", "MAX_LENGTH_RATIO", "MIN_LENGTH_RATIO", "PATTERNS"]

PATTERNS = ("extrinsic-soft", "extrinsic-hard", "extrinsic-grouped")

# A response may add a clause (extrinsic-soft does by definition), so the bounds are looser
# than summarization's; the slack keeps one-line chit-chat ("Yes, I loved it!") from being
# rejected over a few characters.
MAX_LENGTH_RATIO = 2.0
MIN_LENGTH_RATIO = 0.4
LENGTH_SLACK = 40  # characters

# Talk about the task inside the turn gives the hallucination away by its form.
_META = (
    r"\bhallucinat\w*|\bextrinsic\b|\b(?:the|this|that) (?:given |provided )?knowledge\b"
    r"|\b(?:right|true|original|correct) (?:response|reply)\b|\bdialogue history\b"
    r"|\[\s*(?:human|assistant)\s*\]"
)
_EXTRINSIC = r"(?:extrinsic[\s_–—-]*\(?\s*)?"

DIALOGUE = TaskSpec(
    name="dialogue",
    seed_fields=("knowledge", "dialogue_history", "right_response"),
    right_field="right_response",
    hallucinated_field="hallucinated_response",
    patterns=PATTERNS,
    # "extrinsic-soft", "Extrinsic soft", "extrinsic (hard)", "soft", "grouping"
    pattern_words=(
        (_EXTRINSIC + "soft", "extrinsic-soft"),
        (_EXTRINSIC + "hard", "extrinsic-hard"),
        (_EXTRINSIC + r"group\w*", "extrinsic-grouped"),
    ),
    # the prompts ask for "Response"; the demonstrations show "Hallucinated response" (and
    # the one-pass layout "Hallucinated reply"), which some models echo instead
    reply_labels=(
        "Response",
        "Hallucinated response",
        "Hallucinated reply",
        "Hallucinated",
        "Reply",
    ),
    stop_labels=(
        "Knowledge",
        "Dialogue history",
        "Right response",
        "True response",
        "True reply",
        "[Human]",
        "Human",
        "User",
    ),
    shape=turn,
    candidate_label="Response",
    candidate_words=("reply",),
    filter_context=("knowledge", "dialogue_history"),
    checks=(MetaTalk(_META), LengthRatio(MAX_LENGTH_RATIO, MIN_LENGTH_RATIO, LENGTH_SLACK)),
    long_field="knowledge",
)
