"""The certifying probes: each finds a shortcut planted in a small fixture and stays near
chance on a clean one; "within 5 points of chance" only when the whole interval says so;
the size a hard split needs, and what a smaller one can show."""

from __future__ import annotations

import pytest

from halugen.audit import examples_of, items_from_file
from halugen.audit.certify import certify_lines
from halugen.audit.classifiers import Score
from halugen.audit.probes import (
    casing_rule,
    char_ngrams,
    final_char_rule,
    predictability,
    substring_rule,
    weak_ensemble,
    within_chance,
)
from halugen.audit.report import audit_items
from halugen.cli import main
from halugen.intervals import SIZE_FLOOR, size_line

from . import fixtures

pytest.importorskip("sklearn", reason="two probes need the topics extra")

N = 160


def _examples(tmp_path, records):  # type: ignore[no-untyped-def]
    path = fixtures.write(tmp_path / "qa.json", records)
    return examples_of(list(items_from_file(str(path))))


def _planted(edit):  # type: ignore[no-untyped-def]
    """Clean pairs whose hallucinated texts are edited by ``edit``."""
    out = []
    for rec in fixtures.clean_pairs(N):
        out.append({**rec, "hallucinated_answer": edit(rec["hallucinated_answer"])})
    return out


def _near_chance(s: Score) -> bool:
    return s.value is not None and abs(s.value - 0.5) <= 0.08


def test_the_substring_rule_finds_answers_taken_from_the_knowledge(tmp_path) -> None:
    # HaluEval's shortcut: the right answer is in the knowledge, the hallucination is not
    planted = substring_rule(_examples(tmp_path, fixtures.long_hallucinations(N)))
    assert planted.value is not None and planted.value >= 0.9 and not within_chance(planted)
    clean = substring_rule(_examples(tmp_path, fixtures.shared_knowledge(N)))
    assert _near_chance(clean), clean


def test_the_final_character_rule_finds_a_full_stop_only_hallucinations_have(tmp_path) -> None:
    planted = final_char_rule(_examples(tmp_path, _planted(lambda t: t + ".")))
    assert planted.value == 1.0 and not within_chance(planted)
    clean = final_char_rule(_examples(tmp_path, fixtures.clean_pairs(N)))
    assert _near_chance(clean), clean


def test_the_casing_rule_finds_capitals_only_hallucinations_have(tmp_path) -> None:
    planted = casing_rule(_examples(tmp_path, _planted(str.capitalize)))
    assert planted.value == 1.0 and not within_chance(planted)
    assert _near_chance(casing_rule(_examples(tmp_path, fixtures.clean_pairs(N))))


def test_character_ngrams_find_what_word_ngrams_cannot_see(tmp_path) -> None:
    # a typographic apostrophe in every hallucination: the same words, other characters
    planted = char_ngrams(_examples(tmp_path, _planted(lambda t: t.replace(" ", "\u2019 ", 1))))
    assert planted.value is not None and planted.value >= 0.9
    assert _near_chance(char_ngrams(_examples(tmp_path, fixtures.clean_pairs(N))))


def test_the_weak_ensemble_finds_a_shortcut_and_scores_each_text(tmp_path) -> None:
    examples = _examples(tmp_path, fixtures.long_hallucinations(N))
    planted = weak_ensemble(examples)
    assert planted.value is not None and planted.value >= 0.9
    shares = predictability(examples, splits=16)
    assert len(shares) == len(examples) and all(s is None or 0 <= s <= 1 for s in shares)
    assert sum(s is not None and s >= 0.75 for s in shares) > 0.8 * len(shares)
    # clean_pairs name the right answer in the knowledge: the ensemble sees that; here not
    clean = weak_ensemble(_examples(tmp_path, fixtures.shared_knowledge(N)))
    assert _near_chance(clean), clean


def test_within_chance_needs_the_whole_interval_inside_45_to_55() -> None:
    assert within_chance(Score(0.5, 0.46, 0.54, 800, 400, False))
    assert not within_chance(Score(0.5, 0.44, 0.56, 200, 100, False))  # cannot tell
    assert not within_chance(Score(0.53, 0.50, 0.56, 800, 400, False))
    assert not within_chance(Score(None, None, None, 0, 0, False))


def test_probe_rows_and_the_certification_line(tmp_path) -> None:
    path = fixtures.write(tmp_path / "qa.json", fixtures.long_hallucinations(60))
    items = list(items_from_file(str(path)))
    rows = audit_items(items, source="f", measures=("length_only",), probes=("substring",))
    probe = next(r for r in rows if r.measure == "substring")
    assert "certifying probe" in probe.note and "NOT within" in probe.note
    (line,) = certify_lines(rows)
    assert "NOT certified" in line and "substring" in line


def test_the_size_a_hard_split_needs_and_what_a_smaller_one_can_show() -> None:
    assert SIZE_FLOOR == 385
    assert size_line(120) == (
        "n=120: a 95% interval of ±8.9 points; cannot tell 55% from chance (only 59% or "
        "more), nor certify any figure within 5 points of it"
    )
    assert "can tell 55% from chance" in size_line(400)


def test_balance_refuses_a_small_set_unless_min_items_is_given(tmp_path, capsys) -> None:
    path = fixtures.write(tmp_path / "qa_data.json", fixtures.balanceable(120))
    assert main(["audit", "--data", str(path), "--balance", "--probes", "none"]) == 2
    err = capsys.readouterr().err
    assert "n=120: a 95% interval of ±8.9 points; cannot tell 55% from chance" in err
    assert "--min-items" in err
    out = tmp_path / "qa_out.json"
    argv = ["audit", "--data", str(path), "--balance", "--out", str(out), "--format", "csv"]
    # a floor above what balancing keeps is refused after it, naming the kept size
    assert main([*argv, "--min-items", "119", "--probes", "none"]) == 2
    assert "the hard split holds" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--min-items", "40", "--probes", "substring,final_char,casing"]) == 0
    err = capsys.readouterr().err
    assert "hard split:" in err and "% kept)" in err and "a 95% interval of" in err
    import orjson

    meta = orjson.loads((tmp_path / "qa_out.json.audit.json").read_bytes())
    hard = meta["splits"]["hard"]
    assert meta["splits"]["test"]["n"] == 120 and hard["file"] == "qa_out.hard.json"
    assert hard["n"] == meta["kept"] and 0 < hard["kept_share"] < 1
    assert hard["balanced_by"] == ["length_only", "answer_only", "overlap"]
    assert len((tmp_path / "qa_out.hard.json").read_bytes().splitlines()) == hard["n"]
    assert {r["measure"] for r in meta["audit_after"]} >= {"substring", "final_char", "casing"}
