"""The comparison figure: a forest plot of every pair's paired difference in accuracy.

One line per pair (A − B, in percentage points): the difference as a dot, its paired
cluster-bootstrap 95% interval as a bar, a dashed line at no difference, and the
Holm-adjusted McNemar p-value written at the right. Pairs are grouped by task, in the order
``evaluate.compare`` lists them (A ranks above B on its own items, so most differences sit
right of zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .canvas import figure_format, label, new_figure, save

__all__ = ["plot_differences"]

_DOT = "#1f4e99"
_FAINT = "#9a9a9a"


def _p(value: float) -> str:
    return "p<0.001" if value < 0.001 else f"p={value:.3f}"


def plot_differences(pairs: Sequence[Any], path: str | Path, *, title: str | None = None) -> Path:
    """Draw ``pairs`` (``evaluate.compare.PairResult``) to ``path`` (.png, .svg or .pdf)."""
    figure_format(path)  # a bad extension fails before any drawing
    if not pairs:
        raise UsageError("no pair to plot: compare needs two models or strategies on one task")
    tasks = list(dict.fromkeys(p.task for p in pairs))
    several = len(tasks) > 1
    fig = new_figure(7.0, 1.4 + 0.36 * len(pairs))
    ax = fig.subplots()
    ax.axvline(0, color="#bbbbbb", linestyle="--", linewidth=0.8, zorder=0)
    ticks = []
    for y, p in enumerate(pairs):
        x = p.difference * 100
        significant = p.p_holm < 0.05
        colour = _DOT if significant else _FAINT
        ax.errorbar(
            [x],
            [y],
            xerr=[[x - p.ci[0] * 100], [p.ci[1] * 100 - x]],
            fmt="o",
            color=colour,
            markersize=5,
            capsize=2.5,
            elinewidth=1.2,
            zorder=3,
        )
        ax.annotate(
            f"{x:+.1f}  ({_p(p.p_holm)}, n={p.paired})",
            (1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
            color=colour,
        )
        prefix = f"{p.task}: " if several else ""
        ticks.append(label(f"{prefix}{p.a}  −  {p.b}"))
        if y and p.task != pairs[y - 1].task:
            ax.axhline(y - 0.5, color="#dddddd", linewidth=0.6)
    low = min(min(p.ci[0] for p in pairs) * 100, 0.0)
    high = max(max(p.ci[1] for p in pairs) * 100, 0.0)
    margin = max(2.0, 0.08 * (high - low))
    ax.set_xlim(low - margin, high + margin)
    ax.set_yticks(range(len(pairs)))
    ax.set_yticklabels(ticks, fontsize=7.5)
    ax.set_ylim(len(pairs) - 0.5, -0.5)  # first pair on top
    ax.set_xlabel(
        "difference in accuracy, A − B (percentage points), paired bootstrap 95% interval",
        fontsize=8,
    )
    ax.tick_params(labelsize=7.5)
    ax.grid(axis="x", color="#eeeeee", linewidth=0.6)
    fig.suptitle(
        label(title or "Paired differences (Holm-adjusted McNemar p; grey: p ≥ 0.05)"),
        fontsize=10,
    )
    return save(fig, path)
