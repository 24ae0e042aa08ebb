"""Metrics against hand-computed values; Wilson intervals; baselines."""

from __future__ import annotations

import pytest

from halugen.evaluate.metrics import Judged, baselines, compute
from halugen.intervals import wilson


def _many(truth: bool, verdict: str, k: int, length: int | None = None) -> list[Judged]:
    return [Judged(truth, verdict, length) for _ in range(k)]


def test_metrics_of_a_small_confusion_matrix_worked_by_hand() -> None:
    # hallucinated shown (5): 3 yes, 1 no, 1 invalid; right shown (4): 2 no, 1 yes, 1 invalid
    judged = (
        _many(True, "yes", 3)
        + _many(True, "no", 1)
        + _many(True, "invalid", 1)
        + _many(False, "no", 2)
        + _many(False, "yes", 1)
        + _many(False, "invalid", 1)
    )
    m = compute(judged)
    assert (m.n, m.tp, m.fn, m.tn, m.fp, m.invalid, m.positives) == (9, 3, 1, 2, 1, 2, 5)
    assert m.accuracy == pytest.approx(5 / 9)  # invalid counted wrong
    assert m.accuracy_valid == pytest.approx(5 / 7)
    assert m.invalid_rate == pytest.approx(2 / 9)
    assert m.precision == pytest.approx(3 / 4)
    assert m.recall == pytest.approx(3 / 5)  # the invalid reply on a hallucinated item: missed
    assert m.f1 == pytest.approx(2 / 3)  # 2 * 0.75 * 0.6 / 1.35
    assert m.yes_rate == pytest.approx(4 / 7)
    assert m.balanced_accuracy == pytest.approx((3 / 5 + 2 / 4) / 2)  # 0.55
    lo, hi = m.accuracy_ci
    assert (round(lo, 3), round(hi, 3)) == (0.267, 0.811)


def test_undefined_ratios_are_none() -> None:
    empty = compute([])
    assert empty.n == 0 and empty.accuracy is None and empty.accuracy_ci is None
    assert empty.precision is None and empty.f1 is None and empty.balanced_accuracy is None
    # nothing said "yes": precision undefined, so is F1; only one class: no balanced accuracy
    m = compute(_many(True, "no", 3))
    assert m.accuracy == 0.0 and m.precision is None and m.f1 is None
    assert m.recall == 0.0 and m.balanced_accuracy is None and m.yes_rate == 0.0
    # all invalid: no valid output to take a rate over
    bad = compute(_many(False, "invalid", 4))
    assert bad.accuracy == 0.0 and bad.accuracy_valid is None and bad.yes_rate is None
    assert bad.invalid_rate == 1.0
    # precision and recall both zero: F1 is zero, not undefined
    zero = compute(_many(True, "no", 1) + _many(False, "yes", 1))
    assert zero.precision == 0.0 and zero.recall == 0.0 and zero.f1 == 0.0


def test_contrast_is_scored_as_right_picks_out_of_n() -> None:
    judged = _many(True, "yes", 6) + _many(True, "no", 3) + _many(True, "invalid", 1)
    m = compute(judged)
    assert m.accuracy == pytest.approx(0.6)
    assert m.accuracy_valid == pytest.approx(6 / 9)
    assert m.invalid_rate == pytest.approx(0.1)


def test_unknown_verdict_is_an_error() -> None:
    with pytest.raises(ValueError, match="verdict"):
        compute([Judged(True, "Yes")])


def test_wilson_known_values() -> None:
    lo, hi = wilson(50, 100)
    assert (round(lo, 3), round(hi, 3)) == (0.404, 0.596)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(0.7225, abs=1e-4) and hi == 1.0
    assert wilson(0, 0) == (0.0, 1.0)
    # wider z, wider interval
    assert wilson(50, 100, z=2.576)[0] < 0.404
    with pytest.raises(ValueError):
        wilson(11, 10)


def test_constant_baselines_are_the_class_shares() -> None:
    judged = _many(True, "yes", 3, 10) + _many(False, "no", 7, 10)
    b = baselines(judged)
    assert b["always_yes"] == pytest.approx(0.3)
    assert b["always_no"] == pytest.approx(0.7)
    assert baselines([]) == {"always_no": None, "always_yes": None, "length_only": None}


def test_length_only_finds_a_length_biased_set() -> None:
    # HaluEval QA's leak: right answers are short spans, hallucinated ones long sentences
    judged = []
    for i in range(40):
        judged.append(Judged(False, "no", 5 + i % 15))
        judged.append(Judged(True, "no", 50 + (i * 7) % 30))
    assert baselines(judged)["length_only"] == 1.0
    # the other way round (hallucinated shorter) is found too
    flipped = [Judged(not j.truth, j.verdict, j.shown_length) for j in judged]
    assert baselines(flipped)["length_only"] == 1.0
    # sorted input (all right first) still gives each fold both classes
    ordered = sorted(judged, key=lambda j: j.truth)
    assert baselines(ordered)["length_only"] == 1.0


def test_length_only_is_scored_out_of_sample() -> None:
    # in sample, the best single threshold ("hallucinated iff shorter than 15") gets 3 of 4.
    # Stratified folds: {10 T, 20 F} and {30 T, 40 F}; each fold's rule ("shorter than 15",
    # "shorter than 35") scores 1 of 2 on the other fold: 2 of 4
    judged = [
        Judged(True, "no", 10),
        Judged(False, "no", 20),
        Judged(True, "no", 30),
        Judged(False, "no", 40),
    ]
    assert baselines(judged)["length_only"] == 0.5


def test_length_only_without_signal_or_lengths() -> None:
    same = _many(True, "no", 10, 30) + _many(False, "no", 10, 30)
    # equal lengths carry nothing: each fold (5 + 5) predicts one class, half right
    assert baselines(same)["length_only"] == pytest.approx(0.5)
    interleaved = [j for pair in zip(same[:10], same[10:], strict=True) for j in pair]
    assert baselines(interleaved)["length_only"] == pytest.approx(0.5)
    missing = [Judged(True, "yes", 10), Judged(False, "no", None)]
    assert baselines(missing)["length_only"] is None
    assert baselines([Judged(True, "yes", 10)])["length_only"] is None


def test_judgements_sharing_dialogues_get_a_cluster_bootstrap_interval() -> None:
    from halugen.evaluate.metrics import cluster_bootstrap

    # 10 dialogues of 10 replies each, a dialogue judged all right or all wrong
    clustered = [
        Judged(True, "yes" if d < 6 else "no", cluster=f"d{d}")
        for d in range(10)
        for _ in range(10)
    ]
    alone = [Judged(True, "yes" if i < 60 else "no") for i in range(100)]
    m_clustered, m_alone = compute(clustered), compute(alone)
    assert m_clustered.accuracy == m_alone.accuracy == 0.6
    assert (m_alone.interval, m_alone.clusters) == ("wilson", 0)
    assert (m_clustered.interval, m_clustered.clusters) == ("cluster bootstrap", 10)
    width = lambda m: m.accuracy_ci[1] - m.accuracy_ci[0]  # noqa: E731
    assert width(m_clustered) > 2 * width(m_alone)
    # seeded: the same report every time
    assert cluster_bootstrap([(1, 2), (2, 2), (0, 3)]) == cluster_bootstrap(
        [(1, 2), (2, 2), (0, 3)]
    )
    assert cluster_bootstrap([]) == (0.0, 1.0)
