"""Dialogue and summarization end to end, several tasks under one budget, exports."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import anyio
import duckdb
import orjson
import pytest

from halugen.cli import main
from halugen.engine import generate
from halugen.seeds import read_seeds
from halugen.tasks import builtin_folder
from tests.e2e.test_generate import config, query

RATING = '{"dialog_rating": "5"}'


def dialog(i: int) -> str:
    turns = [
        {"type": "chat", "sender": "user", "message": f"Do you know the novel Cold Lanterns {i}?"},
        {
            "type": "action",
            "sender": "assistant",
            "action_id": "kgwalk/choose_path",
            "metadata": {
                "path": [
                    0.9,
                    [[f"Cold Lanterns {i}", "written_by", f"Ilse Varga {i}"]],
                    f"Cold Lanterns {i} was written by Ilse Varga {i}",
                ]
            },
        },
        {
            "type": "chat",
            "sender": "assistant",
            "message": f"Yes, Cold Lanterns {i} is a novel by Ilse Varga {i}. Have you read it?",
        },
    ]
    return json.dumps(turns)


def write_dialogues(path: Path, n: int) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Messages", "User Rating", "Assistant Rating"])
        for i in range(n):
            w.writerow([dialog(i), RATING, RATING])
    return path


ARTICLE = (
    "The town council of Brennick voted on Tuesday to rebuild the old stone bridge over "
    "the river Olm. The bridge, built in 1821, was closed in March after inspectors found "
    "cracks in two of its arches. The repair will cost 4.2 million euros and take two "
    "years. Mayor Anja Holt said traffic would use a temporary crossing. "
)


def write_articles(path: Path, n: int, repeat: int = 1) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["", "id", "article", "highlights"])
        for i in range(n):
            w.writerow(
                [
                    i,
                    f"art{i}",
                    (ARTICLE * repeat).replace("Brennick", f"Brennick{i}"),
                    f"Brennick{i} will rebuild its 1821 bridge.\nThe repair costs 4.2 million "
                    f"euros",
                ]
            )
    return path


def run(cfg):
    return anyio.run(lambda: generate(cfg))


@pytest.mark.parametrize("task", ["dialogue", "summarization"])
def test_each_task_end_to_end(task, simulator, tmp_path):
    sim = simulator()
    seeds = (
        write_dialogues(tmp_path / "d.csv", 6)
        if task == "dialogue"
        else write_articles(tmp_path / "a.csv", 6)
    )
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, seeds, db, tasks=(task,)))
    assert outcome.exit_code == 0, outcome.message
    view = f"{task}_samples"
    rows = query(db, f"SELECT * FROM {view}")
    assert 4 <= len(rows) <= 6
    cols = [r[0] for r in query(db, f"SELECT column_name FROM (DESCRIBE {view})")]
    hallucinated = "hallucinated_response" if task == "dialogue" else "hallucinated_summary"
    right = "right_response" if task == "dialogue" else "right_summary"
    for row in rows:
        rec = dict(zip(cols, row, strict=True))
        assert rec[hallucinated] and rec[hallucinated].strip() == rec[hallucinated]
        assert rec[hallucinated] != rec[right]
        assert rec["length_ratio"] == pytest.approx(len(rec[hallucinated]) / len(rec[right]))
    patterns = {r[0] for r in query(db, "SELECT pattern FROM samples")}
    expected = (
        {"extrinsic-soft", "extrinsic-hard", "extrinsic-grouped"}
        if task == "dialogue"
        else {"factual", "non-factual", "intrinsic"}
    )
    assert patterns <= expected | {"unstated"}


def test_all_tasks_in_one_run_share_one_budget(simulator, hotpot_file, tmp_path):
    sim = simulator()
    seeds = (
        hotpot_file(40),
        write_dialogues(tmp_path / "d.csv", 40),
        write_articles(tmp_path / "a.csv", 40),
    )
    db = tmp_path / "h.duckdb"
    outcome = run(
        config(
            sim.base_url,
            seeds[0],
            db,
            seeds=tuple(map(str, seeds)),
            tasks=("all",),
            budget_usd=0.01,
        )
    )
    assert outcome.exit_code == 3  # the shared budget ran out
    assert sim.stats()["billed_usd"] <= 0.01
    assert len(query(db, "SELECT run_id FROM runs")) == 1
    # per-task rows in cost_by_stage
    tasks = {r[0] for r in query(db, "SELECT DISTINCT task FROM cost_by_stage")}
    assert "qa" in tasks and len(tasks) >= 2
    # the same command with more money finishes all three tasks
    outcome = run(
        config(
            sim.base_url, seeds[0], db, seeds=tuple(map(str, seeds)), tasks=("all",), budget_usd=1.0
        )
    )
    assert outcome.exit_code == 0, outcome.message
    per_task = dict(query(db, "SELECT task, count(*) FROM seed_progress GROUP BY task"))
    assert per_task == {"qa": 40, "dialogue": 40, "summarization": 40}


def test_long_documents_are_truncated_or_skipped_and_recorded(simulator, tmp_path):
    sim = simulator()
    card = tmp_path / "small.toml"
    card.write_text(
        'date = "2026-01-01"\n[models."tiny"]\ninput = 0.1\noutput = 0.2\ncontext_window = 3000\n'
    )
    seeds = write_articles(tmp_path / "a.csv", 3, repeat=40)  # ~2,800 tokens of article each
    db = tmp_path / "h.duckdb"
    outcome = run(
        config(
            sim.base_url, seeds, db, tasks=("summarization",), model="tiny", price_card=str(card)
        )
    )
    assert outcome.exit_code == 0, outcome.message
    truncated = query(db, "SELECT truncated_tokens, length(document) FROM samples")
    assert truncated and all(t > 500 for t, _ in truncated)
    assert all(n < len(ARTICLE) * 40 for _, n in truncated)
    assert sim.stats()["by_status"].get(400, 0) == 0  # nothing was too long for the server
    db2 = tmp_path / "h2.duckdb"
    outcome = run(
        config(
            sim.base_url,
            seeds,
            db2,
            tasks=("summarization",),
            model="tiny",
            price_card=str(card),
            long_documents="skip",
        )
    )
    assert query(db2, "SELECT count(*) FROM samples")[0][0] == 0
    reasons = query(db2, "SELECT reason FROM bad_records")
    assert len(reasons) == 3 and all("context window" in r[0] for r in reasons)


def test_halueval_export_round_trips_as_seeds(simulator, hotpot_file, tmp_path, capsys):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    assert run(config(sim.base_url, hotpot_file(8), db)).exit_code == 0
    out = tmp_path / "qa_data.json"
    assert (
        main(["export", "--format", "halueval", "--task", "qa", "--db", str(db), "--out", str(out)])
        == 0
    )
    lines = out.read_text().splitlines()
    assert len(lines) == 8
    first = json.loads(lines[0])
    assert list(first) == ["knowledge", "question", "right_answer", "hallucinated_answer"]
    seeds = [s for s in read_seeds([str(out)], "qa")]
    exported = {(r["knowledge"], r["question"], r["right_answer"]) for r in map(json.loads, lines)}
    assert {
        (s.fields["knowledge"], s.fields["question"], s.fields["right_answer"]) for s in seeds
    } == exported
    # and a run over the exported file works
    assert run(config(sim.base_url, out, tmp_path / "h2.duckdb")).exit_code == 0


def test_jsonl_and_parquet_exports_with_filters(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    assert run(config(sim.base_url, hotpot_file(10), db)).exit_code == 0
    jl = tmp_path / "s.jsonl"
    assert main(["export", "--format", "jsonl", "--db", str(db), "--out", str(jl)]) == 0
    recs = [orjson.loads(line) for line in jl.read_text().splitlines()]
    assert len(recs) == 10
    for key in (
        "pattern",
        "template_hash",
        "run_model",
        "cost_usd_for_seed",
        "source_file",
        "source_line",
        "seed_id",
    ):
        assert key in recs[0]
    assert all(r["cost_usd_for_seed"] > 0 for r in recs)
    pattern = recs[0]["pattern"]
    pq = tmp_path / "s.parquet"
    assert (
        main(
            [
                "export",
                "--format",
                "parquet",
                "--db",
                str(db),
                "--out",
                str(pq),
                "--where",
                f"pattern = '{pattern}'",
            ]
        )
        == 0
    )
    n = duckdb.connect().execute(f"SELECT count(*) FROM '{pq}'").fetchone()[0]
    assert n == sum(r["pattern"] == pattern for r in recs)
    assert (
        main(
            [
                "export",
                "--format",
                "jsonl",
                "--db",
                str(db),
                "--out",
                str(jl),
                "--where",
                "no_such_column = 1",
            ]
        )
        == 2
    )


def test_editing_the_filter_prompt_reruns_only_filtering(simulator, hotpot_file, tmp_path):
    sim = simulator()
    # enough seeds that some get two different candidates (those alone are filtered)
    seeds = hotpot_file(40)
    db = tmp_path / "h.duckdb"
    first = run(config(sim.base_url, seeds, db))
    assert first.exit_code == 0
    assert query(db, "SELECT count(*) FROM calls WHERE stage = 'filter'")[0][0] > 0
    before = sim.stats(keys=False)["requests"]
    prompts = tmp_path / "prompts"
    shutil.copytree(builtin_folder("qa") / "prompts", prompts / "qa")
    filt = prompts / "qa" / "filter.txt"
    filt.write_text(filt.read_text().replace("=== system\n", "=== system\nBe careful.\n", 1))
    second = run(config(sim.base_url, seeds, db, prompts_dir=prompts))
    assert second.exit_code == 0 and second.run_id != first.run_id  # other prompts, other run
    stages = dict(
        query(
            db,
            f"SELECT stage, count(*) FILTER (WHERE status = 'ok') FROM calls "
            f"WHERE run_id = '{second.run_id}' GROUP BY stage",
        )
    )
    assert stages.get("sample", 0) == 0  # every sampling call came from the store
    assert stages["filter"] > 0
    assert sim.stats(keys=False)["requests"] - before == stages["filter"]
    hashes = query(db, "SELECT DISTINCT run_id, filter_template_hash FROM samples")
    assert len({h for _, h in hashes}) == 2  # told apart in SQL
