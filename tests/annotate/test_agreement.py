"""Agreement statistics against hand-computed values."""

from __future__ import annotations

import pytest

from halugen.annotate.agreement import (
    fleiss_kappa,
    krippendorff_alpha_nominal,
    majority,
    percent_agreement,
    span_agreement,
    span_union,
)

# Wikipedia's worked example for Fleiss' kappa: 10 items, 14 raters, 5 categories.
# P-bar = 0.378, P_e = 0.213, kappa = 0.210.
WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_wikipedia_example():
    assert fleiss_kappa(WIKIPEDIA) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_kappa_two_categories_by_hand():
    # 4 items x 3 raters, columns (yes, no)
    # P_i: [3,0] -> (9-3)/6 = 1; [2,1] -> (4+1-3)/6 = 1/3; [0,3] -> 1; [1,2] -> 1/3
    # P-bar = (1 + 1/3 + 1 + 1/3) / 4 = 2/3
    # p_yes = 6/12 = 1/2, p_no = 1/2, P_e = 1/4 + 1/4 = 1/2
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
    table = [[3, 0], [2, 1], [0, 3], [1, 2]]
    assert fleiss_kappa(table) == pytest.approx(1 / 3)


def test_fleiss_kappa_perfect_and_undefined():
    assert fleiss_kappa([[3, 0], [0, 3]]) == pytest.approx(1.0)
    # everyone always says yes: P_e = 1, kappa undefined
    assert fleiss_kappa([[3, 0], [3, 0]]) is None
    assert fleiss_kappa([]) is None


def test_fleiss_kappa_rejects_unequal_rows():
    with pytest.raises(ValueError, match="row 2"):
        fleiss_kappa([[2, 1], [1, 1]])
    with pytest.raises(ValueError, match="at least 2"):
        fleiss_kappa([[1, 0]])


def test_percent_agreement_mean_pairwise():
    # pairs agreeing: [y,y,y] 3/3; [y,y,n] 1/3; [n,n,n] 3/3; [y,n,n] 1/3 -> mean 2/3
    items = [["y", "y", "y"], ["y", "y", "n"], ["n", "n", "n"], ["y", "n", "n"]]
    assert percent_agreement(items) == pytest.approx(2 / 3)
    # single labels are left out; [a, b] has its one pair disagreeing
    assert percent_agreement([["a", "b"], ["a"], ["a", "a"]]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        percent_agreement([["a"]])


def test_krippendorff_alpha_by_hand():
    # units: u1 [a, a], u2 [a, b], u3 [b, b, b], u4 [c] (one label: no pairs, ignored)
    # coincidences (each ordered pair weighted 1/(m_u - 1)):
    #   u1: (a,a) x2 / 1 -> o_aa = 2
    #   u2: (a,b), (b,a) / 1 -> o_ab = 1, o_ba = 1
    #   u3: (b,b) x6 / 2 -> o_bb = 3
    # n_a = 2 + 1 = 3, n_b = 1 + 3 = 4, n = 7
    # alpha = 1 - (n - 1) * sum_{c!=k} o_ck / sum_{c!=k} n_c n_k = 1 - 6 * 2 / (2*3*4) = 0.5
    units = [["a", "a"], ["a", "b"], ["b", "b", "b"], ["c"]]
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.5)


def test_krippendorff_alpha_undefined_and_perfect():
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "a", "a"]]) is None
    assert krippendorff_alpha_nominal([["a"], ["b"]]) is None
    assert krippendorff_alpha_nominal([["a", "a"], ["b", "b"]]) == pytest.approx(1.0)


def test_krippendorff_matches_fleiss_shape_for_equal_raters():
    # with equal raters alpha differs from kappa only by a small-sample factor:
    # 4 items x 3 raters (above): disagreement sum = 2 + 2 = 4 (each [2,1] unit gives
    # 2*1/2 + 1*2/2), n_y = n_n = 6, alpha = 1 - 11 * 4 / (2*6*6) = 1 - 44/72 = 7/18
    items = [["y", "y", "y"], ["y", "y", "n"], ["n", "n", "n"], ["y", "n", "n"]]
    assert krippendorff_alpha_nominal(items) == pytest.approx(7 / 18)


def test_majority_with_ties():
    assert majority(["yes", "yes", "no"]) == ("yes", pytest.approx(2 / 3))
    assert majority(["no"]) == ("no", 1.0)
    assert majority(["yes", "no"]) == (None, 0.5)
    assert majority(["a", "a", "b", "b", "c"]) == (None, pytest.approx(0.4))
    assert majority([]) == (None, 0.0)


def test_span_union_merges_overlapping_and_touching():
    spans = [[(0, 5), (20, 25)], [(3, 8)], [(8, 10), (30, 30)], []]
    assert span_union(spans) == [(0, 10), (20, 25)]
    assert span_union([[(5, 9)], [(1, 2)]]) == [(1, 2), (5, 9)]
    assert span_union([]) == []


def test_span_agreement_mean_pairwise_f1():
    # A marks 0..10, B marks 5..15, C marks nothing
    # A-B: |A∩B| = 5, F1 = 2*5/(10+10) = 0.5; A-C: 0; B-C: 0 -> mean 1/6
    assert span_agreement([[(0, 10)], [(5, 15)], []], 20) == pytest.approx(1 / 6)
    # pairs where both marked nothing are left out
    assert span_agreement([[(0, 4)], [(0, 4)], []], 20) == pytest.approx((1 + 0 + 0) / 3)
    assert span_agreement([[], []], 20) is None
    assert span_agreement([[(0, 4)]], 20) is None
    # spans are clipped to the text
    assert span_agreement([[(0, 50)], [(0, 10)]], 10) == pytest.approx(1.0)
