"""Paired tests: exact McNemar against scipy's binomial test, Holm against values worked by
hand (and its definition), the paired cluster bootstrap fixed by its seed, exact intervals at
0% and 100%."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from halugen.evaluate.metrics import Judged, compute, exact_at_bound
from halugen.evaluate.paired import holm, mcnemar_exact, paired_difference
from halugen.intervals import wilson


@pytest.mark.parametrize(
    ("a_only", "b_only"), [(0, 0), (1, 0), (0, 7), (3, 9), (12, 12), (25, 10), (60, 41)]
)
def test_mcnemar_exact_is_the_two_sided_binomial_test_on_discordant_items(a_only, b_only):
    n = a_only + b_only
    expected = 1.0 if n == 0 else binomtest(a_only, n, 0.5).pvalue
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_by_hand() -> None:
    # 9 discordant, 1 against 8: 2 * (C(9,0) + C(9,1)) / 2^9 = 20 / 512
    assert mcnemar_exact(1, 8) == pytest.approx(20 / 512)
    assert mcnemar_exact(8, 1) == mcnemar_exact(1, 8)
    with pytest.raises(ValueError, match="negative"):
        mcnemar_exact(-1, 3)


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.02, 0.03, 0.04 x 4, 3, 2, 1 = 0.04, 0.06, 0.06, 0.04 -> running max
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    # capped at 1; one p-value is left as it is
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


def test_holm_is_the_step_down_definition() -> None:
    ps = [0.001, 0.2, 0.013, 0.04, 0.5, 0.0004]
    order = sorted(range(6), key=lambda i: ps[i])
    expected = [0.0] * 6
    for rank, i in enumerate(order):
        expected[i] = min(1.0, max((6 - r) * ps[order[r]] for r in range(rank + 1)))
    assert holm(ps) == pytest.approx(expected)


def test_paired_bootstrap_is_fixed_by_its_seed_and_resamples_clusters() -> None:
    # 40 clusters of 3 items; A right more often than B
    clusters = [(3 if i % 4 else 1, 2 if i % 3 else 0, 3) for i in range(40)]
    diff, ci = paired_difference(clusters, seed=7)
    assert diff == pytest.approx(
        (sum(a for a, _, _ in clusters) - sum(b for _, b, _ in clusters)) / 120
    )
    assert paired_difference(clusters, seed=7) == (diff, ci)
    assert paired_difference(clusters, seed=8)[1] != ci
    assert ci[0] < diff < ci[1]
    # the same items as singletons: a narrower interval than whole clusters give
    singles = []
    for a, b, m in clusters:
        singles += [(int(k < a), int(k < b), 1) for k in range(m)]
    _, ci_items = paired_difference(singles, seed=7)
    assert ci_items[1] - ci_items[0] < ci[1] - ci[0]
    # no paired item: nothing is known
    assert paired_difference([]) == (0.0, (-1.0, 1.0))


def test_exact_interval_at_zero_and_one_hundred_percent() -> None:
    low, high = exact_at_bound(0, 133)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 133))
    assert binomtest(0, 133).proportion_ci(method="exact").high == pytest.approx(high)
    low, high = exact_at_bound(133, 133)
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 133))
    assert exact_at_bound(5, 133) is None
    assert wilson(0, 133)[1] == pytest.approx(0.0281, abs=1e-4)  # the issue's [0, 2.8]


def test_zero_accuracy_over_dialogues_is_no_point_interval() -> None:
    # 133 judgements from 40 dialogues, all wrong: the cluster bootstrap could only say
    # [0, 0]; the exact interval over the 40 dialogues says how little 40 of them tell
    judged = [Judged(True, "no", 10, f"d{i % 40}") for i in range(133)]
    m = compute(judged)
    assert m.accuracy == 0.0
    assert m.interval == "exact" and m.clusters == 40
    assert m.accuracy_ci[0] == 0.0
    assert m.accuracy_ci[1] == pytest.approx(binomtest(0, 40).proportion_ci().high)
    perfect = compute([Judged(True, "yes", 10, f"d{i % 40}") for i in range(133)])
    assert perfect.accuracy == 1.0 and perfect.accuracy_ci[1] == 1.0
    assert perfect.accuracy_ci[0] == pytest.approx(binomtest(40, 40).proportion_ci().low)
