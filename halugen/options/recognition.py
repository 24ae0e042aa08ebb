"""The settings of a recognition experiment (``eval``) and of the rule that says which
annotated items count as labelled (``eval``, ``export``, ``annotate export|resolve``).

They are the commands' own flags, not keys of halugen.toml.
"""

from __future__ import annotations

from .spec import Setting

__all__ = ["EVAL", "LABELS"]

EVAL: tuple[Setting, ...] = (
    Setting(
        name="strategy",
        kind=str,
        group="eval",
        toml=None,
        default="plain",
        help="how the judge is asked: plain, knowledge, cot or contrast",
    ),
    Setting(
        name="data",
        kind=list,
        group="eval",
        toml=None,
        nargs="+",
        metavar="FILE",
        default=(),
        help="HaluEval's released files of the task",
        default_text="the samples in the store",
    ),
    Setting(
        name="gen_run",
        kind=str,
        group="eval",
        toml=None,
        metavar="RUN",
        help="only the samples of this generation run",
        default_text="every run's samples",
    ),
    Setting(
        name="scoring",
        kind=str,
        group="eval",
        toml=None,
        choices=("parse", "logprobs"),
        default="parse",
        help="read the Yes/No verdict, or score P(Yes) from logprobs",
    ),
    Setting(
        name="read",
        kind=str,
        group="eval",
        toml=None,
        choices=("strict", "lenient"),
        default="strict",
        help="how replies are read: strict takes only the reply contract's line (Verdict: "
        "Yes|No, Choice: n), its JSON field or one word, and asks again once about anything "
        "else; lenient interprets prose, for replies to prompts of your own",
    ),
)

# the LabelRule of annotate/resolve.py, built by cli/flags.py label_rule
LABELS: tuple[Setting, ...] = (
    Setting(
        name="per_item",
        kind=int,
        group="labels",
        toml=None,
        to=(),
        default=3,
        metavar="N",
        help="labels an item needs to count as resolved (resolutions, HaluEval's general "
        "layout, eval of the general task); a released HaluEval label counts alone",
    ),
    Setting(
        name="allow_partial",
        kind=bool,
        group="labels",
        toml=None,
        to=(),
        const=True,
        default=False,
        help="also take items with fewer labels; exports then give each record its label "
        "count, n_labels",
        default_text="leave them out and say how many",
    ),
)
