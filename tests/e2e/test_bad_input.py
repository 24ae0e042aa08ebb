"""Bad input costs only itself: a store that is not a store, seed files with nothing good."""

from __future__ import annotations

import json

import pytest

from halugen.cli import main


def _run(sim, seeds, db, *extra: str) -> list[str]:
    return ["run", "--seeds", str(seeds), "--base-url", sim.base_url, "--api-key", "k",
            "--model", "gpt-4o-mini", "--db", str(db), "--no-progress", *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"id,article,highlights\n1,a,b\n", "not a DuckDB store"),
        (b"PAR1\x00\x00\x00\x00\x00\x00\x00\x00\x00", "not a DuckDB store"),
        (b"", "empty file"),
    ],
)
def test_a_db_that_is_not_a_store_is_refused_before_any_call(
    simulator, hotpot_file, tmp_path, capsys, content, says
):
    sim = simulator()
    db = tmp_path / "data.csv"
    db.write_bytes(content)
    assert main(_run(sim, hotpot_file(3), db)) == 2  # bad input, like a bad seed file
    err = capsys.readouterr().err
    assert says in err and str(db) in err and "--db" in err
    assert "Traceback" not in err and "bug" not in err
    assert sim.stats(keys=False)["requests"] == 0
    assert db.read_bytes() == content  # the user's file is untouched


def test_a_run_where_every_record_is_bad_exits_2(simulator, tmp_path, capsys):
    sim = simulator()
    seeds = tmp_path / "qa.jsonl"
    # HaluEval QA lines without a right answer: every one is a bad record
    seeds.write_text(
        "".join(json.dumps({"knowledge": f"k{i}", "question": f"q{i}?"}) + "\n" for i in range(4))
    )
    code = main(_run(sim, seeds, tmp_path / "h.duckdb", "--seed-format", "halueval-qa"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "every record in the seed files is bad" in err and "bad_records" in err
    assert sim.stats(keys=False)["requests"] == 0


def test_the_closing_line_counts_bad_records(simulator, tmp_path, capsys):
    sim = simulator()
    seeds = tmp_path / "qa.jsonl"
    lines = [json.dumps({"knowledge": "The Serin flows here.", "question": f"Which river {i}?",
                         "right_answer": "Serin"}) for i in range(3)]  # fmt: skip
    lines.insert(1, "{not json")
    seeds.write_text("\n".join(lines) + "\n")
    code = main(_run(sim, seeds, tmp_path / "h.duckdb", "--seed-format", "halueval-qa"))
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "1 bad record(s)" in out.out + out.err
