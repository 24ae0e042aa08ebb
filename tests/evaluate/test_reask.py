"""An unreadable recognition verdict is asked again once, end to end against the simulator.

The simulator hedges on a share of recognition prompts ("It is possible that ... but I cannot
be certain.") and answers the follow-up in the reply format, about the same record; its own
bill says how many requests were sent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halugen.cli import main
from halugen.errors import UsageError
from halugen.evaluate.config import EvalOutcome
from halugen.evaluate.readers import read_verdict
from halugen.evaluate.verdicts import parse_verdict
from halugen.simulate import SimConfig
from halugen.simulate.answers import reply
from halugen.simulate.prompt_reading import parse_prompt, with_record
from tests.e2e.test_eval import run_eval, write_qa
from tests.e2e.test_generate import query


def _eval(
    base_url: str, data: Path, db: Path, strategy: str = "plain", read: str = "strict"
) -> EvalOutcome:
    # text verdicts: a JSON schema would constrain the reply to Yes or No
    return run_eval(
        base_url, data, db, concurrency=8, strategy=strategy, structured="off", read=read
    )


def test_an_unreadable_verdict_is_asked_again_once_and_read(simulator, tmp_path, capsys):
    data, oracle = write_qa(tmp_path / "qa.json", 60)
    sim = simulator(oracle=oracle, judge_accuracy=1.0, unreadable_verdicts=0.3)
    db = tmp_path / "h.duckdb"
    outcome = _eval(sim.base_url, data, db)
    assert outcome.exit_code == 0, outcome.message
    rows = query(db, "SELECT asked, first_verdict, verdict, truth, first_raw, raw FROM judgements")
    assert len(rows) == 60
    reasked = [r for r in rows if r[0] == 2]
    assert 8 <= len(reasked) <= 30  # about 30% hedged at first
    # every first hedge was invalid, and the follow-up was read, right (the oracle judge)
    assert all(r[1] == "invalid" and r[4] and "Verdict:" in r[5] for r in reasked)
    assert all(r[2] in ("yes", "no") for r in rows)
    assert all((r[2] == "yes") == r[3] for r in rows)
    assert all(r[1] == r[2] for r in rows if r[0] == 1)
    # the simulator billed one request per item, and one more per re-ask
    assert sim.stats(keys=False)["requests"] == 60 + len(reasked)
    # resumed: nothing is asked again
    again = _eval(sim.base_url, data, db)
    assert again.run_id == outcome.run_id
    assert sim.stats(keys=False)["requests"] == 60 + len(reasked)
    # the report counts the first-reply invalids, the re-asks and the final invalids apart
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["results"]
    assert row["first_invalid"] == row["reasked"] == len(reasked)
    assert row["metrics"]["invalid"] == 0
    shapes = {s["shape"]: s for s in row["shapes"]}
    assert any(s["verdict"] == "invalid" for s in shapes.values())  # the hedges, counted
    assert {r["table"] for r in report["paper"]} == {"Table 5", "Table 8"}


def test_a_second_unreadable_reply_stays_invalid(simulator, tmp_path):
    data, oracle = write_qa(tmp_path / "qa.json", 20)
    sim = simulator(oracle=oracle, garbage_rate=1.0)  # every formatted reply ignores it
    db = tmp_path / "h.duckdb"
    outcome = _eval(sim.base_url, data, db)
    assert outcome.exit_code == 0, outcome.message
    rows = query(db, "SELECT asked, first_verdict, verdict FROM judgements")
    assert rows and all(r == (2, "invalid", "invalid") for r in rows)
    assert sim.stats(keys=False)["requests"] == 2 * len(rows)  # asked again once, not more


def test_contrast_picks_are_asked_again_too(simulator, tmp_path):
    data, oracle = write_qa(tmp_path / "qa.json", 20)
    sim = simulator(oracle=oracle, judge_accuracy=1.0, garbage_rate=0.5)
    db = tmp_path / "h.duckdb"
    outcome = _eval(sim.base_url, data, db, strategy="contrast")
    assert outcome.exit_code == 0, outcome.message
    rows = query(db, "SELECT asked, first_verdict, verdict FROM judgements")
    assert len(rows) == 20 and any(r[0] == 2 for r in rows)
    assert all(r[1] == "invalid" for r in rows if r[0] == 2)
    assert sim.stats(keys=False)["requests"] == 20 + sum(r[0] == 2 for r in rows)


@pytest.mark.parametrize("kind", ["verdict", "contrast", "contrast (older label)"])
def test_the_simulator_answers_a_follow_up_about_the_earlier_record(kind: str) -> None:
    if kind == "verdict":
        first = "Question: Where?\nAnswer: Serin3\n\nReply format:\nVerdict: <Yes or No>"
        follow = "I could not read it.\n\nReply format:\nVerdict: <Yes or No>"
    elif kind == "contrast":
        line = "Choice: <1 or 2, the one that contains hallucination>"
        first = f"Question: Where?\nAnswer 1: Serin3\nAnswer 2: Varnel\n\nReply format:\n{line}"
        follow = f"I could not read it.\n\nReply format:\n{line}"
    else:
        first = (
            "Question: Where?\nAnswer 1: Serin3\nAnswer 2: Varnel\n\n"
            "Reply format:\nHallucinated: <1 or 2>"
        )
        follow = "I could not read it.\n\nReply format:\nHallucinated: <1 or 2>"
    info = with_record(parse_prompt(follow), ["system text", first, "It might be."])
    assert info.follow_up and info.text == first
    assert info.kind == kind.split()[0]
    assert with_record(parse_prompt(first), []) == parse_prompt(first)  # has its own record


def test_unreadable_verdicts_are_first_replies_only() -> None:
    first = "Question: Where?\nAnswer: Serin3\n\nReply format:\nVerdict: <Yes or No>"
    follow = "I could not read it.\n\nReply format:\nVerdict: <Yes or No>"
    oracle = {"serin3": False}
    hedge = reply(parse_prompt(first), prompt_key=1, variant_key=2, unreadable=1.0)
    assert read_verdict(hedge.text) == "invalid"
    info = with_record(parse_prompt(follow), [first, hedge.text])
    answer = reply(info, prompt_key=1, variant_key=3, unreadable=1.0, oracle=oracle)
    assert answer.text == "Verdict: No"
    never = reply(parse_prompt(first), prompt_key=1, variant_key=2, unreadable=0.0, oracle=oracle)
    assert never.text == "Verdict: No"
    with pytest.raises(UsageError, match="unreadable_verdicts"):
        SimConfig(unreadable_verdicts=1.5)


def test_the_simulated_off_contract_replies_are_unsure_strictly() -> None:
    """Every off-contract reply the simulator sends is unsure to the strict reader (so it
    exercises the re-ask), though the lenient reader commits on some of them."""
    first = "Question: Where?\nAnswer: Serin3\n\nReply format:\nVerdict: <Yes or No>"
    texts = {
        reply(parse_prompt(first), prompt_key=k, variant_key=2, unreadable=1.0).text
        for k in range(200)
    }
    assert len(texts) >= 5
    assert all(read_verdict(t) == "invalid" for t in texts)
    assert any(parse_verdict(t) != "invalid" for t in texts)


def test_the_reader_is_recorded_and_lenient_is_another_run(simulator, tmp_path, capsys):
    data, oracle = write_qa(tmp_path / "qa.json", 60)
    sim = simulator(oracle=oracle, judge_accuracy=1.0, unreadable_verdicts=0.5)
    db = tmp_path / "h.duckdb"
    strict = _eval(sim.base_url, data, db)
    lenient = _eval(sim.base_url, data, db, read="lenient")
    assert strict.exit_code == lenient.exit_code == 0
    assert strict.run_id != lenient.run_id  # the reader is part of what the run is
    rows = query(
        db,
        "SELECT run_id, reader, count(*), count(*) FILTER (WHERE asked = 2) "
        "FROM judgements GROUP BY ALL",
    )
    by_run = {r[0]: r[1:] for r in rows}
    assert by_run[strict.run_id][:2] == ("strict", 60)
    assert by_run[lenient.run_id][:2] == ("lenient", 60)
    # prose verdicts are asked again strictly, read as they come leniently
    assert by_run[strict.run_id][2] > by_run[lenient.run_id][2]
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert ",strict," in out and ",lenient," in out
