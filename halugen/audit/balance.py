"""A balanced subset: as many items as possible, with no cheap classifier far from chance.

Every measure the audit reports (``length_only``, ``answer_only``, ``overlap``, or the ones
asked for) is measured on the kept items; while any is more than ``tolerance`` from 50%, the
items that the failing measures tell apart most surely are dropped, a share per round that
shrinks as the measures near chance, and all are measured again. "Most surely" is measured
per measure: for length, how much longer (or shorter, as the classifier leans) the
hallucinated text is than the right one, on a log scale; for the answer-only model, how much
more likely its held-out prediction finds the hallucinated text hallucinated than the right
one; for overlap, how much more (or less) of the hallucinated text's words the question or
knowledge side holds than of the right text's. The failing measures' ranks are combined,
weighted by how far each is from chance, so an item that gives itself away to several goes
first. Items are dropped whole (both texts), so every kept item is still a pair.

The result is the best subset the rounds passed through: every measure within tolerance if
one was found, else the one with the fewest measures out (then the smallest excess, then the
most items), and ``unbalanced`` names the measures it could not bring near chance. It is
not a proven maximum. Applies to paired tasks; a general-track file has no pairs to keep
together.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ..errors import UsageError
from ..intervals import half_width
from ..store.hard_splits import hard_path
from ..tasks.catalog import TaskCatalog
from ..version import __version__
from .classifiers import (
    MEASURES,
    examples_of,
    fit_stump,
    folds_of,
    overlap_with,
    sklearn_parts,
    word_vectors,
)
from .items import Item, fields_of
from .report import AuditRow

__all__ = [
    "BALANCED_MEASURES",
    "Balanced",
    "balance",
    "describe_balance",
    "write_balanced",
]

TOLERANCE = 0.05
MIN_ITEMS = 10
MAX_ROUNDS = 60


@dataclass
class Balanced:
    kept: list[Item]
    dropped: list[tuple[Item, str, float]] = field(default_factory=list)  # item, why, how sure
    balanced: bool = False
    rounds: int = 0
    figures: dict[str, float | None] = field(default_factory=dict)  # after: measure -> value
    # the measures still more than the tolerance from chance on ``kept``
    unbalanced: tuple[str, ...] = ()

    def by_reason(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, reason, _ in self.dropped:
            out[reason] = out.get(reason, 0) + 1
        return out


def _length_tells(items: Sequence[Item]) -> list[float]:
    """Per item: how far its hallucinated text's length gives it away, as the length
    classifier leans (fitted on all items: the lean, not a score, is what is used)."""
    examples = examples_of(items)
    _, longer, _ = fit_stump(
        [float(len(ex.text)) for ex in examples], [ex.label for ex in examples], balanced=False
    )
    sign = 1.0 if longer else -1.0
    return [
        sign * (math.log(1 + len(i.hallucinated or "")) - math.log(1 + len(i.right))) for i in items
    ]


def _overlap_tells(items: Sequence[Item]) -> list[float]:
    """Per item: how far its texts' word overlap with the side the overlap classifier
    prefers (question or knowledge, fitted on all items) gives the hallucinated one away."""
    examples = examples_of(items)
    labels = [ex.label for ex in examples]
    best: tuple[float, str, bool] | None = None
    for side in ("question", "knowledge"):
        values = [overlap_with(ex.text, getattr(ex, side)) for ex in examples]
        _, above, fit = fit_stump(values, labels, balanced=False)
        if best is None or fit > best[0]:
            best = (fit, side, above)
    assert best is not None
    _, side, above = best
    sign = 1.0 if above else -1.0
    return [
        sign
        * (
            overlap_with(i.hallucinated or "", getattr(i, side))
            - overlap_with(i.right, getattr(i, side))
        )
        for i in items
    ]


def _answer_tells(items: Sequence[Item]) -> list[float]:
    """Per item: held-out P(hallucinated | its hallucinated text) - P(... | its right text)."""
    _, logreg, _ = sklearn_parts()
    examples = examples_of(items)
    vectors = word_vectors([ex.text for ex in examples])
    folds = folds_of(examples)
    prob = [0.5] * len(examples)
    for fold in sorted(set(folds)):
        train = [i for i, f in enumerate(folds) if f != fold]
        test = [i for i, f in enumerate(folds) if f == fold]
        labels = [examples[i].label for i in train]
        if len(set(labels)) < 2:
            continue
        model = logreg(solver="liblinear").fit(vectors[train], labels)
        col = list(model.classes_).index(True)
        for i, p in zip(test, model.predict_proba(vectors[test])[:, col], strict=True):
            prob[i] = float(p)
    # examples_of gives (right, hallucinated) per item, in item order
    return [prob[2 * k + 1] - prob[2 * k] for k in range(len(items))]


# measure -> how surely each item gives itself away to it
_TELLS: dict[str, Callable[[Sequence[Item]], list[float]]] = {
    "length_only": _length_tells,
    "answer_only": _answer_tells,
    "overlap": _overlap_tells,
}
BALANCED_MEASURES = tuple(_TELLS)


def _far(value: float | None, tolerance: float) -> float:
    return 0.0 if value is None else abs(value - 0.5) - tolerance


def _ranks(values: Sequence[float]) -> list[float]:
    """Each value's rank among ``values`` scaled to [0, 1] (1: the largest)."""
    order = sorted(range(len(values)), key=lambda k: values[k])
    out = [0.0] * len(values)
    for r, k in enumerate(order):
        out[k] = r / max(1, len(values) - 1)
    return out


