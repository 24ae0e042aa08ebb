"""``halugen audit`` from the command line: files and the store, Markdown and CSV, stored
figures, and a balanced export with its figures beside it."""

from __future__ import annotations

import csv
import io

import duckdb
import orjson
import pytest

from halugen.cli import main
from tests.e2e.test_generate import config, run

from . import fixtures

pytest.importorskip("sklearn", reason="the answer-only audit needs the topics extra")


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_audit_of_a_file_as_csv_and_markdown(tmp_path, capsys) -> None:
    path = fixtures.write(tmp_path / "qa_data.json", fixtures.long_hallucinations(60))
    assert main(["audit", "--data", str(path), "--format", "csv", "--probes", "none"]) == 0
    rows = {r["measure"]: r for r in _csv(capsys.readouterr().out)}
    assert set(rows) == {"length_only", "answer_only", "overlap"}
    assert float(rows["length_only"]["value"]) >= 0.95
    assert rows["length_only"]["chance"] == "0.5" and rows["length_only"]["n"] == "60"
    assert float(rows["length_only"]["ci_low"]) <= float(rows["length_only"]["value"])
    assert (
        main(["audit", "--data", str(path), "--format", "markdown", "--measures", "length_only"])
        == 0
    )
    md = capsys.readouterr().out
    assert f"## Audit: {path}" in md and "| qa | all | length_only | 60 |" in md
    assert "Chance %" in md and "| 100.0 |" in md and "+50.0" in md  # far above chance


def test_file_figures_are_stored_when_a_store_is_named(tmp_path, capsys) -> None:
    path = fixtures.write(tmp_path / "qa_data.json", fixtures.clean_pairs(40))
    db = tmp_path / "h.duckdb"
    assert main(["audit", "--data", str(path), "--db", str(db), "--measures", "length_only",
                 "--probes", "none"]) == 0  # fmt: skip
    assert "audit_results" in capsys.readouterr().err
    with duckdb.connect(str(db), read_only=True) as conn:
        got = conn.execute("SELECT source, task, measure, n, chance FROM audit_results").fetchall()
    assert got == [(str(path), "qa", "length_only", 40, 0.5)]


def test_balance_drops_the_giveaways_and_writes_the_rest_as_read(tmp_path, capsys) -> None:
    path = fixtures.write(tmp_path / "qa_data.json", fixtures.balanceable(120))
    out = tmp_path / "balanced" / "qa_data.json"
    code = main(["audit", "--data", str(path), "--balance", "--out", str(out), "--format", "csv",
                 "--probes", "none", "--min-items", "40"])  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    rows = _csv(captured.out)
    after = {r["measure"]: float(r["value"]) for r in rows if r["source"].endswith("(balanced)")}
    # every measure the audit reports, knowledge overlap included, is near chance
    assert set(after) == {"length_only", "answer_only", "overlap"}
    assert all(abs(v - 0.5) <= 0.05 for v in after.values()), after
    assert "dropped" in captured.err and "every measure within 5 points" in captured.err
    # the kept items are the input's lines, byte for byte, in their order
    original = path.read_bytes().splitlines()
    assert out.read_bytes().splitlines() == original  # the full set, never replaced
    kept = (tmp_path / "balanced" / "qa_data.hard.json").read_bytes().splitlines()
    assert kept and set(kept) <= set(original)
    assert [original.index(k) for k in kept] == sorted(original.index(k) for k in kept)
    assert len(kept) >= 50  # the half without a tell survives, mostly
    meta = orjson.loads((tmp_path / "balanced" / "qa_data.json.audit.json").read_bytes())
    assert meta["balanced"] is True and meta["kept"] == len(kept) and meta["unbalanced"] == []
    assert meta["kept"] + meta["dropped"] == 120
    assert sum(meta["dropped_by_reason"].values()) == meta["dropped"]
    assert {d["reason"] for d in meta["dropped_items"]} <= {"length_only", "answer_only", "overlap"}
    before = {r["measure"]: r["value"] for r in meta["audit_before"]}
    assert before["length_only"] > 0.7 and before["overlap"] > 0.7  # what the set got rid of
    assert {r["measure"] for r in meta["audit_after"]} == {"length_only", "answer_only", "overlap"}
    # the long-sentence hallucinations are what went
    dropped = {d["item_id"] for d in meta["dropped_items"]}
    assert sum(int(i.split(":")[1]) <= 60 for i in dropped) > 0.7 * len(dropped)


