"""The word diff: changed words marked on each side, each side's text given back whole."""

from __future__ import annotations

import itertools

import pytest

from halugen.view.worddiff import word_diff


def marked(pieces: list[tuple[str, bool]]) -> list[str]:
    return [t for t, changed in pieces if changed]


def test_only_the_changed_words_are_marked() -> None:
    left, right = word_diff(
        "The tower was finished in 1889 by Gustave Eiffel.",
        "The tower was finished in 1999 by Gustave Eiffel.",
    )
    assert marked(left) == ["1889"] and marked(right) == ["1999"]
    assert left[0] == ("The tower was finished in ", False)


def test_a_run_of_changed_words_is_one_mark_and_spacing_does_not_count() -> None:
    left, right = word_diff("born in Paris, France", "born  in the city of Lyon, France")
    assert marked(left) == ["Paris"]
    assert marked(right) == ["the city of Lyon"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("", "something"),
        ("Danube", "near Europe"),
        ("caf\u00e9 \U0001f5fc <b>x</b> & y", "caf\u00e9 \U0001f5fc <i>x</i> & z"),
        ("line one\nline two", "line one\n\nline 2"),
        ("don't stop", "do not stop"),
    ],
)
def test_each_side_joins_back_to_its_text(a: str, b: str) -> None:
    left, right = word_diff(a, b)
    assert "".join(t for t, _ in left) == a
    assert "".join(t for t, _ in right) == b
    # neighbours alike are joined: marks alternate
    for side in (left, right):
        assert all(x[1] != y[1] for x, y in itertools.pairwise(side))


def test_case_counts() -> None:
    left, right = word_diff("in Paris", "in paris")
    assert marked(left) == ["Paris"] and marked(right) == ["paris"]
