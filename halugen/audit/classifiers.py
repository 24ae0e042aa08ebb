"""Cheap classifiers that never see the knowledge, cross-validated, with honest intervals.

Each item gives examples: a pair gives its right text (label False) and its hallucinated
text (label True), a general-track response gives itself with its human label. A classifier
sees one example's text and says whether it is hallucinated, as a recognition judge does.
Folds keep the examples of one group (a pair, or an OpenDialKG dialogue) together, so no
classifier is scored on a text whose partner it was trained on.

* ``length_only``: a threshold on the text's length in characters (either direction);
* ``answer_only``: logistic regression on the word 1-2-grams of the text (scikit-learn,
  the ``topics`` extra; character n-grams are a certifying probe's, ``probes``);
* ``overlap``: a threshold on the share of the text's words found in the question side or
  in the knowledge side (whichever splits the training folds better).

Accuracy for pairs (chance 50% by construction); balanced accuracy for general-track
responses, whose labels are not balanced (chance 50% too). The interval is 95%, from the
variance between groups (clusters), not between examples: two texts of a pair are not two
independent trials.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..records import fingerprint
from ..tasks.base import content_words
from .items import Item

__all__ = [
    "MEASURES",
    "MISSING_EXTRA",
    "Example",
    "Score",
    "answer_only",
    "cross_validate",
    "examples_of",
    "fit_stump",
    "folds_of",
    "length_only",
    "overlap",
    "overlap_with",
    "ratio_interval",
    "score",
    "sklearn_parts",
    "word_vectors",
]

MISSING_EXTRA = (
    "the answer-only audit needs scikit-learn, from the topics extra: pip install "
    "'halugen[topics]' (or leave it out: --measures length_only,overlap)"
)
FOLDS = 5
Z95 = 1.959964


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: bool  # True: hallucinated
    group: str  # examples of one group stay in one fold
    question: str = ""
    knowledge: str = ""


def examples_of(items: Sequence[Item]) -> list[Example]:
    out = []
    for item in items:
        group = item.cluster or item.item_id
        if item.hallucinated is None:  # a general-track response
            out.append(Example(item.right, bool(item.label), group, item.question, item.knowledge))
        else:
            out.append(Example(item.right, False, group, item.question, item.knowledge))
            out.append(Example(item.hallucinated, True, group, item.question, item.knowledge))
    return out


@dataclass(frozen=True)
class Score:
    """A classifier's cross-validated result: ``value`` with its 95% interval."""

    value: float | None
    low: float | None
    high: float | None
    n: int  # examples scored
    groups: int
    balanced: bool  # value is balanced accuracy (labels not balanced by construction)


def folds_of(examples: Sequence[Example], k: int = FOLDS) -> list[int]:
    """A fold per example: groups spread round-robin in a hashed (deterministic) order,
    each label class on its own so that every fold holds both."""
    groups: dict[bool, list[str]] = {True: [], False: []}
    first_label: dict[str, bool] = {}
    for ex in examples:
        if ex.group not in first_label:
            first_label[ex.group] = ex.label
            groups[ex.label].append(ex.group)
    fold_of: dict[str, int] = {}
    start = 0
    for label in (True, False):
        ordered = sorted(groups[label], key=lambda g: fingerprint(["fold", g], size=16))
        for i, group in enumerate(ordered):
            fold_of[group] = (start + i) % k
        start += len(ordered)
    return [fold_of[ex.group] for ex in examples]


def _is_paired(examples: Sequence[Example]) -> bool:
    return sum(ex.label for ex in examples) * 2 == len(examples)


