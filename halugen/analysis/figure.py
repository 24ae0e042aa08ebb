"""The topic figure: one panel per topic set, a pair of bars per topic.

Drawn on matplotlib's Agg canvas directly (no pyplot, see ``figures.canvas``), so it never
needs a display and never changes the backend of a program that imported halugen; written
in the format the file's extension names (png, svg, pdf).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import UsageError
from ..figures.canvas import figure_format, label, new_figure, save
from .topics import TopicReport

__all__ = ["plot"]

_WORDS_IN_LABEL = 4
_SAMPLES_COLOUR = "#4C72B0"
_FAILURES_COLOUR = "#DD8452"


def _title(report: TopicReport) -> str:
    if report.topic_set == "failures":
        return (
            f"{report.task}: topics of the failures ({len(report.topics)} topics, "
            f"{report.n_documents} failed samples)"
        )
    failures = f", {report.n_failures} failures" if report.n_failures else ""
    return (
        f"{report.task}: topics of all samples ({len(report.topics)} topics, "
        f"{report.n_documents} samples{failures})"
    )


def _bars(report: TopicReport) -> list[tuple[str, str, list[float]]]:
    """(label, colour, values) of each bar series of a panel."""
    topics = report.topics
    if report.topic_set == "failures":  # its documents are all failures: one series
        return [("share of failures", _FAILURES_COLOUR, [t.share_samples for t in topics])]
    bars = [("share of samples", _SAMPLES_COLOUR, [t.share_samples for t in topics])]
    if any(t.share_failures is not None for t in topics):
        bars.append(
            ("share of failures", _FAILURES_COLOUR, [t.share_failures or 0.0 for t in topics])
        )
    return bars


def plot(reports: Sequence[TopicReport], path: Path, *, source: str | None = None) -> Path:
    """Write a figure of ``reports`` to ``path`` (parents created) and return the path.

    The format is the extension's (.png, .svg, .pdf). Each topic is labelled by its first
    words; its bars are the share of samples and, when known, the share of failures
    assigned to it. ``source`` names where the failures came from (eval run, model,
    strategy) under the title.
    """
    if not reports:
        raise UsageError("no topic reports to plot")
    path = Path(path)
    figure_format(path)
    heights = [max(1.5, 0.45 * len(r.topics) + 1.0) for r in reports]
    fig = new_figure(10, sum(heights) + (0.3 if source else 0.0))
    axes = fig.subplots(len(reports), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[
        :, 0
    ]
    for ax, report in zip(axes, reports, strict=True):
        topics = report.topics
        positions = list(range(len(topics)))
        bars = _bars(report)
        height = 0.8 / len(bars)
        for n, (name, colour, values) in enumerate(bars):
            shift = (n - (len(bars) - 1) / 2) * height  # series side by side around the tick
            ax.barh([p + shift for p in positions], values, height=height, color=colour, label=name)
        ax.set_yticks(positions)
        ax.set_yticklabels(
            [label(f"{t.index}: {', '.join(t.top_words[:_WORDS_IN_LABEL])}") for t in topics]
        )
        ax.invert_yaxis()  # topic 0, the largest, on top
        ax.set_xlabel("share")
        ax.set_xlim(0, max(0.05, *(v for _, _, values in bars for v in values)) * 1.1)
        ax.set_title(label(_title(report)), fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
    if source:
        fig.suptitle(label(f"failures from {source}"), fontsize=9, color="#444444")
    return save(fig, path, dpi=120)
