"""Reports that cannot mislead, end to end: rows keyed by data source and scoring, strategies
that do not apply refused, dialogue intervals that count dialogues, HaluEval's dialogue unit."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from halugen.cli import main
from halugen.seeds import read_seeds
from tests.e2e.test_eval import run_eval, write_qa
from tests.e2e.test_generate import config, query, run

RATING = '{"dialog_rating": "5"}'


def _report_csv(db: Path, capsys) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "csv"]) == 0
    rows = csv.DictReader(io.StringIO(capsys.readouterr().out))
    return [r for r in rows if r["source"] == "measured"]


def test_different_files_and_scorings_never_share_a_row(simulator, tmp_path, capsys) -> None:
    a, oracle_a = write_qa(tmp_path / "a.json", 12)
    b, oracle_b = write_qa(tmp_path / "b.json", 30)
    sim = simulator(oracle={**oracle_a, **oracle_b}, judge_accuracy=1.0)
    db = tmp_path / "h.duckdb"
    assert run_eval(sim.base_url, a, db).exit_code == 0
    assert run_eval(sim.base_url, b, db).exit_code == 0
    assert run_eval(sim.base_url, a, db, scoring="logprobs").exit_code == 0
    rows = _report_csv(db, capsys)
    # files are shown by name: no directory of the machine that ran the eval
    assert not any(str(tmp_path) in r["data_source"] for r in rows)
    got = sorted((r["data_source"], r["scoring"], r["n"], r["items"]) for r in rows)
    assert got == [
        (f"file: {a.name}", "logprobs", "12", "12"),
        (f"file: {a.name}", "parse", "12", "12"),
        (f"file: {b.name}", "parse", "30", "30"),
    ]
    # the same file judged again (another seed: other sides shown) pools into its row, and
    # a prompt judged twice counts once
    assert run_eval(sim.base_url, a, db, seed=7).exit_code == 0
    assert run_eval(sim.base_url, a, db, seed=7).exit_code == 0
    rows = _report_csv(db, capsys)
    key = (f"file: {a.name}", "parse")
    (pooled,) = [r for r in rows if (r["data_source"], r["scoring"]) == key]
    assert int(pooled["items"]) == 12 and 12 < int(pooled["n"]) <= 24
    assert len(pooled["runs"].split()) == 2
    # the accuracy table splits the line by source rather than pooling it
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert f"| gpt-4o-mini [file: {a.name}] | plain |" in md
    assert f"| gpt-4o-mini [file: {b.name}] | plain |" in md
    assert "| gpt-4o-mini (logprobs) | plain |" in md
    assert str(tmp_path) not in md
    # another file of the same name elsewhere: both keep their paths, never pooled
    (tmp_path / "elsewhere").mkdir()
    other, oracle_other = write_qa(tmp_path / "elsewhere" / "a.json", 5)
    sim2 = simulator(oracle=oracle_other, judge_accuracy=1.0)
    assert run_eval(sim2.base_url, other, db).exit_code == 0
    sources = {r["data_source"] for r in _report_csv(db, capsys)}
    assert sources == {f"file: {a}", f"file: {other}", f"file: {b.name}"}


def test_a_strategy_the_task_lacks_is_refused(tmp_path, capsys) -> None:
    data = tmp_path / "summarization_data.json"
    data.write_text(
        json.dumps({"document": "D.", "right_summary": "R.", "hallucinated_summary": "H."}) + "\n"
    )
    code = main(
        [
            "eval",
            "--task",
            "summarization",
            "--strategy",
            "knowledge",
            "--data",
            str(data),
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            "k",
            "--db",
            str(tmp_path / "h.duckdb"),
            "--no-progress",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "does not apply to the summarization task" in err and "plain, cot, contrast" in err


def _dialogue(i: int, replies: int) -> str:
    turns = [
        {"type": "chat", "sender": "user", "message": f"Tell me about the novel Lanterns {i}."}
    ]
    for k in range(replies):
        turns.append(
            {
                "type": "action",
                "sender": "assistant",
                "action_id": "kgwalk/choose_path",
                "metadata": {
                    "path": [
                        0.9,
                        [[f"Lanterns {i}", "fact", f"F{k}"]],
                        f"Lanterns {i} has fact number {k} by Ilse Varga {i}",
                    ]
                },
            }
        )
        turns.append(
            {
                "type": "chat",
                "sender": "assistant",
                "message": f"Lanterns {i} has fact number {k}, written by Ilse Varga {i}.",
            }
        )
        turns.append({"type": "chat", "sender": "user", "message": f"And what else? ({k})"})
    return json.dumps(turns)


def write_dialogues(path: Path, n: int, replies: int) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Messages", "User Rating", "Assistant Rating"])
        for i in range(n):
            w.writerow([_dialogue(i, replies), RATING, RATING])
    return path


def test_halueval_unit_gives_one_seed_per_dialogue(tmp_path) -> None:
    path = str(write_dialogues(tmp_path / "dialogues.csv", 5, 3))
    per_reply = list(read_seeds([path], "dialogue"))
    per_dialogue = list(read_seeds([path], "dialogue", fmt="opendialkg-dialogue"))
    assert len(per_reply) == 15 and len(per_dialogue) == 5
    first = {s.source_line: s for s in reversed(per_reply)}  # each dialogue's first seed
    assert [s.fields for s in per_dialogue] == [first[s.source_line].fields for s in per_dialogue]


def test_dialogue_intervals_resample_dialogues_when_a_run_mixes_them(
    simulator, tmp_path, capsys
) -> None:
    sim = simulator()
    db = tmp_path / "h.duckdb"
    seeds = write_dialogues(tmp_path / "dialogues.csv", 12, 3)
    outcome = run(config(sim.base_url, seeds, db, tasks=("dialogue",)))
    assert outcome.exit_code == 0, outcome.message
    samples = query(db, "SELECT count(*), count(DISTINCT source_line) FROM samples")[0]
    assert samples[0] > samples[1]  # several samples per dialogue
    capsys.readouterr()
    code = main(
        [
            "eval",
            "--task",
            "dialogue",
            "--base-url",
            sim.base_url,
            "--api-key",
            "k",
            "--db",
            str(db),
            "--no-progress",
        ]
    )
    assert code == 0
    (row,) = _report_csv(db, capsys)
    assert row["data_source"].startswith("store: eval run ")
    assert row["accuracy_ci_method"] == f"cluster bootstrap ({samples[1]} clusters)"
    low, high = float(row["accuracy_ci_low"]), float(row["accuracy_ci_high"])
    assert low <= float(row["accuracy"]) <= high
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--format", "markdown"]) == 0
    assert "cluster bootstrap over" in capsys.readouterr().out