def score(examples: Sequence[Example], predicted: Sequence[bool]) -> Score:
    """Accuracy (pairs) or balanced accuracy (unpaired labels) with a cluster interval."""
    n = len(examples)
    if not n:
        return Score(None, None, None, 0, 0, False)
    balanced = not _is_paired(examples)
    by_group: dict[str, list[tuple[bool, bool]]] = {}
    for ex, p in zip(examples, predicted, strict=True):
        by_group.setdefault(ex.group, []).append((ex.label, p == ex.label))
    if not balanced:
        totals = [(sum(ok for _, ok in rows), len(rows)) for rows in by_group.values()]
        value, low, high = ratio_interval(totals)
        return Score(value, low, high, n, len(by_group), False)
    # balanced accuracy: the mean of the two classes' accuracies, each with its variance
    parts = []
    for label in (True, False):
        totals = [
            (sum(ok for lab, ok in rows if lab == label), sum(lab == label for lab, _ in rows))
            for rows in by_group.values()
        ]
        totals = [t for t in totals if t[1]]
        if not totals:
            return Score(None, None, None, n, len(by_group), True)
        parts.append(_ratio_and_variance(totals))
    value = (parts[0][0] + parts[1][0]) / 2
    half = Z95 * math.sqrt(parts[0][1] + parts[1][1]) / 2
    return Score(value, max(0.0, value - half), min(1.0, value + half), n, len(by_group), True)


def _ratio_and_variance(totals: Sequence[tuple[int, int]]) -> tuple[float, float]:
    """(sum y / sum m, its variance) over clusters (y successes of m), the ratio estimator."""
    k = len(totals)
    y = sum(t[0] for t in totals)
    m = sum(t[1] for t in totals)
    p = y / m
    if k < 2:
        return p, p * (1 - p) / max(1, m)
    mean_m = m / k
    spread = sum((yi - p * mi) ** 2 for yi, mi in totals) / (k - 1)
    return p, spread / (k * mean_m * mean_m)


def ratio_interval(totals: Sequence[tuple[int, int]]) -> tuple[float, float, float]:
    """A proportion over clusters and its 95% interval (normal, cluster-robust variance)."""
    p, var = _ratio_and_variance(totals)
    half = Z95 * math.sqrt(var)
    return p, max(0.0, p - half), min(1.0, p + half)


# -- a threshold on one number ---------------------------------------------------------------


def fit_stump(
    values: Sequence[float], labels: Sequence[bool], *, balanced: bool
) -> tuple[float, bool, float]:
    """(threshold, above_is_hallucinated, score): the split of one number that classifies
    the training examples best (accuracy, or balanced accuracy)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    pos = sum(labels)
    neg = len(labels) - pos
    w_pos = 1 / (2 * pos) if balanced and pos else 1 / max(1, len(labels))
    w_neg = 1 / (2 * neg) if balanced and neg else 1 / max(1, len(labels))
    # everything above -inf: "above = hallucinated" scores the positives
    below_pos = below_neg = 0
    best = (-math.inf, True, pos * w_pos)
    if neg * w_neg > best[2]:
        best = (-math.inf, False, neg * w_neg)
    i = 0
    while i < len(order):
        v = values[order[i]]
        while i < len(order) and values[order[i]] == v:
            if labels[order[i]]:
                below_pos += 1
            else:
                below_neg += 1
            i += 1
        t = (v + values[order[i]]) / 2 if i < len(order) else math.inf
        above_h = below_neg * w_neg + (pos - below_pos) * w_pos
        below_h = below_pos * w_pos + (neg - below_neg) * w_neg
        if above_h > best[2]:
            best = (t, True, above_h)
        if below_h > best[2]:
            best = (t, False, below_h)
    return best


def cross_validate(
    examples: Sequence[Example],
    fit_predict: Callable[[list[Example], list[Example]], list[bool]],
) -> Score:
    if len({ex.group for ex in examples}) < 2 or len({ex.label for ex in examples}) < 2:
        return Score(None, None, None, len(examples), len({ex.group for ex in examples}), False)
    folds = folds_of(examples)
    predicted: list[bool | None] = [None] * len(examples)
    for fold in sorted(set(folds)):
        train = [ex for ex, f in zip(examples, folds, strict=True) if f != fold]
        test_idx = [i for i, f in enumerate(folds) if f == fold]
        if not train or len({ex.label for ex in train}) < 2:
            continue
        for i, p in zip(test_idx, fit_predict(train, [examples[i] for i in test_idx]), strict=True):
            predicted[i] = p
    kept = [(ex, p) for ex, p in zip(examples, predicted, strict=True) if p is not None]
    return score([ex for ex, _ in kept], [p for _, p in kept])


def _stump_predict(feature: Callable[[Example], float]) -> Callable:
    def fit_predict(train: list[Example], test: list[Example]) -> list[bool]:
        balanced = not _is_paired(train)
        t, above, _ = fit_stump(
            [feature(ex) for ex in train], [ex.label for ex in train], balanced=balanced
        )
        return [(feature(ex) > t) == above for ex in test]

    return fit_predict


def length_only(examples: Sequence[Example]) -> Score:
    """Accuracy of a length threshold (characters, as given: whitespace counts too)."""
    return cross_validate(examples, _stump_predict(lambda ex: float(len(ex.text))))


def overlap_with(text: str, other: str) -> float:
    """The share of ``text``'s words (stop words aside) that ``other`` holds."""
    words = content_words(text)
    return len(words & content_words(other)) / len(words) if words else 0.0


