"""Judges compared on the same items: a leaderboard and every pair's paired test.

A *system* is one result group of ``results.latest_judgements`` (task, data source, model,
strategy, scoring): a model asked one way. Per task, ``compare_judgements`` ranks the systems
by accuracy (with the interval ``metrics.compute`` gives: Wilson, or a cluster bootstrap over
dialogues) and tests every pair on the items both judged, the same item shown the same way
(paired.py: exact McNemar p-value, a paired cluster bootstrap interval of the difference,
Holm's adjustment across every pair compared). ``compare_tables`` lays the result out for the
one table renderer (``tables.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..tasks.catalog import TaskCatalog
from .metrics import BOOTSTRAP_ROUNDS, Judged, Metrics, compute
from .paired import holm, mcnemar_exact, paired_difference
from .results import TASK_TITLES, LatestJudgement, latest_judgements, order_key, task_title

__all__ = [
    "Comparison",
    "PairResult",
    "SystemResult",
    "compare_from_store",
    "compare_judgements",
    "compare_tables",
]


@dataclass(frozen=True)
class SystemResult:
    """One model asked one way, on all the items it judged."""

    task: str
    label: str  # model · strategy (scoring) [source], as short as tells it apart
    model: str
    strategy: str
    scoring: str
    source: str
    metrics: Metrics
    runs: tuple[str, ...]


@dataclass(frozen=True)
class PairResult:
    """A against B on the items both judged (``a`` ranks above ``b`` on its own items)."""

    task: str
    a: str
    b: str
    paired: int  # judgements of the same item shown the same way by both
    clusters: int  # independent units among them (dialogues; an item alone is one)
    a_accuracy: float  # on the paired items
    b_accuracy: float
    a_only: int  # items A got right and B wrong
    b_only: int  # and the other way round
    difference: float  # a_accuracy - b_accuracy
    ci: tuple[float, float]  # paired cluster bootstrap, 95%
    p_value: float  # exact McNemar, two-sided
    p_holm: float  # Holm-adjusted across every pair of the comparison


@dataclass(frozen=True)
class Comparison:
    systems: list[SystemResult]
    pairs: list[PairResult]
    seed: int
    rounds: int


def _labels(groups: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Per group, "model · strategy", with the scoring when not parse, the reader when not
    strict, and the data source only when two groups of a task would otherwise read the same."""
    base = {}
    for group in groups:
        _task, _source, model, strategy, scoring, *reader = group
        how = [scoring] if scoring != "parse" else []
        how += [f"{reader[0]} read"] if reader and reader[0] != "strict" else []
        text = f"{model} · {strategy}"
        base[group] = f"{text} ({', '.join(how)})" if how else text
    seen: dict[tuple[str, str], int] = {}
    for g, text in base.items():
        seen[(g[0], text)] = seen.get((g[0], text), 0) + 1
    return {g: text if seen[(g[0], text)] == 1 else f"{text} [{g[1]}]" for g, text in base.items()}


def compare_judgements(
    latest: Sequence[LatestJudgement], *, seed: int = 0, rounds: int = BOOTSTRAP_ROUNDS
) -> Comparison:
    """Systems ranked by accuracy within each task, and every pair of a task tested."""
    by_group: dict[tuple[str, ...], dict[tuple[str, str], Judged]] = {}
    runs: dict[tuple[str, ...], set[str]] = {}
    for j in latest:
        by_group.setdefault(j.group, {})[(j.item_key, j.shown)] = j.judged
        runs.setdefault(j.group, set()).add(j.run_id)
    labels = _labels(list(by_group))
    ranked = sorted(
        (
            (
                g,
                SystemResult(
                    task=g[0],
                    label=labels[g],
                    model=g[2],
                    strategy=g[3],
                    scoring=g[4],
                    source=g[1],
                    metrics=compute(list(items.values())),
                    runs=tuple(sorted(runs[g])),
                ),
            )
            for g, items in by_group.items()
        ),
        key=lambda gs: (
            order_key(gs[1].task, tuple(TASK_TITLES)),
            -(gs[1].metrics.accuracy or 0.0),
            gs[1].label,
        ),
    )
    raw: list[tuple[Any, ...]] = []
    for i, (group_a, a) in enumerate(ranked):
        for group_b, b in ranked[i + 1 :]:
            if b.task == a.task:
                stats = _pair(by_group[group_a], by_group[group_b], seed=seed, rounds=rounds)
                raw.append((a, b, stats))
    adjusted = holm([stats["p_value"] for _, _, stats in raw])
    pairs = [
        PairResult(task=a.task, a=a.label, b=b.label, **stats, p_holm=p_holm)
        for (a, b, stats), p_holm in zip(raw, adjusted, strict=True)
    ]
    return Comparison([s for _, s in ranked], pairs, seed, rounds)


def _pair(
    a: dict[tuple[str, str], Judged], b: dict[tuple[str, str], Judged], *, seed: int, rounds: int
) -> dict[str, Any]:
    """``PairResult``'s figures (all but the Holm-adjusted p) on the items both judged."""
    clusters: dict[str, list[int]] = {}
    a_only = b_only = a_right = b_right = 0
    for key in sorted(a.keys() & b.keys()):
        ja, jb = a[key], b[key]
        cluster = ja.cluster or jb.cluster or "\0".join(("", *key))  # "": an item alone
        counts = clusters.setdefault(cluster, [0, 0, 0])
        counts[0] += ja.right
        counts[1] += jb.right
        counts[2] += 1
        a_right += ja.right
        b_right += jb.right
        a_only += ja.right and not jb.right
        b_only += jb.right and not ja.right
    paired = sum(c[2] for c in clusters.values())
    difference, ci = paired_difference(
        [(x, y, m) for x, y, m in clusters.values()], rounds=rounds, seed=seed
    )
    return {
        "paired": paired,
        "clusters": len(clusters),
        "a_accuracy": a_right / paired if paired else 0.0,
        "b_accuracy": b_right / paired if paired else 0.0,
        "a_only": a_only,
        "b_only": b_only,
        "difference": difference,
        "ci": ci,
        "p_value": mcnemar_exact(a_only, b_only),
    }


