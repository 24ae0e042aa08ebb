"""Text as it was given: a HaluEval file read as seeds and exported again holds the same
texts in its seed fields, byte for byte (leading spaces, a trailing newline, double spaces,
tabs, non-ASCII); only comparisons and checks normalise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halugen.cli import main
from tests.e2e.test_generate import config, query, run

# HaluEval's forms: knowledge with a leading space and sentences glued without one, a right
# summary ending in a newline, a dialogue history ending in a space; plus what people's
# own files hold.
RECORDS = {
    "qa": [
        {
            "knowledge": f" Zoë Ångström{i} (1844–1846) was a painter.She lived in Zürich.",
            "question": f"Where did Zoë Ångström{i}  live?",
            "right_answer": f"Zürich{i}",
            "hallucinated_answer": "Basel.",
        }
        for i in range(6)
    ],
    "dialogue": [
        {
            "knowledge": f"Cold Lanterns{i} is written by Ilse Varga",
            "dialogue_history": f"[Human]: Do you know Cold Lanterns{i}? [Assistant]: I do.  "
            "[Human]: Who wrote it? ",
            "right_response": f"Ilse Varga wrote it – «a classic»{i}.",
            "hallucinated_response": "Tomas Orl wrote it.",
        }
        for i in range(6)
    ],
    "summarization": [
        {
            "document": f"The harbour of Sollen{i} reopened on Monday.\tShips queued  all day."
            "\r\nThe mayor said: «finally».",
            "right_summary": f"Sollen{i}'s harbour reopened and ships queued.\n",
            "hallucinated_summary": "Sollen's airport closed.",
        }
        for i in range(6)
    ],
}
FILES = {
    "qa": "qa_data.json",
    "dialogue": "dialogue_data.json",
    "summarization": "summarization_data.json",
}
SEED_FIELDS = {
    "qa": ("knowledge", "question", "right_answer"),
    "dialogue": ("knowledge", "dialogue_history", "right_response"),
    "summarization": ("document", "right_summary"),
}


def write(tmp_path: Path, task: str) -> Path:
    path = tmp_path / "in" / FILES[task]
    path.parent.mkdir(exist_ok=True)
    # json.dumps' layout with the text as written: how HaluEval's files are made
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RECORDS[task]),
        encoding="utf-8",
    )
    return path


def export(db: Path, task: str, out: Path) -> Path:
    out.mkdir(exist_ok=True)
    target = out / FILES[task]
    args = ["export", "--format", "halueval", "--task", task, "--db", str(db), "--out", str(target)]
    assert main(args) == 0
    return target


@pytest.mark.parametrize("task", ["qa", "dialogue", "summarization"])
def test_seed_fields_round_trip_unchanged(simulator, tmp_path: Path, task: str) -> None:
    sim = simulator()
    seeds = write(tmp_path, task)
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, seeds, db, tasks=(task,)))
    assert outcome.exit_code == 0, outcome.message
    out = export(db, task, tmp_path / "out")
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(exported) >= 5
    given = {tuple(r[f] for f in SEED_FIELDS[task]) for r in RECORDS[task]}
    for record in exported:
        assert tuple(record[f] for f in SEED_FIELDS[task]) in given, record
    # the store holds them as given too, so SQL sees what the file had
    column = SEED_FIELDS[task][-1]
    stored = {r[0] for r in query(db, f"SELECT {column} FROM samples")}
    assert stored <= {r[column] for r in RECORDS[task]}
    # comparisons leave the given whitespace out: the trailing newline is not length
    hallucinated = {"qa": "hallucinated_answer", "dialogue": "hallucinated_response"}.get(
        task, "hallucinated_summary"
    )
    for right, fake, ratio in query(
        db, f"SELECT {column}, {hallucinated}, length_ratio FROM samples"
    ):
        assert ratio == pytest.approx(len(fake.strip()) / len(right.strip()))


def test_exported_lines_are_the_given_lines_apart_from_the_hallucination(
    simulator, tmp_path: Path
) -> None:
    sim = simulator()
    seeds = write(tmp_path, "qa")
    db = tmp_path / "h.duckdb"
    assert run(config(sim.base_url, seeds, db)).exit_code == 0
    out = export(db, "qa", tmp_path / "out").read_bytes().splitlines()
    given = set(seeds.read_bytes().splitlines())
    assert out
    for line in out:
        record = json.loads(line)
        original = next(r for r in RECORDS["qa"] if r["question"] == record["question"])
        record["hallucinated_answer"] = original["hallucinated_answer"]
        assert json.dumps(record, ensure_ascii=False).encode() in given
        assert (
            line.replace(
                json.dumps(json.loads(line)["hallucinated_answer"], ensure_ascii=False).encode(),
                json.dumps(original["hallucinated_answer"], ensure_ascii=False).encode(),
            )
            in given
        )
