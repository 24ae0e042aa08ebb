"""The strict reader on judge replies it was not developed on.

``held_out_replies.jsonl`` was written after the strict reader and its integration were done
(and is kept out of every other table): replies in styles no other test holds -- reasoning
before the verdict line, the line followed by more text, lines that contradict, JSON variants,
other languages, markdown tables, hedges, negated prose, values that name a meaning ("Verdict:
Faithful") -- each with what a careful human reads: Yes / No (or 1 / 2 for the contrast
choice) or "unclear". A silent inversion is a committed reading that is not the careful one:
the opposite value, or any value where the careful reading is unclear. Unsure costs a
re-ask, not a wrong number, and is allowed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from halugen.evaluate.verdicts import parse_contrast, parse_verdict
from halugen.reply_contract import VERDICT, choice_contract

HELD_OUT = Path(__file__).with_name("held_out_replies.jsonl")
CONTRAST = choice_contract(2)


def _replies() -> list[dict[str, Any]]:
    lines = HELD_OUT.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _strict(entry: dict[str, Any]) -> str | None:
    contract = VERDICT if entry["contract"] == "verdict" else CONTRAST
    return contract.read(entry["reply"])


def _lenient(entry: dict[str, Any]) -> str | None:
    if entry["contract"] == "verdict":
        said = parse_verdict(entry["reply"])
        return None if said == "invalid" else said.capitalize()
    pick = parse_contrast(entry["reply"])
    return None if pick is None else str(pick)


def figures(read: Any) -> dict[str, Any]:
    """n, silent inversions (with the replies), unsure count."""
    entries = _replies()
    inversions, unsure = [], 0
    for entry in entries:
        got = read(entry)
        if got is None:
            unsure += 1
        elif got != entry["careful"]:  # the opposite value, or a value where it is unclear
            inversions.append((entry["style"], entry["reply"], got))
    return {"n": len(entries), "inversions": inversions, "unsure": unsure}


def test_the_held_out_set_is_large_and_labelled() -> None:
    entries = _replies()
    assert len(entries) >= 60
    for entry in entries:
        allowed = {"Yes", "No"} if entry["contract"] == "verdict" else {"1", "2"}
        assert entry["careful"] in allowed | {"unclear"}, entry
    assert len({e["reply"] for e in entries}) == len(entries)


def test_the_strict_reader_inverts_at_most_one_in_sixty() -> None:
    strict = figures(_strict)
    assert len(strict["inversions"]) * 60 <= strict["n"], strict["inversions"]


def test_the_strict_reader_inverts_no_more_than_the_lenient_one() -> None:
    assert len(figures(_strict)["inversions"]) <= len(figures(_lenient)["inversions"])


if (
    __name__ == "__main__"
):  # the figures for a report: python -m tests.evaluate.test_held_out_replies
    for name, read in (("strict", _strict), ("lenient", _lenient)):
        f = figures(read)
        print(
            f"{name}: n={f['n']} inversions={len(f['inversions'])} "
            f"unsure={f['unsure']} ({f['unsure'] / f['n']:.1%})"
        )
        for style, reply, got in f["inversions"]:
            print(f"   {style}: {reply!r} -> {got}")
