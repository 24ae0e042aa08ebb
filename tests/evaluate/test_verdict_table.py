"""The verdict reader against the adversarial tables: at most 1% read wrongly, at most 5%
of the replies that have a verdict left invalid. Failures are listed, not just counted.

``verdict_table`` is the project's first table; ``reply_styles_table`` holds replies in the
styles of current models, written before the rules that read them (its last third a
hold-out)."""

from __future__ import annotations

import pytest

from halugen.evaluate.verdicts import parse_contrast, parse_verdict

from .reply_styles_table import DEVELOPMENT, HOLDOUT, HOLDOUT_FIRST_MEASURE, REPLY_STYLES
from .verdict_table import CONTRAST_TABLE, VERDICT_TABLE


def _rates(table, read):  # type: ignore[no-untyped-def]
    wrong, left_invalid = [], []
    for reply, careful in table:
        got = read(reply)
        if got == careful:
            continue
        if got in ("invalid", None):
            left_invalid.append((reply, careful, got))
        else:
            wrong.append((reply, careful, got))
    decided = sum(1 for _, careful in table if careful not in ("invalid", None))
    return wrong, left_invalid, len(wrong) / len(table), len(left_invalid) / decided


def _listing(rows) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(f"  {r!r}: careful reading {c!r}, read {g!r}" for r, c, g in rows)


def test_the_table_is_big_and_covers_every_reading() -> None:
    assert len(VERDICT_TABLE) >= 100
    readings = [c for _, c in VERDICT_TABLE]
    assert min(readings.count(x) for x in ("yes", "no", "invalid")) >= 25
    assert len({r for r, _ in VERDICT_TABLE}) == len(VERDICT_TABLE)  # no duplicates


def test_verdict_table() -> None:
    wrong, left_invalid, wrong_rate, invalid_rate = _rates(VERDICT_TABLE, parse_verdict)
    assert wrong_rate <= 0.01, f"{wrong_rate:.1%} read wrongly:\n{_listing(wrong)}"
    assert invalid_rate <= 0.05, f"{invalid_rate:.1%} left invalid:\n{_listing(left_invalid)}"


def test_contrast_table() -> None:
    wrong, left_invalid, wrong_rate, invalid_rate = _rates(CONTRAST_TABLE, parse_contrast)
    assert wrong_rate <= 0.01, f"{wrong_rate:.1%} read wrongly:\n{_listing(wrong)}"
    assert invalid_rate <= 0.05, f"{invalid_rate:.1%} left invalid:\n{_listing(left_invalid)}"


def test_the_reply_styles_table_is_big_and_its_holdout_is_the_last_third() -> None:
    assert len(REPLY_STYLES) >= 150
    assert len({r for r, _ in REPLY_STYLES}) == len(REPLY_STYLES)  # no duplicates
    assert REPLY_STYLES[: 2 * len(REPLY_STYLES) // 3] == DEVELOPMENT
    assert REPLY_STYLES[2 * len(REPLY_STYLES) // 3 :] == HOLDOUT
    for part in (DEVELOPMENT, HOLDOUT):
        readings = [c for _, c in part]
        assert min(readings.count(x) for x in ("yes", "no", "invalid")) >= 10
    # the hold-out's first measure met the goal before anything was tuned on it
    assert HOLDOUT_FIRST_MEASURE["wrong"] <= 0.01
    assert HOLDOUT_FIRST_MEASURE["invalid"] <= 0.05


@pytest.mark.parametrize("part", ["all", "development", "holdout"])
def test_reply_styles_table(part: str) -> None:
    table = {"all": REPLY_STYLES, "development": DEVELOPMENT, "holdout": HOLDOUT}[part]
    wrong, left_invalid, wrong_rate, invalid_rate = _rates(table, parse_verdict)
    assert wrong_rate <= 0.01, f"{wrong_rate:.1%} read wrongly:\n{_listing(wrong)}"
    assert invalid_rate <= 0.05, f"{invalid_rate:.1%} left invalid:\n{_listing(left_invalid)}"


def test_the_rates_catch_a_careless_reader() -> None:
    # HaluEval's reading: the substring "Yes" anywhere, else "No" anywhere
    def substring(text: str) -> str:
        return "yes" if "Yes" in text else ("no" if "No" in text else "invalid")

    for table in (VERDICT_TABLE, REPLY_STYLES):
        _, _, wrong_rate, invalid_rate = _rates(table, substring)
        assert wrong_rate > 0.01 and invalid_rate > 0.05
