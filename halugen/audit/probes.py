"""Certifying probes: shortcuts the audit looks for with what made the data never saw.

The generation guards (``tasks.checks``, ``tasks.form_guards``) shape each hallucination
after its right text, and ``--balance`` drops items by length, word n-grams and word
overlap (``balance``). A benchmark certified by those same measures would be certified by
the tools that tuned it. These probes read the texts their own way, raw (no normalising:
a trailing newline or a final full stop is exactly what they look for):

* ``substring``: "the text appears in the knowledge => right", as a fixed rule;
* ``final_char``: the text's last character's class (., ?, !, other punctuation,
  whitespace, letter or digit) mapped to a label, the map fitted on one half of the groups
  and scored on the other (both ways);
* ``casing``: the text's casing (first letter, all lower, all capitals) mapped the same way;
* ``char_ngrams``: cross-validated logistic regression on case-sensitive character
  1-4-grams, punctuation and whitespace included (scikit-learn);
* ``weak_ensemble``: in the manner of AFLite, many random half splits of the groups, a
  linear model on a few simple features (none of them length or word overlap) trained on
  one half and asked about the other; each text's predictability is the share of splits
  that got it right, and the ensemble's vote on each text is scored.

Each gives accuracy with the audit's cluster interval (``classifiers.score``); a probe is
"within 5 points of chance" only when its whole interval lies within 45-55%.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Callable, Sequence

from ..intervals import CHANCE_BAND
from .classifiers import Example, Score, cross_validate, folds_of, score, sklearn_parts

__all__ = [
    "PROBES",
    "casing_rule",
    "char_ngrams",
    "final_char_rule",
    "predictability",
    "substring_rule",
    "weak_ensemble",
    "within_chance",
]

SPLITS = 64  # random half splits of the weak ensemble
STRONG = 0.75  # AFLite's predictability threshold, reported as a share of the texts


def within_chance(s: Score, band: float = CHANCE_BAND) -> bool:
    """Does ``s``'s whole 95% interval lie within ``band`` of 50%?"""
    if s.low is None or s.high is None:
        return False
    return s.low >= 0.5 - band - 1e-12 and s.high <= 0.5 + band + 1e-12


# -- (a) the substring rule -------------------------------------------------------------------


