"""The recognition figure: accuracy per task, model and strategy, with what it is up against.

One panel per task; one line per (model, strategy) — plus whatever else a report row is
keyed by (data source, scoring) — with the accuracy as a dot and its Wilson 95% interval as
a bar; on the same line the judges that never read the text: always No, always Yes and the
length-only threshold. HaluEval's published ChatGPT numbers sit on their own lines, marked
as the paper's (hollow diamonds, no interval: the paper gives none). A dashed line marks
chance (50%).

``rows_from_report`` turns ``evaluate.report.ResultRow``s into ``AccuracyRow``s (plain
data); ``plot_accuracy`` draws any list of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .canvas import figure_format, label, new_figure, save

__all__ = ["AccuracyRow", "plot_accuracy", "rows_from_report"]

_TASK_TITLES = {
    "qa": "QA",
    "dialogue": "Dialogue",
    "summarization": "Summarization",
    "general": "General",
}
_STRATEGIES = ("plain", "knowledge", "cot", "contrast")
# report row attributes, besides task / model / strategy, that tell rows apart
_KEY_ATTRIBUTES = ("source", "data", "data_source", "scoring")

_MEASURED = "#1f4e99"
_PAPER = "#222222"
_BASELINES = {  # key -> (legend label, marker, colour)
    "always_no": ("always No", "<", "#9a9a9a"),
    "always_yes": ("always Yes", ">", "#9a9a9a"),
    "length_only": ("length only", "x", "#c8102e"),
}


@dataclass(frozen=True)
class AccuracyRow:
    """One line of the figure; ratios in [0, 1], None when unknown."""

    task: str
    model: str
    strategy: str
    accuracy: float | None
    ci: tuple[float, float] | None = None
    n: int = 0
    baselines: Mapping[str, float | None] = field(default_factory=dict)
    reference: bool = False  # a published number, not measured here
    extra: tuple[str, ...] = ()  # further keys of the row (data source, scoring)

    @property
    def line(self) -> str:
        parts = [self.model, self.strategy, *self.extra]
        return " · ".join(p for p in parts if p)


def rows_from_report(results: Sequence[Any], *, paper: bool = True) -> list[AccuracyRow]:
    """``AccuracyRow``s of report rows, and (``paper``) the paper's numbers for the
    (strategy, task) pairs measured."""
    from ..paper import PAPER_CHATGPT, paper_label

    rows = []
    for r in results:
        m = r.metrics
        extra = tuple(
            str(getattr(r, a)) for a in _KEY_ATTRIBUTES if getattr(r, a, None) not in (None, "")
        )
        rows.append(
            AccuracyRow(
                task=r.task,
                model=r.model,
                strategy=r.strategy,
                accuracy=m.accuracy,
                ci=tuple(m.accuracy_ci) if m.accuracy_ci is not None else None,
                n=m.n,
                baselines=dict(r.baselines or {}),
                extra=extra,
            )
        )
    if paper:
        measured = {(r.strategy, r.task) for r in rows}
        for strategy, tasks in PAPER_CHATGPT.items():
            for task, value in tasks.items():
                if (strategy, task) in measured:
                    rows.append(
                        AccuracyRow(
                            task, paper_label(strategy), strategy, value / 100, reference=True
                        )
                    )
    return rows


def _order(value: str, known: Sequence[str]) -> tuple[int, str]:
    return (known.index(value), "") if value in known else (len(known), value)


def _lines(rows: Sequence[AccuracyRow]) -> list[tuple[str, str, bool]]:
    """(strategy, line label, reference) top to bottom: per strategy, measured then paper."""
    seen: dict[tuple[str, str, bool], None] = {}
    for r in sorted(rows, key=lambda r: (_order(r.strategy, _STRATEGIES), r.reference, r.line)):
        seen.setdefault((r.strategy, r.line, r.reference), None)
    return list(seen)


def _tasks(rows: Sequence[AccuracyRow]) -> list[str]:
    return sorted({r.task for r in rows}, key=lambda t: _order(t, tuple(_TASK_TITLES)))


def plot_accuracy(
    rows: Sequence[AccuracyRow], path: str | Path, *, title: str | None = None
) -> Path:
    """Draw ``rows`` to ``path`` (.png, .svg or .pdf) and return the path."""
    figure_format(path)  # a bad extension fails before any drawing
    if not any(not r.reference for r in rows):
        raise UsageError("no recognition results to plot: run 'halugen eval' first")
    tasks = _tasks(rows)
    lines = _lines(rows)
    index = {(s, line, ref): i for i, (s, line, ref) in enumerate(lines)}
    width = 2.0 + 3.0 * len(tasks)
    height = 1.6 + 0.34 * len(lines)
    fig = new_figure(width, height)
    axes = fig.subplots(1, len(tasks), squeeze=False, sharey=True)[0]
    drawn: dict[str, Any] = {}
    for ax, task in zip(axes, tasks, strict=True):
        ax.axvline(50, color="#bbbbbb", linestyle="--", linewidth=0.8, zorder=0)
        for r in (r for r in rows if r.task == task):
            y = index[(r.strategy, r.line, r.reference)]
            if r.accuracy is None:
                continue
            x = r.accuracy * 100
            if r.reference:
                drawn["paper"] = ax.scatter(
                    [x],
                    [y],
                    marker="D",
                    s=28,
                    facecolors="none",
                    edgecolors=_PAPER,
                    zorder=3,
                    label="HaluEval paper (ChatGPT)",
                )
                continue
            for key, (name, marker, colour) in _BASELINES.items():
                value = r.baselines.get(key)
                if value is not None:
                    drawn[key] = ax.scatter(
                        [value * 100],
                        [y],
                        marker=marker,
                        s=22,
                        color=colour,
                        zorder=2,
                        label=name,
                        linewidths=1.2,
                    )
            err = None
            if r.ci is not None:
                err = [[x - r.ci[0] * 100], [r.ci[1] * 100 - x]]
            drawn["measured"] = ax.errorbar(
                [x],
                [y],
                xerr=err,
                fmt="o",
                color=_MEASURED,
                markersize=5,
                capsize=2.5,
                elinewidth=1.2,
                zorder=4,
                label="accuracy, Wilson 95% interval",
            )
            ax.annotate(
                f"{x:.1f}",
                (x, y),
                xytext=(0, 5),
                textcoords="offset points",
                ha="center",
                fontsize=6.5,
                color=_MEASURED,
            )
        ax.set_xlim(0, 100)
        ax.set_title(label(_TASK_TITLES.get(task, task)), fontsize=10)
        ax.set_xlabel("accuracy (%)", fontsize=8)
        ax.tick_params(labelsize=7.5)
        ax.grid(axis="x", color="#eeeeee", linewidth=0.6)
        # a thin rule between strategies
        for i in range(1, len(lines)):
            if lines[i][0] != lines[i - 1][0]:
                ax.axhline(i - 0.5, color="#dddddd", linewidth=0.6)
    first = axes[0]
    first.set_yticks(range(len(lines)))
    first.set_yticklabels([label(line) for _, line, _ in lines], fontsize=7.5)
    for tick, (_, _, ref) in zip(first.get_yticklabels(), lines, strict=True):
        if ref:
            tick.set_fontstyle("italic")
            tick.set_color("#555555")
    first.set_ylim(len(lines) - 0.5, -0.5)  # first line on top
    order = ["measured", "always_no", "always_yes", "length_only", "paper"]
    handles = [drawn[k] for k in order if k in drawn]
    fig.legend(
        handles=handles,
        labels=[h.get_label() for h in handles],
        loc="outside lower center",
        ncol=len(handles),
        fontsize=7.5,
        frameon=False,
    )
    fig.suptitle(
        label(title or "Recognition accuracy: does the text contain hallucination?"), fontsize=11
    )
    return save(fig, path)