def test_a_subset_that_fails_a_measure_is_never_called_balanced(tmp_path, capsys) -> None:
    # HaluEval-like: every right answer is in the knowledge, no hallucination is, so the
    # knowledge overlap gives every item away and no subset can hide it
    path = fixtures.write(tmp_path / "qa_data.json", fixtures.mixed(120))
    out = tmp_path / "subset.json"
    code = main(["audit", "--data", str(path), "--balance", "--out", str(out), "--format", "csv",
                 "--probes", "none", "--min-items", "10"])  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    rows = _csv(captured.out)
    assert not any(r["source"].endswith("(balanced)") for r in rows)
    subset = [r for r in rows if "NOT balanced" in r["source"]]
    assert {r["measure"] for r in subset} == {"length_only", "answer_only", "overlap"}
    overlap = next(r for r in subset if r["measure"] == "overlap")
    assert abs(float(overlap["value"]) - 0.5) > 0.05 and "overlap" in overlap["source"]
    assert "not balanced" in captured.err and "could not bring overlap" in captured.err
    meta = orjson.loads((tmp_path / "subset.json.audit.json").read_bytes())
    assert meta["balanced"] is False and "overlap" in meta["unbalanced"]
    # asked to balance only what it can, it does, and says so
    assert main(["audit", "--data", str(path), "--balance", "--measures",
                 "length_only,answer_only", "--format", "csv", "--probes", "none",
                 "--min-items", "10"]) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert any(r["source"].endswith("(balanced)") for r in _csv(captured.out))
    assert "every measure within 5 points" in captured.err


def test_audit_of_a_generated_run_adds_position_bias_and_pattern_shares(
    simulator, hotpot_file, tmp_path, capsys
) -> None:
    sim = simulator()
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(60, more_names=True), db))
    assert outcome.exit_code == 0
    capsys.readouterr()
    assert main(["audit", "--db", str(db), "--run", outcome.run_id, "--format", "csv",
                 "--probes", "none"]) == 0  # fmt: skip
    rows = _csv(capsys.readouterr().out)
    measures = {r["measure"] for r in rows}
    assert {
        "length_only",
        "answer_only",
        "overlap",
        "picks_first_shown",
        "picks_onepass",
        "pattern_share",
    } <= measures
    shares = [r for r in rows if r["measure"] == "pattern_share"]
    assert {r["pattern"] for r in shares} >= {"comprehension", "factualness"}
    # the CSV prints 6 significant digits: the shares add up to 1 within their rounding
    assert abs(sum(float(r["value"]) for r in shares) - 1.0) < 1e-5
    assert all(r["chance"] == "0.25" for r in shares if r["pattern"] != "unstated")
    first = [r for r in rows if r["measure"] == "picks_first_shown" and r["pattern"] == "all"]
    assert first and first[0]["chance"] == "0.5"
    with duckdb.connect(str(db), read_only=True) as conn:
        stored = conn.execute(
            "SELECT count(*), count(DISTINCT audit_id) FROM audit_results"
        ).fetchone()
    assert stored == (len(rows), 1)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", "x.json"], "give --balance"),
        (["--measures", "length_only,magic"], "unknown --measures magic"),
        (["--tolerance", "0.9", "--balance"], "--tolerance"),
        (["--probes", "substring,magic"], "unknown --probes magic"),
        (["--min-items", "10"], "give --balance"),
        (["--balance", "--min-items", "0"], "--min-items must be"),
    ],
)
def test_usage_errors_are_one_line(tmp_path, capsys, argv, message) -> None:
    path = fixtures.write(tmp_path / "qa.json", fixtures.clean_pairs(10))
    assert main(["audit", "--data", str(path), *argv]) == 2
    assert message in capsys.readouterr().err


def test_an_empty_store_says_what_to_do(tmp_path, capsys) -> None:
    db = tmp_path / "h.duckdb"
    assert main(["audit", "--db", str(db), "--task", "qa"]) == 2
    assert "no samples to audit" in capsys.readouterr().err
    assert main(["audit", "--db", str(db), "--run", "r1", "--data", "x.json"]) == 2
