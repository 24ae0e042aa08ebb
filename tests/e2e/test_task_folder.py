"""A made-up fourth task, defined only as a folder (tests/tasks/folders/glossary), end to end
against the simulator: run under a budget, resume, eval with every strategy, audit, every
export, batch mode, a fleet, live SQL, and request keys that follow the messages. The same
guarantees as for a built-in task, checked the same way: money against the simulator's bill.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import duckdb
import orjson
import pytest

from halugen.cli import main
from halugen.config import BatchOptions, Endpoint, RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.engine import generate

GLOSSARY = Path(__file__).resolve().parents[1] / "tasks" / "folders" / "glossary"
SEEDS = GLOSSARY / "seeds.jsonl"
N_SEEDS = sum(1 for line in SEEDS.read_text(encoding="utf-8").splitlines() if line.strip())
FIELDS = ["term", "domain", "right_definition", "hallucinated_definition"]


def query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def spent_usd(db: Path) -> float:
    (value,) = query(db, "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')")[
        0
    ]
    return (value or 0) / 1e12


def records(path: str) -> list[dict]:
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def cli(*argv: str) -> int:
    return main(list(argv))


def endpoint(sim) -> list[str]:
    return ["--base-url", sim.base_url, "--api-key", "x", "-m", "gpt-4o-mini"]


def config(db: Path, folder: Path = GLOSSARY, **kw: object) -> RunConfig:
    defaults: dict[str, object] = dict(
        tasks=(str(folder),),
        seeds=(str(SEEDS),),
        model="gpt-4o-mini",
        api_key="k",
        db=db,
        budget_usd=1.0,
        rate=RateLimit(concurrency=8),
        retry=RetryPolicy(max_attempts=6, base_delay=0.01, max_delay=0.05),
        timeouts=Timeouts(total=10.0, read=10.0),
        progress=False,
    )
    defaults.update(kw)
    return RunConfig(**defaults)  # type: ignore[arg-type]


def test_a_task_folder_runs_end_to_end(simulator, tmp_path, monkeypatch, capsys):
    sim = simulator()
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "h.duckdb"
    run = ["run", "--task", str(GLOSSARY), "--seeds", str(SEEDS), "--db", str(db)]
    assert cli(*run, *endpoint(sim), "--budget", "0.5usd", "--no-progress") == 0
    rows = query(
        db,
        "SELECT task, pattern, right_answer, json_extract_string(extra_json, '$.term'), "
        "json_extract_string(extra_json, '$.right_definition'), "
        "json_extract_string(extra_json, '$.hallucinated_definition') FROM samples",
    )
    assert len(rows) == N_SEEDS
    for task, pattern, right_answer, term, right, hallucinated in rows:
        assert task == "glossary" and pattern in ("wrong-genus", "wrong-difference")
        assert right_answer is None  # HaluEval's columns stay empty; its fields are its own
        assert term and right and hallucinated and hallucinated != right
    # the store's money is the provider's bill
    assert spent_usd(db) == pytest.approx(sim.stats()["billed_usd"], abs=1e-12)
    assert query(db, "SELECT DISTINCT template FROM candidates ORDER BY 1") == [
        ("glossary/write_direct",),
        ("glossary/write_taught",),
    ]
    # the same command resumes the same run and pays nothing again
    before = sim.stats()["requests"]
    assert cli(*run, *endpoint(sim), "--budget", "0.5usd", "--no-progress") == 0
    assert sim.stats()["requests"] == before
    assert query(db, "SELECT count(DISTINCT run_id) FROM samples") == [(1,)]

    for strategy in ("plain", "cot", "contrast"):
        code = cli(
            "eval",
            "--task",
            str(GLOSSARY),
            "--strategy",
            strategy,
            "--db",
            str(db),
            *endpoint(sim),
            "--no-progress",
        )
        assert code == 0, capsys.readouterr().err
    judged = query(db, "SELECT strategy, count(*) FROM judgements GROUP BY 1 ORDER BY 1")
    assert judged == [("contrast", N_SEEDS), ("cot", N_SEEDS), ("plain", N_SEEDS)]
    assert (
        cli(
            "eval",
            "--task",
            str(GLOSSARY),
            "--strategy",
            "knowledge",
            "--db",
            str(db),
            *endpoint(sim),
        )
        == 2
    )
    assert "does not apply to the glossary task" in capsys.readouterr().err
    assert spent_usd(db) == pytest.approx(sim.stats()["billed_usd"], abs=1e-12)

    assert cli("report", "--db", str(db)) == 0
    assert "Glossary" in capsys.readouterr().out  # task.toml's title
    assert cli("audit", "--task", str(GLOSSARY), "--db", str(db)) == 0
    audit = capsys.readouterr().out
    assert "length_only" in audit and "wrong-genus" in audit
    (measures,) = query(db, "SELECT count(DISTINCT measure) FROM audit_results")[0]
    assert measures >= 3

    # every export, as a process that has never read the folder: the store keeps it
    # (nothing remembers a task between commands)
    # the report names the task as its task.toml does, read back from the store
    assert cli("report", "--db", str(db), "--format", "markdown") == 0
    report = capsys.readouterr().out
    assert "| Model | Strategy | QA | Dialogue | Summarization | General | Glossary |" in report
    assert "### Glossary: details" in report
    assert "Glossary: Definitions of terms: a term, its field, the right definition" in report
    for fmt in ("halueval", "jsonl", "parquet", "csv", "lm-eval", "inspect"):
        assert cli("export", "--format", fmt, "--out", f"out-{fmt}/", "--db", str(db)) == 0, fmt
    halueval = records("out-halueval/glossary_data.json")
    assert len(halueval) == N_SEEDS and all(list(r) == FIELDS for r in halueval)
    jsonl = records("out-jsonl/glossary.jsonl")
    assert {k for k in FIELDS} <= set(jsonl[0]) and "extra_json" not in jsonl[0]
    assert "right_answer" not in jsonl[0]  # the built-in tasks' empty columns are left out
    import pyarrow.parquet as pq

    table = pq.read_table("out-parquet/glossary.parquet")
    assert set(FIELDS) <= set(table.column_names) and table.num_rows == N_SEEDS
    card = Path("out-parquet/README.md").read_text(encoding="utf-8")
    assert "| term | string | the term defined |" in card
    assert "| glossary | Glossary | Definitions of terms: a term, its field," in card
    with Path("out-csv/glossary.csv").open() as f:
        assert set(FIELDS) <= set(f.readline().strip().split(","))
    items = records("out-lm-eval/glossary.jsonl")
    assert len(items) == 2 * N_SEEDS and {"term", "domain", "definition"} <= set(items[0])
    assert Path("out-lm-eval/halugen_glossary.yaml").is_file()
    assert not Path("out-lm-eval/halugen_glossary_knowledge.yaml").exists()
    inspect = Path("out-inspect/halugen_tasks.py").read_text(encoding="utf-8")
    assert "def halugen_glossary(" in inspect
    compile(inspect, "halugen_tasks.py", "exec")
    # the exported file reads back as the task's own items (eval --data, audit --data)
    assert cli("audit", "--data", "out-halueval/glossary_data.json", "--task", str(GLOSSARY)) == 0
    assert (
        cli(
            "eval",
            "--task",
            str(GLOSSARY),
            "--data",
            "out-halueval/glossary_data.json",
            "--db",
            str(db),
            *endpoint(sim),
            "--no-progress",
        )
        == 0
    )
    assert spent_usd(db) == pytest.approx(sim.stats()["billed_usd"], abs=1e-12)


def test_editing_a_template_pays_only_for_the_calls_it_changes(simulator, tmp_path):
    sim = simulator()
    folder = tmp_path / "glossary"
    shutil.copytree(GLOSSARY, folder)
    first = anyio.run(
        lambda: generate(config(tmp_path / "h.duckdb", folder, base_url=sim.base_url))
    )
    assert first.status == "done", first.message
    filter_calls = query(tmp_path / "h.duckdb", "SELECT count(*) FROM calls WHERE stage = 'filter'")
    before = sim.stats()["requests"]
    pick = folder / "prompts" / "pick.txt"
    pick.write_text(pick.read_text().replace("or the one that comes closest", "or the nearest"))
    second = anyio.run(
        lambda: generate(config(tmp_path / "h.duckdb", folder, base_url=sim.base_url))
    )
    assert second.status == "done" and second.run_id != first.run_id  # another template
    # sampling requests are unchanged (answered from the store); only the filter is paid
    assert sim.stats()["requests"] - before == filter_calls[0][0]
    assert spent_usd(tmp_path / "h.duckdb") == pytest.approx(sim.stats()["billed_usd"], abs=1e-12)


def test_a_task_folder_in_batch_mode(tmp_path):
    from tests.batch.support import in_process

    interactive, batch = in_process(), in_process()
    out_i = anyio.run(
        lambda: generate(
            config(tmp_path / "i.duckdb", base_url="http://sim/v1"), transport=interactive.transport
        )
    )
    out_b = anyio.run(
        lambda: generate(
            config(
                tmp_path / "b.duckdb", base_url="http://sim/v1", batch=BatchOptions(poll_seconds=0)
            ),
            transport=batch.transport,
        )
    )
    assert out_i.status == out_b.status == "done", out_b.message
    sql = "SELECT seed_key, pattern, extra_json FROM samples ORDER BY seed_key"
    assert query(tmp_path / "b.duckdb", sql) == query(tmp_path / "i.duckdb", sql)
    assert len(query(tmp_path / "b.duckdb", sql)) == N_SEEDS
    stats = batch.stats()
    # only the structured-output probe went to the chat endpoint (llm/probe.py)
    assert stats["requests"] == 1
    assert spent_usd(tmp_path / "b.duckdb") == pytest.approx(stats["billed_usd"], abs=1e-12)


def test_a_task_folder_through_a_fleet(simulator, tmp_path):
    a, b = simulator(), simulator()
    fleet = (Endpoint(url=a.base_url, api_key="k"), Endpoint(url=b.base_url, api_key="k"))
    out = anyio.run(lambda: generate(config(tmp_path / "h.duckdb", endpoints=fleet)))
    assert out.status == "done", out.message
    assert len(query(tmp_path / "h.duckdb", "SELECT * FROM samples")) == N_SEEDS
    billed = a.stats()["billed_usd"] + b.stats()["billed_usd"]
    assert spent_usd(tmp_path / "h.duckdb") == pytest.approx(billed, abs=1e-12)


_HOLDER = textwrap.dedent(
    """
    import sys
    from halugen.store.db import open_store
    store = open_store(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.read()
    store.close()
    """
)


def test_live_sql_and_export_of_a_held_store(simulator, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    assert anyio.run(lambda: generate(config(db, base_url=sim.base_url))).status == "done"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "COLUMNS": "300"}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        sql = "SELECT json_extract_string(extra_json, '$.term') AS term FROM samples ORDER BY 1"
        done = subprocess.run(
            [sys.executable, "-m", "halugen", "sql", sql, "--db", str(db), "--format", "csv"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert (
            done.stdout.splitlines()[0] == "term" and len(done.stdout.splitlines()) == 1 + N_SEEDS
        )
        out = tmp_path / "live.jsonl"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "halugen",
                "export",
                "--format",
                "jsonl",
                "--out",
                str(out),
                "--db",
                str(db),
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        first = orjson.loads(out.read_bytes().splitlines()[0])
        assert set(FIELDS) <= set(first)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)