def _squeezed(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def substring_rule(examples: Sequence[Example]) -> Score:
    """Accuracy of "the text appears in the knowledge (case and spacing aside) => right,
    else hallucinated". Nothing is fitted; a rule that works backwards shows below 50%."""
    predicted = []
    for ex in examples:
        text = _squeezed(ex.text)
        predicted.append(not (text and text in _squeezed(ex.knowledge)))
    return score(examples, predicted)


# -- (b) punctuation and casing rules ---------------------------------------------------------


def final_char_class(text: str) -> str:
    """The class of ``text``'s very last character, whitespace included."""
    if not text:
        return "empty"
    last = text[-1]
    if last in ".?!":
        return last
    if last.isspace():
        return "space"
    if last.isalnum():
        return "alnum"
    return "punct"


def casing_of(text: str) -> str:
    """First letter upper/lower, and whether every letter is lower or upper case."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "no letters"
    first = "Upper" if letters[0].isupper() else "lower"
    if all(c.islower() for c in letters):
        return f"{first}, all lower"
    if all(c.isupper() for c in letters):
        return f"{first}, all upper"
    return first


def _half_rule(examples: Sequence[Example], feature: Callable[[Example], str]) -> Score:
    """A class -> label map fitted on one half of the groups, scored on the other (both
    ways). A class the fitting half holds as often right as hallucinated, or not at all,
    is read as right."""
    halves = folds_of(examples, k=2)
    predicted: list[bool] = [False] * len(examples)
    for held in (0, 1):
        counts: dict[str, int] = {}
        for ex, half in zip(examples, halves, strict=True):
            if half != held:
                counts[feature(ex)] = counts.get(feature(ex), 0) + (1 if ex.label else -1)
        for i, (ex, half) in enumerate(zip(examples, halves, strict=True)):
            if half == held:
                predicted[i] = counts.get(feature(ex), 0) > 0
    if len(set(halves)) < 2:
        return Score(None, None, None, len(examples), len({e.group for e in examples}), False)
    return score(examples, predicted)


def final_char_rule(examples: Sequence[Example]) -> Score:
    """ "Ends with a period => hallucinated" and its kin, the direction fitted on a half."""
    return _half_rule(examples, lambda ex: final_char_class(ex.text))


def casing_rule(examples: Sequence[Example]) -> Score:
    """ "All lower case => hallucinated" and its kin, the direction fitted on a half."""
    return _half_rule(examples, lambda ex: casing_of(ex.text))


# -- (c) character n-grams --------------------------------------------------------------------


def char_ngrams(examples: Sequence[Example]) -> Score:
    """Cross-validated logistic regression on case-sensitive character 1-4-grams."""
    tfidf, logreg, _ = sklearn_parts()
    vectors = tfidf(
        analyzer="char", ngram_range=(1, 4), lowercase=False, min_df=2, sublinear_tf=True
    ).fit_transform([ex.text for ex in examples])
    row = {id(ex): i for i, ex in enumerate(examples)}

    def fit_predict(train: list[Example], test: list[Example]) -> list[bool]:
        paired = sum(ex.label for ex in train) * 2 == len(train)
        model = logreg(solver="liblinear", class_weight=None if paired else "balanced")
        model.fit(vectors[[row[id(ex)] for ex in train]], [ex.label for ex in train])
        return [bool(p) for p in model.predict(vectors[[row[id(ex)] for ex in test]])]

    return cross_validate(examples, fit_predict)


# -- (d) an ensemble of weak learners over random splits (AFLite) -----------------------------


def _char_grams(text: str, n: int = 4) -> set[str]:
    squeezed = _squeezed(text)
    return {squeezed[i : i + n] for i in range(max(0, len(squeezed) - n + 1))}


def simple_features(ex: Example) -> list[float]:
    """A few cheap readings of one text: none is its length or its word overlap (what
    ``--balance`` uses), so balancing cannot have tuned them."""
    text = ex.text
    chars = max(1, len(text))
    letters = [c for c in text if c.isalpha()]
    words = text.split()
    grams = _char_grams(text)
    in_knowledge = _squeezed(text) in _squeezed(ex.knowledge) if text.strip() else False
    knowledge_grams = len(grams & _char_grams(ex.knowledge)) / len(grams) if grams else 0.0
    last = final_char_class(text)
    return [
        float(in_knowledge),
        float(bool(text.strip()) and _squeezed(text) in _squeezed(ex.question)),
        knowledge_grams,
        *(float(last == c) for c in (".", "?", "!", "space", "punct")),
        float(bool(letters) and letters[0].isupper()),
        float(bool(letters) and all(c.islower() for c in letters)),
        sum(c.isupper() for c in letters) / max(1, len(letters)),
        sum(c.isdigit() for c in text) / chars,
        sum(unicodedata.category(c).startswith("P") for c in text) / chars,
        sum(len(w) for w in words) / max(1, len(words)),
        sum(w[:1].isupper() for w in words) / max(1, len(words)),
        float("  " in text or text != text.strip()),
    ]


def predictability(
    examples: Sequence[Example], *, splits: int = SPLITS, seed: int = 0
) -> list[float | None]:
    """Per example: the share of the random half splits holding it out whose model
    classified it right (None when no split held it out)."""
    import numpy as np

    _, logreg, _ = sklearn_parts()
    x = np.array([simple_features(ex) for ex in examples], dtype=float)
    y = np.array([ex.label for ex in examples])
    groups = sorted({ex.group for ex in examples})
    index = {g: k for k, g in enumerate(groups)}
    group_of = np.array([index[ex.group] for ex in examples])
    right = np.zeros(len(examples))
    held = np.zeros(len(examples))
    rng = random.Random(seed)
    for _ in range(splits):
        train_groups = np.zeros(len(groups), dtype=bool)
        train_groups[rng.sample(range(len(groups)), len(groups) // 2)] = True
        train = train_groups[group_of]
        if len(set(y[train].tolist())) < 2 or train.all():
            continue
        mean, spread = x[train].mean(axis=0), x[train].std(axis=0) + 1e-9
        model = logreg(solver="liblinear").fit((x[train] - mean) / spread, y[train])
        test = ~train
        right[test] += model.predict((x[test] - mean) / spread) == y[test]
        held[test] += 1
    return [float(r / h) if h else None for r, h in zip(right, held, strict=True)]


def weak_ensemble(examples: Sequence[Example]) -> Score:
    """The accuracy of the weak learners' vote on each text, over random half splits."""
    if len({ex.group for ex in examples}) < 4 or len({ex.label for ex in examples}) < 2:
        return Score(None, None, None, len(examples), len({e.group for e in examples}), False)
    shares = predictability(examples)
    kept = [(ex, s) for ex, s in zip(examples, shares, strict=True) if s is not None]
    # the vote: "hallucinated" when most splits said so (a tie reads as right)
    return score([ex for ex, _ in kept], [(s if ex.label else 1 - s) > 0.5 for ex, s in kept])


def strong_share(examples: Sequence[Example]) -> float | None:
    """The share of texts the weak learners get right in at least ``STRONG`` of splits."""
    shares = [s for s in predictability(examples) if s is not None]
    return sum(s >= STRONG for s in shares) / len(shares) if shares else None


# probe -> (what it reads, the probe)
PROBES: dict[str, tuple[str, Callable[[Sequence[Example]], Score]]] = {
    "substring": ("rule: the text appears in the knowledge => right", substring_rule),
    "final_char": ("rule: the last character's class => label, fitted on a half", final_char_rule),
    "casing": ("rule: the text's casing => label, fitted on a half", casing_rule),
    "char_ngrams": ("cross-validated case-sensitive character 1-4-grams", char_ngrams),
    "weak_ensemble": (
        f"vote of linear models on simple features over {SPLITS} random half splits (AFLite)",
        weak_ensemble,
    ),
}
