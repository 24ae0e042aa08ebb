"""Analysis of what a benchmark made: LDA topics of samples and of a model's failures.

scikit-learn and matplotlib (the ``topics`` extra) are imported only when an analysis or
a figure is made, so importing halugen never needs them.
"""

from __future__ import annotations

from .corpus import (
    EvalRunInfo,
    choose_eval_run,
    document_fields,
    documents_for,
    documents_from_files,
    latest_eval_run,
    save_reports,
)
from .figure import plot
from .topics import TOPIC_SETS, Topic, TopicReport, analyse, umass_coherence

__all__ = [
    "TOPIC_SETS",
    "EvalRunInfo",
    "Topic",
    "TopicReport",
    "analyse",
    "choose_eval_run",
    "document_fields",
    "documents_for",
    "documents_from_files",
    "latest_eval_run",
    "plot",
    "save_reports",
    "umass_coherence",
]
