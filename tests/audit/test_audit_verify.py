"""``audit --verify --data FILE`` against the simulator: the verify questions over
HaluEval-layout files (a mechanics check: the simulator's judge is not a real one)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from halugen.cli import main

DATA = Path(__file__).parent / "data"
FILES = [str(DATA / f"{t}_data.json") for t in ("qa", "dialogue", "summarization")]


def _audit(sim_url: str, db: Path, *extra: str) -> int:
    return main(
        [
            "audit",
            "--verify",
            "--data",
            *FILES,
            "--base-url",
            sim_url,
            "--api-key",
            "x",
            "-m",
            "gpt-4o-mini",
            "--db",
            str(db),
            "--no-progress",
            *extra,
        ]
    )


def test_audit_verify_checks_every_pair_of_halueval_files_and_pays_once(
    simulator, tmp_path, capsys
):
    sim = simulator()
    db = tmp_path / "a.duckdb"
    assert _audit(sim.base_url, db, "--format", "json") == 0
    rows = json.loads(capsys.readouterr().out)
    by_task = {r["task"]: r for r in rows}
    assert set(by_task) == {"qa", "dialogue", "summarization"}
    assert by_task["qa"]["items"] == by_task["qa"]["checked"] == "4"
    assert by_task["qa"]["flagged share (95% CI)"].endswith("%)")
    with duckdb.connect(str(db), read_only=True) as conn:
        checks = conn.execute(
            "SELECT task, count(*) FROM label_checks GROUP BY 1 ORDER BY 1"
        ).fetchall()
        (kind,) = conn.execute("SELECT DISTINCT kind FROM runs").fetchone()
        spent = conn.execute(
            "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')"
        ).fetchone()[0]
    assert checks == [("dialogue", 2), ("qa", 4), ("summarization", 1)]
    assert kind == "verify"
    billed = sim.stats(keys=False)
    assert spent / 1e12 == pytest.approx(billed["billed_usd"], abs=1e-12)
    # the same command again: every item is checked, nothing is paid twice
    assert _audit(sim.base_url, db) == 0
    out = capsys.readouterr().out
    assert "Label check (audit --verify)" in out and "%" in out
    assert sim.stats(keys=False)["billed_requests"] == billed["billed_requests"]


def test_audit_verify_needs_files(tmp_path, capsys):
    code = main(["audit", "--verify", "--db", str(tmp_path / "x.duckdb"), "--api-key", "x"])
    assert code == 2
    assert "give --data FILE" in capsys.readouterr().err


_CITIES = [
    ("Lisbon", "Porto"),
    ("Vienna", "Graz"),
    ("Lyon", "Nantes"),
    ("Bergen", "Oslo"),
    ("Ghent", "Bruges"),
    ("Turin", "Genoa"),
    ("Cork", "Galway"),
    ("Malmo", "Uppsala"),
    ("Krakow", "Gdansk"),
    ("Seville", "Bilbao"),
    ("Leipzig", "Bremen"),
    ("Utrecht", "Leiden"),
    ("Tampere", "Turku"),
    ("Brno", "Ostrava"),
    ("Basel", "Lucerne"),
    ("Aarhus", "Odense"),
]


def _cities_file(path: Path, *, wrong_city_in_knowledge: bool) -> Path:
    """Sixteen QA items: where a poet died. With ``wrong_city_in_knowledge`` the knowledge
    names the hallucinated city too (as the place of birth), so a judge that reads words
    finds both answers supported; without, only the right one."""
    lines = []
    for i, (died, born) in enumerate(_CITIES):
        knowledge = f"The poet Anna Vell{i} wrote Grey Orchards No. {i} and died in {died}."
        if wrong_city_in_knowledge:
            knowledge += f" She was born in {born}."
        record = {
            "knowledge": knowledge,
            "question": f"Where did the author of Grey Orchards No. {i} die?",
            "right_answer": died,
            "hallucinated_answer": born,
        }
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("in_knowledge", [True, False])
def test_audit_verify_says_when_its_judge_does_not_tell_the_texts_apart(
    simulator, tmp_path, capsys, in_knowledge
):
    # the simulated judge reads words: with both cities in the knowledge it calls both
    # answers supported, a judge whose flagged share says nothing about the labels
    data = _cities_file(tmp_path / "qa.json", wrong_city_in_knowledge=in_knowledge)
    sim = simulator()
    code = main(
        [
            "audit",
            "--verify",
            "--data",
            str(data),
            "--base-url",
            sim.base_url,
            "--api-key",
            "x",
            "-m",
            "gpt-4o-mini",
            "--db",
            str(tmp_path / "a.duckdb"),
            "--format",
            "json",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    # the live line counts what the judge flagged, not "rejected" (nothing is rejected)
    last = [line for line in captured.err.splitlines() if line.startswith("[halugen] qa:")][-1]
    flagged = int(last.split(" flagged")[0].rsplit(" ", 1)[1])
    assert flagged == int(json.loads(captured.out)[0]["flagged"])
    assert "rejected" not in last
    (row,) = json.loads(captured.out)
    answers = row["judge said supported: right / hallucinated"]
    if in_knowledge:
        assert answers.endswith("(does not separate)")
        assert "qa: the judge called" in captured.err
        assert "use a stronger --verify-model" in captured.err
    else:
        assert "does not separate" not in answers
        assert "the judge called" not in captured.err