def balance(
    items: Sequence[Item],
    *,
    tolerance: float = TOLERANCE,
    measures: Sequence[str] = BALANCED_MEASURES,
) -> Balanced:
    """The balanced subset of ``items`` (all of one paired task) for ``measures``."""
    if any(i.hallucinated is None for i in items):
        raise UsageError(
            "--balance keeps pairs of right and hallucinated texts together; the general "
            "track has single responses (audit it without --balance)"
        )
    unknown = [m for m in measures if m not in _TELLS]
    if unknown or not measures:
        raise UsageError(
            f"--balance works on {', '.join(_TELLS)}, not {', '.join(unknown) or '(none)'}"
        )
    if "answer_only" in measures:
        sklearn_parts()  # fail early, before any round
    kept = list(items)
    dropped: list[tuple[Item, str, float]] = []
    best: tuple[tuple[int, float, int], Balanced] | None = None
    for rounds in range(MAX_ROUNDS + 1):
        examples = examples_of(kept)
        figures = {m: MEASURES[m][1](examples).value for m in measures}
        far = {m: _far(figures[m], tolerance) for m in measures}
        failing = [m for m in measures if far[m] > 0]
        state = Balanced(
            kept=list(kept),
            dropped=list(dropped),
            balanced=not failing,
            rounds=rounds,
            figures=figures,
            unbalanced=tuple(failing),
        )
        rank = (len(failing), sum(far[m] for m in failing), -len(kept))
        if best is None or rank < best[0]:
            best = (rank, state)
        if not failing or len(kept) <= MIN_ITEMS or rounds == MAX_ROUNDS:
            break
        # each failing measure ranks the items by how surely they give themselves away, in
        # the direction it leans now; the ranks add up, weighted by how far it is out
        combined = [0.0] * len(kept)
        ranks: dict[str, list[float]] = {}
        for m in failing:
            tells = _TELLS[m](kept)
            lean = 1.0 if (figures[m] or 0.5) > 0.5 else -1.0
            ranks[m] = _ranks([lean * t for t in tells])
            for k, r in enumerate(ranks[m]):
                combined[k] += far[m] * r
        # drop more while far from chance, a little near it
        share = min(0.25, max(0.02, max(far[m] for m in failing)))
        count = max(1, min(len(kept) - MIN_ITEMS, math.ceil(share * len(kept))))
        order = sorted(range(len(kept)), key=lambda k: combined[k], reverse=True)
        drop = set(order[:count])
        for k in sorted(drop):
            why = max(failing, key=lambda m: ranks[m][k])
            dropped.append((kept[k], why, combined[k]))
        kept = [item for k, item in enumerate(kept) if k not in drop]
    assert best is not None
    return best[1]


def _out_of_tolerance(rows: Sequence[AuditRow], tolerance: float) -> list[AuditRow]:
    """The rows far from chance, the certifying probes' aside: balancing never aims at
    them, they judge its result (``certify``)."""
    from .probes import PROBES

    return [
        r
        for r in rows
        if r.value is not None
        and r.chance is not None
        and r.measure not in PROBES
        and abs(r.value - r.chance) > tolerance
    ]


