"""Recognition metrics: accuracy as the paper counts it, the detail it hides, and baselines.

A judgement is (truth, verdict): truth is True when the shown text is hallucinated, verdict is
the parsed reply, "yes" meaning "contains hallucination". Invalid replies stay in the counts:
the paper's accuracy counts them wrong, ``accuracy_valid`` leaves them out, and
``invalid_rate`` says how far apart the two may be.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ..intervals import wilson

__all__ = [
    "Judged",
    "Metrics",
    "baselines",
    "cluster_bootstrap",
    "compute",
    "exact_at_bound",
]

VERDICTS = ("yes", "no", "invalid")


@dataclass(frozen=True)
class Judged:
    """One judgement: the truth, the parsed verdict and the shown text's length (characters)."""

    truth: bool
    verdict: str  # "yes" | "no" | "invalid"
    shown_length: int | None = None
    # judgements of one cluster (the replies of one OpenDialKG dialogue) are not independent;
    # "" when the item stands alone
    cluster: str = ""

    @property
    def right(self) -> bool:
        """The verdict matches the truth (an invalid reply is never right)."""
        return self.verdict != "invalid" and (self.verdict == "yes") == self.truth


@dataclass(frozen=True)
class Metrics:
    """Metrics of one (task, model, strategy) group; a ratio is None when undefined (0/0)."""

    n: int
    accuracy: float | None  # (tp + tn) / n: invalid counted wrong, the paper's convention
    accuracy_ci: tuple[float, float] | None  # Wilson 95% interval of ``accuracy``
    accuracy_valid: float | None  # (tp + tn) / valid outputs
    invalid_rate: float | None  # invalid / n
    precision: float | None  # of "hallucinated": tp / (tp + fp)
    recall: float | None  # tp / hallucinated items (an invalid reply is a miss)
    f1: float | None
    yes_rate: float | None  # share of "yes" among valid outputs (the judge's lean)
    balanced_accuracy: float | None  # mean of recall and tn / right items
    tp: int
    fp: int
    tn: int
    fn: int
    invalid: int
    positives: int  # items whose truth is True (hallucinated shown)
    # how ``accuracy_ci`` was found: "wilson", or "cluster bootstrap" when judgements share
    # clusters (then ``clusters`` says how many), or "exact" (Clopper-Pearson over the
    # clusters) when they share clusters and the accuracy is 0% or 100%
    interval: str = "wilson"
    clusters: int = 0


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def exact_at_bound(successes: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """The exact (Clopper-Pearson) interval of a proportion at 0 or n successes, where it
    has a closed form; None anywhere in between.

    At 0/n every resample of a bootstrap is 0/n too, so its interval shrinks to a point
    ([0.0, 0.0]) that claims a certainty no finite sample gives: this one does not.
    """
    if n <= 0:
        return 0.0, 1.0
    edge = ((1.0 - level) / 2) ** (1.0 / n)
    if successes == 0:
        return 0.0, 1.0 - edge
    if successes == n:
        return edge, 1.0
    return None


BOOTSTRAP_ROUNDS = 2000


def cluster_bootstrap(
    clusters: Sequence[tuple[int, int]], *, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of sum(successes) / sum(trials), resampling whole clusters.

    ``clusters`` holds (successes, trials) per cluster; a "success" may be any count, a
    negative one too (a paired difference: A's right answers minus B's in the cluster).
    Items of one dialogue rise and fall together; resampling them one by one would make the
    interval too narrow. Seeded, so a report is the same every time it is printed.
    """
    k = len(clusters)
    if k == 0:
        return 0.0, 1.0
    rng = random.Random(seed)
    ys = [c[0] for c in clusters]
    ms = [c[1] for c in clusters]
    stats = []
    for _ in range(rounds):
        picks = rng.choices(range(k), k=k)
        trials = sum(ms[i] for i in picks)
        stats.append(sum(ys[i] for i in picks) / trials if trials else 0.0)
    stats.sort()
    return stats[int(0.025 * (rounds - 1))], stats[math.ceil(0.975 * (rounds - 1))]


def compute(judged: Sequence[Judged]) -> Metrics:
    """All metrics of a group of judgements.

    Yes/No strategies: ``truth`` is whether the shown text is hallucinated, ``verdict`` the
    parsed reply. Contrast: the judge picks which of two texts is hallucinated, so call it
    with ``truth=True`` for every item and ``verdict="yes"`` when the pick was right, "no"
    when wrong, "invalid" when unreadable; ``accuracy`` is then right picks / n (invalid
    counted wrong), ``accuracy_valid`` and ``invalid_rate`` keep their meaning, and the
    hallucination-class metrics (precision, recall, F1, yes-rate, balanced accuracy) do not
    apply: read them as undefined.
    """
    tp = fp = tn = fn = invalid = positives = 0
    for j in judged:
        if j.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {j.verdict!r}")
        positives += j.truth
        if j.verdict == "invalid":
            invalid += 1
        elif j.verdict == "yes":
            if j.truth:
                tp += 1
            else:
                fp += 1
        elif j.truth:
            fn += 1
        else:
            tn += 1
    n = len(judged)
    negatives = n - positives
    valid = n - invalid
    correct = tp + tn
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, positives)
    f1: float | None = None
    if precision is not None and recall is not None:
        both = precision + recall
        f1 = 2 * precision * recall / both if both else 0.0
    specificity = _ratio(tn, negatives)
    balanced = None
    if recall is not None and specificity is not None:
        balanced = (recall + specificity) / 2
    interval, ci, n_clusters = "wilson", wilson(correct, n) if n else None, 0
    by_cluster: dict[str, list[int]] = {}
    for i, j in enumerate(judged):
        counts = by_cluster.setdefault(j.cluster or f"\0{i}", [0, 0])  # "": a cluster alone
        counts[0] += j.right
        counts[1] += 1
    if n and len(by_cluster) < n:  # some judgements share a cluster
        interval, n_clusters = "cluster bootstrap", len(by_cluster)
        # at 0% or 100% the resamples cannot vary: the exact interval over the clusters
        # (the independent units; fewer than the judgements, so the wider of the two)
        if correct in (0, n):
            interval = "exact"
            ci = exact_at_bound(0 if correct == 0 else n_clusters, n_clusters)
        else:
            ci = cluster_bootstrap([(y, m) for y, m in by_cluster.values()])
    return Metrics(
        n=n,
        accuracy=_ratio(correct, n),
        accuracy_ci=ci,
        accuracy_valid=_ratio(correct, valid),
        invalid_rate=_ratio(invalid, n),
        precision=precision,
        recall=recall,
        f1=f1,
        yes_rate=_ratio(tp + fp, valid),
        balanced_accuracy=balanced,
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        invalid=invalid,
        positives=positives,
        interval=interval,
        clusters=n_clusters,
    )


# -- baselines ---------------------------------------------------------------------------


def _fit_threshold(train: Sequence[tuple[int, bool]]) -> tuple[float, bool]:
    """(t, longer): the rule "hallucinated iff length > t" (or "< t" when not ``longer``)
    with the best accuracy on ``train``; thresholds sit halfway between adjacent lengths.
    Ties go to the first found, scanning from the shortest threshold up, "longer" first.
    """
    items = sorted(train)
    n = len(items)
    positives = sum(t for _, t in items)
    # rule "longer" at a threshold below every length: everything is "hallucinated"
    best_correct, best = positives, (-math.inf, True)
    if n - positives > best_correct:
        best_correct, best = n - positives, (-math.inf, False)
    below_pos = below_neg = 0  # items at or under the threshold, by truth
    i = 0
    while i < n:
        length = items[i][0]
        while i < n and items[i][0] == length:
            below_pos += items[i][1]
            below_neg += not items[i][1]
            i += 1
        above_pos = positives - below_pos
        above_neg = (n - positives) - below_neg
        t = (length + items[i][0]) / 2 if i < n else math.inf
        longer = below_neg + above_pos  # short ones right, long ones hallucinated
        shorter = below_pos + above_neg
        if longer > best_correct:
            best_correct, best = longer, (t, True)
        if shorter > best_correct:
            best_correct, best = shorter, (t, False)
    return best


def _length_only(judged: Sequence[Judged]) -> float | None:
    """Two-fold accuracy of a length threshold fitted on one half, scored on the other.

    The folds are stratified: hallucinated items go to the two folds in turn, and so do
    right ones, so each fold has half of each class whatever the input order. The rule may
    point either way (longer or shorter = hallucinated); only the training half decides
    which, so this is no peek at the scored half.
    """
    shown = [(j.shown_length, j.truth) for j in judged if j.shown_length is not None]
    if len(judged) < 2 or len(shown) < len(judged):
        return None
    folds: tuple[list[tuple[int, bool]], list[tuple[int, bool]]] = ([], [])
    seen = {True: 0, False: 0}
    for length, truth in shown:
        folds[seen[truth] % 2].append((int(length), truth))
        seen[truth] += 1
    correct = 0
    for train, test in ((folds[0], folds[1]), (folds[1], folds[0])):
        t, longer = _fit_threshold(train)
        for length, truth in test:
            predicted = (length > t) if longer else (length < t)
            correct += predicted == truth
    return correct / len(judged)


def baselines(judged: Sequence[Judged]) -> dict[str, float | None]:
    """Accuracies of judges that never read the text.

    ``always_no`` and ``always_yes`` answer the same for everything (their accuracy is the
    share of right / hallucinated items shown); ``length_only`` looks at the shown text's
    length alone (see ``_length_only``) and is None when lengths are missing. A model near
    ``length_only`` may be reading the form rather than the content (HaluEval's QA right
    answers are short spans, its hallucinated ones sentences).
    """
    n = len(judged)
    positives = sum(j.truth for j in judged)
    return {
        "always_no": _ratio(n - positives, n),
        "always_yes": _ratio(positives, n),
        "length_only": _length_only(judged),
    }
