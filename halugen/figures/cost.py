"""The cost figure of a run: where the money went over the run's time, and what a sample cost.

Left: cumulative spend (USD) per (task, stage) over the time since the run's first event,
from the ledger's money events, stamped per commit: settle, consume and lost count as spent,
and so does a reservation that was never closed (in flight, or left by a crash), at its
reserved amount, as ``run_spend`` counts it; so the curves end at the run's spend.
Right: cost per accepted sample over the same time, per task — the task's spend so far over
its samples so far (eval runs: per judged item; pre-selection runs: per scored query). A
resumed run shows its pause as a flat stretch.

``cost_data`` reads a run from the store into ``CostData`` (plain data); ``plot_cost``
draws it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..store import cost_queries
from .canvas import figure_format, label, new_figure, save

__all__ = ["CostData", "cost_data", "plot_cost"]

_COLOURS = ("#1f4e99", "#c8102e", "#2a9d55", "#8e44ad", "#d68910", "#555555")
_STYLES = ("-", "--", ":", "-.")
_STAGE_ORDER = {"sample": 0, "filter": 1, "judge": 2, "preselect": 3}
# run kind -> what counts as one accepted unit
_UNITS = {"generate": "accepted sample", "eval": "judged item", "preselect": "scored query"}


@dataclass(frozen=True)
class CostData:
    run_id: str
    kind: str
    model: str
    unit: str  # "accepted sample", "judged item", ...
    # (task, stage) -> [(seconds since the run's first event, cumulative USD)]
    spend: dict[tuple[str, str], list[tuple[float, float]]]
    # task -> [(seconds, cumulative accepted units)]
    accepted: dict[str, list[tuple[float, int]]]


def _pick_run(store: Any, run: str | None) -> tuple[str, str, str]:
    if run is not None:
        row = cost_queries.run_kind(store, run)
        if row is None:
            raise UsageError(f"no run {run!r} in {store.path} (see 'halugen status')")
        return row
    row = cost_queries.newest_run(store)
    if row is None:
        raise UsageError(f"no runs in {store.path} to plot")
    return row


def cost_data(store: Any, run: str | None = None) -> CostData:
    """The spend and accepted units of ``run`` (default: the newest generation run)."""
    run_id, kind, model = _pick_run(store, run)
    # spent when settled, consumed or lost; a reservation nobody closed (in flight, or left
    # open by a crash) counts as spent at its reservation, as run_spend counts it
    events = cost_queries.spend_events(store, run_id)
    unit = _UNITS.get(kind, "accepted sample")
    units: list[tuple[datetime, str]] = cost_queries.accepted_units(store, run_id, kind)
    if not events:
        raise UsageError(f"run {run_id} has no spend recorded yet: nothing to plot")
    start = min([events[0][0], *(u[0] for u in units[:1])])
    spend: dict[tuple[str, str], list[tuple[float, float]]] = {}
    totals: dict[tuple[str, str], int] = {}
    for at, task, stage, pusd in events:
        key = (task, stage)
        totals[key] = totals.get(key, 0) + int(pusd)
        spend.setdefault(key, []).append(((at - start).total_seconds(), totals[key] / 1e12))
    accepted: dict[str, list[tuple[float, int]]] = {}
    for at, task in units:
        series = accepted.setdefault(str(task), [])
        series.append(((at - start).total_seconds(), len(series) + 1))
    return CostData(run_id, kind, model, unit, spend, accepted)


def _time_unit(seconds: float) -> tuple[float, str]:
    if seconds < 180:
        return 1.0, "seconds"
    if seconds < 3 * 3600:
        return 60.0, "minutes"
    return 3600.0, "hours"


def _per_unit(data: CostData, task: str) -> list[tuple[float, float]]:
    """(seconds, spend of the task so far / its units so far) at each accepted unit."""
    events: list[tuple[float, float]] = []
    for (t, _), series in data.spend.items():
        if t == task:
            previous = 0.0
            for at, total in series:
                events.append((at, total - previous))
                previous = total
    events.sort()
    times = [at for at, _ in events]
    running, cumulative = 0.0, []
    for _, amount in events:
        running += amount
        cumulative.append(running)
    points = []
    accepted = data.accepted.get(task, [])
    for at, count in accepted:
        i = bisect.bisect_right(times, at)
        spent = cumulative[i - 1] if i else 0.0
        points.append((at, spent / count))
    if accepted and times and times[-1] > accepted[-1][0]:  # spend after the last sample
        points.append((times[-1], cumulative[-1] / accepted[-1][1]))
    return points


def plot_cost(data: CostData, path: str | Path) -> Path:
    """Draw ``data`` to ``path`` (.png, .svg or .pdf) and return the path."""
    figure_format(path)
    end = max([s[-1][0] for s in data.spend.values()] + [s[-1][0] for s in data.accepted.values()])
    scale, unit = _time_unit(end)
    fig = new_figure(11, 4.2)
    left, right = fig.subplots(1, 2)
    # one colour per task in both panels, one line style per stage
    tasks = sorted({t for t, _ in data.spend} | set(data.accepted))
    colours = {t: _COLOURS[i % len(_COLOURS)] for i, t in enumerate(tasks)}
    stages = sorted({s for _, s in data.spend}, key=lambda s: (_STAGE_ORDER.get(s, 9), s))
    styles = {s: _STYLES[i % len(_STYLES)] for i, s in enumerate(stages)}
    for (task, stage), series in sorted(
        data.spend.items(), key=lambda kv: (kv[0][0], _STAGE_ORDER.get(kv[0][1], 9), kv[0][1])
    ):
        xs = [0.0] + [at / scale for at, _ in series]
        ys = [0.0] + [usd for _, usd in series]
        name = " / ".join(p for p in (task, stage) if p) or "other"
        left.step(
            xs,
            ys,
            where="post",
            color=colours[task],
            linestyle=styles[stage],
            label=label(f"{name}: ${series[-1][1]:.4f}"),
        )
    left.set_title("Spend per task and stage", fontsize=10)
    left.set_xlabel(f"time since the run's first call ({unit})", fontsize=8)
    left.set_ylabel("cumulative spend (USD)", fontsize=8)
    left.legend(fontsize=7, frameon=False)
    plotted = False
    for task in sorted(data.accepted):
        points = _per_unit(data, task)
        if not points:
            continue
        plotted = True
        final = points[-1][1]
        count = data.accepted[task][-1][1]
        right.plot(
            [at / scale for at, _ in points],
            [v for _, v in points],
            color=colours[task],
            marker="." if len(points) < 50 else None,
            label=label(f"{task or 'all'}: ${final:.5f} over {count:,}"),
        )
    if not plotted:
        right.text(
            0.5,
            0.5,
            f"no {data.unit}s yet",
            ha="center",
            va="center",
            transform=right.transAxes,
            fontsize=9,
            color="#777777",
        )
    right.set_title(label(f"Cost per {data.unit}"), fontsize=10)
    right.set_xlabel(f"time since the run's first call ({unit})", fontsize=8)
    right.set_ylabel(label(f"USD per {data.unit}"), fontsize=8)
    right.set_ylim(bottom=0)
    if plotted:
        right.legend(fontsize=7, frameon=False)
    for ax in (left, right):
        ax.tick_params(labelsize=7.5)
        ax.grid(color="#eeeeee", linewidth=0.6)
    fig.suptitle(label(f"Run {data.run_id} ({data.kind}, {data.model})"), fontsize=11)
    return save(fig, path)
