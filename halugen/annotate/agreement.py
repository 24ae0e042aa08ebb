"""Agreement statistics for human labels: pure functions, no store, no I/O.

- ``fleiss_kappa``: chance-corrected agreement for a fixed number of raters per item (the
  statistic HaluEval reports for its general-query annotation).
- ``percent_agreement``: the share of agreeing rater pairs, averaged over items.
- ``krippendorff_alpha_nominal``: chance-corrected agreement that tolerates a varying number of
  labels per item (missing labels), for stores where not every item got the same raters.
- ``majority``: the majority label of one item, ``None`` on a tie.
- ``span_union`` / ``span_agreement``: character spans; the union of everyone's marks and the
  mean pairwise character-level F1 between annotators.

Spans are half-open character intervals ``(start, end)`` over the response text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

__all__ = [
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
    "majority",
    "percent_agreement",
    "span_agreement",
    "span_union",
]

Span = tuple[int, int]


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a count table: rows are items, columns categories, cells raters.

    Every row must sum to the same number of raters n ≥ 2 (``ValueError`` otherwise).
    Returns ``None`` when kappa is undefined: no rows, or every rating in one category
    (expected agreement P_e = 1, so 0/0).
    """
    if not table:
        return None
    n = sum(table[0])
    if n < 2:
        raise ValueError(f"Fleiss' kappa needs at least 2 raters per item, row 1 has {n}")
    width = len(table[0])
    for i, row in enumerate(table, 1):
        if len(row) != width:
            raise ValueError(f"row {i} has {len(row)} categories, expected {width}")
        if any(c < 0 for c in row):
            raise ValueError(f"row {i} has a negative count")
        if sum(row) != n:
            raise ValueError(f"row {i} has {sum(row)} ratings, expected {n} like row 1")
    items = len(table)
    # observed: per item, the share of agreeing ordered rater pairs
    p_bar = sum((sum(c * c for c in row) - n) / (n * (n - 1)) for row in table) / items
    # expected: from the pooled category shares
    totals = [sum(row[j] for row in table) for j in range(width)]
    p_e = sum((t / (items * n)) ** 2 for t in totals)
    if p_e >= 1.0 - 1e-12:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def percent_agreement(labels_per_item: Sequence[Sequence[str]]) -> float:
    """Mean over items of the share of rater pairs that gave the same label.

    Items with fewer than 2 labels are left out; ``ValueError`` when no item has 2.
    """
    shares = []
    for labels in labels_per_item:
        if len(labels) < 2:
            continue
        pairs = list(combinations(labels, 2))
        shares.append(sum(a == b for a, b in pairs) / len(pairs))
    if not shares:
        raise ValueError("percent agreement needs at least one item with 2 or more labels")
    return sum(shares) / len(shares)


def krippendorff_alpha_nominal(labels_per_item: Sequence[Sequence[str]]) -> float | None:
    """Krippendorff's alpha for nominal labels; items may have different numbers of labels.

    Built from the coincidence matrix: an item with m ≥ 2 labels adds 1/(m-1) for each
    ordered pair of labels from different raters. alpha = 1 - D_o / D_e with
    D_o = Σ_{c≠k} o_ck / n and D_e = Σ_{c≠k} n_c n_k / (n (n-1)).
    Items with fewer than 2 labels carry no pairs and are ignored. ``None`` when undefined:
    no pairable item, or a single label value overall (D_e = 0).
    """
    disagree = 0.0  # Σ_{c≠k} o_ck
    n_c: Counter[str] = Counter()
    for labels in labels_per_item:
        m = len(labels)
        if m < 2:
            continue
        counts = Counter(labels)
        # ordered pairs from different raters: count_c * (count_k or count_c - 1)
        for c, a in counts.items():
            n_c[c] += a  # Σ_k o_ck for this item is a * (m - 1) / (m - 1) = a
            disagree += a * (m - a) / (m - 1)
    n = sum(n_c.values())
    if n < 2:
        return None
    expected = n * n - sum(v * v for v in n_c.values())  # Σ_{c≠k} n_c n_k
    if expected == 0:
        return None
    return 1.0 - (n - 1) * disagree / expected


def majority(labels: Sequence[str]) -> tuple[str | None, float]:
    """The most frequent label and its share; ``(None, share)`` when two labels tie for most.

    An empty sequence gives ``(None, 0.0)``.
    """
    if not labels:
        return None, 0.0
    ranked = Counter(labels).most_common()
    top, count = ranked[0]
    share = count / len(labels)
    if len(ranked) > 1 and ranked[1][1] == count:
        return None, share
    return top, share


def span_union(spans: Sequence[Sequence[Span]]) -> list[Span]:
    """The union of everyone's spans as sorted, disjoint, maximal intervals.

    Overlapping and touching intervals merge ([0, 5) and [5, 9) give [0, 9)); empty or
    reversed intervals are dropped.
    """
    flat = sorted((s, e) for group in spans for s, e in group if e > s)
    merged: list[Span] = []
    for s, e in flat:
        if merged and s <= merged[-1][1]:
            if e > merged[-1][1]:
                merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    return merged


def _marked(spans: Sequence[Span], length: int) -> set[int]:
    chars: set[int] = set()
    for s, e in spans:
        chars.update(range(max(0, s), min(length, e)))
    return chars


def span_agreement(spans_per_annotator: Sequence[Sequence[Span]], length: int) -> float | None:
    """Mean pairwise character-level F1 between annotators' spans over a text of ``length``.

    For each pair of annotators, F1 = 2|A∩B| / (|A|+|B|) over the characters each marked
    (spans clipped to [0, length)). Pairs where neither marked anything say nothing about
    span agreement and are left out; a pair where only one marked something scores 0.
    ``None`` when fewer than 2 annotators or no pair is left.
    """
    sets = [_marked(spans, length) for spans in spans_per_annotator]
    scores = []
    for a, b in combinations(sets, 2):
        if not a and not b:
            continue
        scores.append(2 * len(a & b) / (len(a) + len(b)))
    if not scores:
        return None
    return sum(scores) / len(scores)
