"""A balanced subset: as many items as possible, with no cheap classifier far from chance.

Greedy, one classifier at a time: while the length-only or the answer-only baseline is more
than ``tolerance`` from 50%, the items that baseline tells apart most surely are dropped,
a share per round that shrinks as the baseline nears chance, and both are measured again.
"Most surely" is measured out of fold: for length, how much longer (or shorter, as the
classifier leans) the hallucinated text is than the right one, on a log scale; for the
answer-only model, how much more likely its held-out prediction finds the hallucinated
text hallucinated than the right one. Items are dropped whole (both texts), so every kept
item is still a pair. The result is the largest subset this procedure finds, not a proven
maximum. Applies to paired tasks; a general-track file has no pairs to keep together.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from .. import __version__
from ..errors import UsageError
from ..tasks import get_task
from .classifiers import (
    answer_only,
    examples_of,
    fit_stump,
    folds_of,
    length_only,
    sklearn_parts,
)
from .items import Item, fields_of
from .report import AuditRow

__all__ = ["Balanced", "balance", "write_balanced"]

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


def _answer_tells(items: Sequence[Item]) -> list[float]:
    """Per item: held-out P(hallucinated | its hallucinated text) - P(... | its right text)."""
    tfidf, logreg, make_union = sklearn_parts()
    examples = examples_of(items)
    vectors = make_union(
        tfidf(analyzer="word", ngram_range=(1, 2), sublinear_tf=True),
        tfidf(analyzer="char_wb", ngram_range=(2, 4), min_df=2, sublinear_tf=True),
    ).fit_transform([ex.text for ex in examples])
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


def _far(value: float | None, tolerance: float) -> float:
    return 0.0 if value is None else abs(value - 0.5) - tolerance


def balance(items: Sequence[Item], *, tolerance: float = TOLERANCE) -> Balanced:
    """The balanced subset of ``items`` (all of one paired task)."""
    if any(i.hallucinated is None for i in items):
        raise UsageError(
            "--balance keeps pairs of right and hallucinated texts together; the general "
            "track has single responses (audit it without --balance)"
        )
    sklearn_parts()  # the answer-only baseline is one of the two to balance: fail early
    result = Balanced(kept=list(items))
    for _ in range(MAX_ROUNDS):
        examples = examples_of(result.kept)
        scores = {"length_only": length_only(examples), "answer_only": answer_only(examples)}
        result.figures = {m: s.value for m, s in scores.items()}
        far = {m: _far(s.value, tolerance) for m, s in scores.items()}
        # length first: it is the cheaper tell, and the n-grams often only echo it
        worst = "length_only" if far["length_only"] > 0 else "answer_only"
        if far[worst] <= 0:
            result.balanced = True
            return result
        if len(result.kept) <= MIN_ITEMS:
            return result
        tells = _length_tells(result.kept) if worst == "length_only" else _answer_tells(result.kept)
        # drop more while far from chance, a little near it
        share = min(0.25, max(0.02, far[worst]))
        count = max(1, min(len(result.kept) - MIN_ITEMS, math.ceil(share * len(result.kept))))
        order = sorted(range(len(result.kept)), key=lambda k: tells[k], reverse=True)
        drop = set(order[:count])
        result.dropped.extend((result.kept[k], worst, tells[k]) for k in sorted(drop))
        result.kept = [item for k, item in enumerate(result.kept) if k not in drop]
        result.rounds += 1
    return result


def _record(item: Item) -> bytes:
    if item.raw:
        return item.raw  # the line as read: byte for byte
    right, hallucinated, question, knowledge = fields_of(item.task)
    values = {right: item.right, hallucinated: item.hallucinated or ""}
    if question:
        values[question] = item.question
    if knowledge:
        values[knowledge] = item.knowledge
    # a field with none of the four roles is not carried by an item: written empty
    layout = get_task(item.task).record_fields
    return orjson.dumps({name: values.get(name, "") for name in layout})


def write_balanced(
    result: Balanced,
    out: Path,
    *,
    source: str,
    before: Sequence[AuditRow],
    after: Sequence[AuditRow],
    tolerance: float = TOLERANCE,
) -> Path:
    """The kept items as HaluEval JSON lines at ``out``, and ``<out>.audit.json`` beside it
    with the audit figures before and after, and what was dropped and why. Returns the
    metadata file's path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with tmp.open("wb") as f:
        for item in result.kept:
            f.write(_record(item) + b"\n")
    os.replace(tmp, out)
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
                "halugen_version": __version__,
                "tolerance": tolerance,
                "balanced": result.balanced,
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
    return meta