def describe_balance(
    result: Balanced,
    source: str,
    after: Sequence[AuditRow],
    *,
    total: int,
    tolerance: float = TOLERANCE,
) -> tuple[str, str, bool]:
    """(the title of the kept subset's audit, a one-line summary, whether it is balanced).

    The title says "balanced" only when every figure the audit reports on the subset (each
    measure, each pattern) is within ``tolerance`` of chance; otherwise it names the ones
    that are not, with what is left of them.
    """
    out = _out_of_tolerance(after, tolerance)
    points = f"{tolerance * 100:g} points"
    figures = ", ".join(f"{m} {v * 100:.1f}%" for m, v in result.figures.items() if v is not None)
    reasons = ", ".join(f"{n} by {why}" for why, n in result.by_reason().items()) or "none"
    kept = f"kept {len(result.kept)} of {total} item(s), dropped {len(result.dropped)} ({reasons})"
    if not out and result.balanced:
        return (
            f"{source} (balanced)",
            f"balanced: {kept}; {figures}: every measure within {points} of 50%",
            True,
        )

    def name(r: AuditRow) -> str:
        where = "" if r.pattern == "all" else f" [{r.pattern}]"
        return f"{r.measure}{where} {(r.value or 0.0) * 100:.1f}%"

    failing = [name(r) for r in out] or [
        f"{m} {(result.figures.get(m) or 0) * 100:.1f}%" for m in result.unbalanced
    ]
    names = ", ".join(failing)
    return (
        f"{source} (subset, NOT balanced: {names})",
        f"not balanced: {kept}; could not bring {names} within {points} of 50% "
        f"({len(result.kept)} item(s) left); {figures}",
        False,
    )


def _record(item: Item, tasks: TaskCatalog) -> bytes:
    if item.raw:
        return item.raw  # the line as read: byte for byte
    spec = tasks[item.task]
    right, hallucinated, question, knowledge = fields_of(spec)
    values = {right: item.right, hallucinated: item.hallucinated or ""}
    if question:
        values[question] = item.question
    if knowledge:
        values[knowledge] = item.knowledge
    # a field with none of the four roles is not carried by an item: written empty
    layout = spec.record_fields
    return orjson.dumps({name: values.get(name, "") for name in layout})


def _write_lines(items: Sequence[Item], path: Path, tasks: TaskCatalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with tmp.open("wb") as f:
        for item in items:
            f.write(_record(item, tasks) + b"\n")
    os.replace(tmp, path)


def write_balanced(
    result: Balanced,
    out: Path,
    *,
    source: str,
    full: Sequence[Item],
    before: Sequence[AuditRow],
    after: Sequence[AuditRow],
    tolerance: float = TOLERANCE,
    balanced: bool | None = None,
    tasks: TaskCatalog | None = None,
) -> tuple[Path, Path]:
    """The full set as HaluEval JSON lines at ``out``, the hard split (the kept items)
    beside it (``hard_path``), never in its place, and ``<out>.audit.json`` with both
    splits' sizes, the hard split's interval width, the audit figures before and after, and
    what was dropped and why (``balanced``: the verdict on the figures after, per pattern
    too; by default the measures'). Returns (the metadata file, the hard split's file).
    ``tasks`` declares the items' tasks (default: the built-in ones)."""

    hard = hard_path(out)
    catalog = TaskCatalog() if tasks is None else tasks
    _write_lines(full, out, catalog)
    _write_lines(result.kept, hard, catalog)
    meta = out.with_name(out.name + ".audit.json")

    def rows(rs: Sequence[AuditRow]) -> list[dict[str, object]]:
        return [
            {
                "task": r.task,
                "pattern": r.pattern,
                "measure": r.measure,
                "n": r.n,
                "value": r.value,
                "ci": [r.low, r.high],
                "chance": r.chance,
            }
            for r in rs
        ]

    meta.write_bytes(
        orjson.dumps(
            {
                "source": source,
                "file": out.name,
                "splits": {
                    "test": {"file": out.name, "n": len(full)},
                    "hard": {
                        "file": hard.name,
                        "n": len(result.kept),
                        "kept_share": len(result.kept) / len(full) if full else None,
                        "interval_half_width": half_width(len(result.kept)),
                        "balanced_by": list(result.figures),
                    },
                },
                "halugen_version": __version__,
                "tolerance": tolerance,
                "balanced": result.balanced if balanced is None else balanced,
                "unbalanced": list(result.unbalanced),
                "measures": result.figures,
                "kept": len(result.kept),
                "dropped": len(result.dropped),
                "dropped_by_reason": result.by_reason(),
                "rounds": result.rounds,
                "audit_before": rows(before),
                "audit_after": rows(after),
                "dropped_items": [
                    {"item_id": i.item_id, "reason": why, "tell": round(t, 4)}
                    for i, why, t in result.dropped
                ],
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    return meta, hard