def compare_from_store(
    conn: Any,
    run_ids: Sequence[str] | None = None,
    *,
    task: str | None = None,
    seed: int = 0,
    rounds: int = BOOTSTRAP_ROUNDS,
) -> Comparison:
    """``compare_judgements`` over the store's judgements (of ``run_ids``, of ``task``)."""
    latest = [j for j in latest_judgements(conn, run_ids) if task is None or j.group[0] == task]
    return compare_judgements(latest, seed=seed, rounds=rounds)


# -- tables --------------------------------------------------------------------------------

_DASH = "—"


def _pct(value: float | None) -> str:
    return _DASH if value is None else f"{value * 100:.1f}"


def _interval(ci: tuple[float, float] | None) -> str:
    return _DASH if ci is None else f"[{_pct(ci[0])}, {_pct(ci[1])}]"


def _signed(value: float) -> str:
    return f"{value * 100:+.1f}"


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _method(m: Metrics) -> str:
    if m.interval == "wilson":
        return "Wilson"
    unit = f"{m.clusters} dialogues"
    return f"exact, {unit}" if m.interval == "exact" else f"cluster bootstrap, {unit}"


_SYSTEM_COLUMNS = ("Task", "Model · strategy", "n", "Accuracy", "95% CI")
_SYSTEM_FIELDS = (
    "task",
    "system",
    "model",
    "strategy",
    "scoring",
    "source",
    "n",
    "accuracy",
    "ci_low",
    "ci_high",
    "ci_method",
    "runs",
)
_PAIR_COLUMNS = ("Task", "A", "B", "Paired", "A only", "B only", "A − B", "95% CI", "p", "p Holm")
_PAIR_FIELDS = (
    "task",
    "a",
    "b",
    "paired",
    "clusters",
    "a_accuracy",
    "b_accuracy",
    "a_only",
    "b_only",
    "difference",
    "ci_low",
    "ci_high",
    "p_mcnemar",
    "p_holm",
)


def _notes(c: Comparison) -> tuple[str, str]:
    systems = (
        "Accuracy in % on every item a model judged, invalid replies counted wrong; the 95% "
        "interval is Wilson's, or resamples whole dialogues when items share one (exact "
        "Clopper-Pearson over them at 0% and 100%)."
    )
    m = len(c.pairs)
    pairs = (
        f"Each pair on the items both judged (the same item shown the same way: Paired). A only "
        f"/ B only: items one got right and the other wrong. A − B in percentage points, its "
        f"95% interval from a paired bootstrap resampling whole clusters ({c.rounds} rounds, "
        f"seed {c.seed}); p: exact McNemar test (two-sided binomial on A only vs B only); "
        f"p Holm: adjusted for the {m} pair(s) compared."
    )
    return systems, pairs


def compare_tables(
    c: Comparison, *, numbers: bool = False, tasks: TaskCatalog | None = None
) -> list[Any]:
    """The leaderboard and the pairs as ``halugen.tables.TableData``: formatted cells (%,
    intervals, p-values) for reading, or with ``numbers`` one field per value, ratios as
    fractions (``--format csv`` / ``json``)."""
    from ..tables import TableData

    system_note, pair_note = _notes(c)
    if numbers:
        system_rows = [
            [
                s.task,
                s.label,
                s.model,
                s.strategy,
                s.scoring,
                s.source,
                s.metrics.n,
                s.metrics.accuracy,
                *(s.metrics.accuracy_ci or (None, None)),
                _method(s.metrics),
                " ".join(s.runs),
            ]
            for s in c.systems
        ]
        pair_rows = [
            [
                p.task,
                p.a,
                p.b,
                p.paired,
                p.clusters,
                p.a_accuracy,
                p.b_accuracy,
                p.a_only,
                p.b_only,
                p.difference,
                *p.ci,
                p.p_value,
                p.p_holm,
            ]
            for p in c.pairs
        ]
        return [
            TableData("Accuracy", _SYSTEM_FIELDS, system_rows, name="systems"),
            TableData("Paired differences", _PAIR_FIELDS, pair_rows, name="pairs"),
        ]
    systems = TableData(
        "Accuracy (%)",
        list(_SYSTEM_COLUMNS),
        [
            [
                task_title(s.task, tasks),
                s.label,
                str(s.metrics.n),
                _pct(s.metrics.accuracy),
                _interval(s.metrics.accuracy_ci),
            ]
            for s in c.systems
        ],
        name="systems",
        caption=system_note,
        align=["l", "l", "r", "r", "r"],
    )
    pairs = TableData(
        "Paired differences (percentage points)",
        list(_PAIR_COLUMNS),
        [
            [
                task_title(p.task, tasks),
                p.a,
                p.b,
                str(p.paired),
                str(p.a_only),
                str(p.b_only),
                _signed(p.difference),
                f"[{_signed(p.ci[0])}, {_signed(p.ci[1])}]",
                _p(p.p_value),
                _p(p.p_holm),
            ]
            for p in c.pairs
        ],
        name="pairs",
        caption=pair_note,
        align=["l", "l", "l", *("r" for _ in range(7))],
    )
    return [systems, pairs]