def overlap(examples: Sequence[Example]) -> Score:
    """Accuracy of a threshold on the text's word overlap with the question side or the
    knowledge side, whichever the training folds favour."""

    def fit_predict(train: list[Example], test: list[Example]) -> list[bool]:
        balanced = not _is_paired(train)
        fits = []
        for side in ("question", "knowledge"):
            values = [overlap_with(ex.text, getattr(ex, side)) for ex in train]
            t, above, s = fit_stump(values, [ex.label for ex in train], balanced=balanced)
            fits.append((side, t, above, s))
        # the better side; the first on a tie
        side, t, above, _ = max(fits, key=lambda fit: fit[3])
        return [(overlap_with(ex.text, getattr(ex, side)) > t) == above for ex in test]

    return cross_validate(examples, fit_predict)


def sklearn_parts() -> tuple[Any, Any, Any]:
    """(TfidfVectorizer, LogisticRegression, make_union), or the extra's install line."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_union
    except ImportError:
        raise UsageError(MISSING_EXTRA) from None
    return TfidfVectorizer, LogisticRegression, make_union


def word_vectors(texts: Sequence[str]) -> Any:
    """TF-IDF of the word 1-2-grams of ``texts`` (fitted on them: no label is seen). The
    one text representation ``answer_only`` and ``--balance`` use; character n-grams are
    left to the certifying probe, so balancing never tunes what certifies."""
    tfidf, _, _ = sklearn_parts()
    return tfidf(analyzer="word", ngram_range=(1, 2), sublinear_tf=True).fit_transform(texts)


def answer_only(examples: Sequence[Example]) -> Score:
    """Accuracy of logistic regression on the text's word n-grams alone.

    The n-gram vocabulary and its IDF weights are fitted once on every text (they never see
    a label), the regression on the training folds only.
    """
    _, logreg, _ = sklearn_parts()
    vectors = word_vectors([ex.text for ex in examples])
    row = {id(ex): i for i, ex in enumerate(examples)}

    def fit_predict(train: list[Example], test: list[Example]) -> list[bool]:
        model = logreg(solver="liblinear", class_weight=None if _is_paired(train) else "balanced")
        model.fit(vectors[[row[id(ex)] for ex in train]], [ex.label for ex in train])
        return [bool(p) for p in model.predict(vectors[[row[id(ex)] for ex in test]])]

    return cross_validate(examples, fit_predict)


# measure -> (what it looks at, the classifier)
MEASURES: dict[str, tuple[str, Callable[[Sequence[Example]], Score]]] = {
    "length_only": ("length of the text alone", length_only),
    "answer_only": ("the text alone: word n-grams", answer_only),
    "overlap": ("word overlap of the text with the question / knowledge", overlap),
}
