"""The judge's separation: whether a verify judge told the right text from the hallucinated
one, so that its flagged share can be read as the labels' noise."""

from __future__ import annotations

from halugen.label_noise import judge_answers, judge_separates


def test_a_judge_that_says_no_to_everything_does_not_separate():
    # 3 of 60 right texts and none of the hallucinated ones called supported: the share
    # of flagged items would be 95%, all of it the judge's
    assert not judge_separates(3, 0, 60)
    assert judge_answers(3, 0, 60) == "5.0% / 0.0% (does not separate)"


def test_a_judge_that_says_yes_to_everything_does_not_separate():
    assert not judge_separates(60, 58, 60)


def test_a_judge_that_tells_them_apart_separates():
    assert judge_separates(54, 6, 60)
    assert judge_answers(54, 6, 60) == "90.0% / 10.0%"


def test_a_small_sample_needs_a_clear_gap():
    # the intervals of 3 of 4 and 1 of 4 overlap: four items cannot show the judge separates
    assert not judge_separates(3, 1, 4)
    assert judge_separates(8, 0, 8)


def test_nothing_checked_is_not_separation():
    assert not judge_separates(0, 0, 0)
    assert judge_answers(0, 0, 0) == "—"
