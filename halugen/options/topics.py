"""The settings of the topic analysis (``topics``): how many LDA topics, and whose LDA.

They are the command's own flags, not keys of halugen.toml.
"""

from __future__ import annotations

from .spec import Setting

__all__ = ["TOPICS"]

TOPICS: tuple[Setting, ...] = (
    Setting(
        name="topics",
        kind=int,
        group="topics",
        toml=None,
        to=(),
        default=10,
        help="topics over all samples",
    ),
    Setting(
        name="failure_topics",
        kind=int,
        group="topics",
        toml=None,
        to=(),
        default=5,
        help="topics over the failures",
    ),
    Setting(
        name="backend",
        kind=str,
        group="topics",
        toml=None,
        to=(),
        choices=("sklearn", "gensim"),
        default="sklearn",
        help="the LDA implementation",
    ),
)
