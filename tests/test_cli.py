"""The command line: estimate, status, sql, init + halugen.toml, demo, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from halugen.cli import main


def test_estimate_counts_seeds_calls_and_cost(hotpot_file, capsys):
    code = main(["estimate", "--seeds", str(hotpot_file(7)), "--model", "gpt-4o-mini"])
    assert code == 0
    out = capsys.readouterr().out
    assert "qa" in out and " 7 " in out and " 21 " in out  # 7 seeds, 3 calls each at most
    assert "$" in out


def test_estimate_with_limit_and_bad_records(tmp_path, capsys):
    seeds = tmp_path / "s.jsonl"
    seeds.write_text('{"knowledge":"k","question":"q?","right_answer":"a"}\nnot json\n' * 3)
    assert main(["estimate", "--seeds", str(seeds), "--limit", "2"]) == 0
    assert " 2 " in capsys.readouterr().out


def test_status_and_sql_after_a_run(simulator, hotpot_file, tmp_path, capsys):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    assert (
        main(
            [
                "run",
                "--seeds",
                str(hotpot_file(4)),
                "--base-url",
                sim.base_url,
                "--api-key",
                "k",
                "--model",
                "gpt-4o-mini",
                "--db",
                str(db),
                "--no-progress",
                "--budget",
                "1usd",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["status", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "done" in out and "sample" in out and "filter" in out
    assert (
        main(
            [
                "sql",
                "SELECT stage, count(*) AS n FROM calls GROUP BY stage ORDER BY stage",
                "--db",
                str(db),
                "--format",
                "csv",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "stage,n" and lines[-1].startswith("sample,")
    assert (
        main(["sql", "SELECT count(*) AS n FROM samples", "--db", str(db), "--format", "json"]) == 0
    )
    assert orjson.loads(capsys.readouterr().out) == [{"n": 4}]
    assert main(["sql", "SELEC nonsense", "--db", str(db)]) == 2
    assert "SQL error" in capsys.readouterr().err
    # the store is opened read-only: users cannot damage it from `sql`
    assert main(["sql", "DELETE FROM sample_rows", "--db", str(db)]) == 2


def test_init_writes_settings_that_run_reads(simulator, hotpot_file, tmp_path, monkeypatch, capsys):
    sim = simulator()
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert main(["init"]) == 2  # never overwrites without --force
    seeds = hotpot_file(3)
    text = (tmp_path / "halugen.toml").read_text()
    text = text.replace('seeds = ["hotpot_train_v1.1.json"]', f'seeds = ["{seeds}"]')
    text = text.replace('# base_url = "https://api.openai.com/v1"', f'base_url = "{sim.base_url}"')
    (tmp_path / "halugen.toml").write_text(text)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert main(["run", "--budget", "1usd", "--no-progress"]) == 0
    assert (tmp_path / "halugen.duckdb").exists()
    capsys.readouterr()
    (tmp_path / "halugen.toml").write_text('[run]\nbudgett = "5usd"\n')
    assert main(["run", "--no-progress"]) == 2
    assert "unknown key 'budgett'" in capsys.readouterr().err


def test_missing_seed_file_is_a_one_line_usage_error(tmp_path, capsys):
    assert main(["run", "--seeds", str(tmp_path / "nope.json"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "Traceback" not in err


def test_corrupt_store_is_reported_not_a_traceback(hotpot_file, tmp_path, capsys):
    db = tmp_path / "bad.duckdb"
    db.write_bytes(b"garbage" * 1000)
    assert main(["run", "--seeds", str(hotpot_file(2)), "--db", str(db), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "bad.duckdb" in err and "Traceback" not in err


@pytest.mark.timeout(120)
def test_demo_runs_end_to_end(tmp_path, capsys):
    db = tmp_path / "demo.duckdb"
    assert main(["demo", "--db", str(db), "--no-progress", "--latency-ms", "5"]) == 0
    out = capsys.readouterr().out
    assert "done" in out and "hallucinated_answer" in out and "Cost by stage" in out


def test_ctrl_c_stops_cleanly_and_the_run_resumes(simulator, hotpot_file, tmp_path):
    sim = simulator(latency_ms=50)
    db = tmp_path / "h.duckdb"
    cmd = [
        sys.executable,
        "-m",
        "halugen",
        "run",
        "--seeds",
        str(hotpot_file(300)),
        "--base-url",
        sim.base_url,
        "--api-key",
        "k",
        "--model",
        "gpt-4o-mini",
        "--db",
        str(db),
        "--no-progress",
        "--concurrency",
        "8",
        "--budget",
        "1usd",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while sim.stats(keys=False)["ok"] < 20:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "same command" in err
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    import duckdb

    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute(
            "SELECT count(*), count(DISTINCT seed_key) FROM sample_rows"
        ).fetchone() == (300, 300)
        # a graceful stop leaves no reservation open: nothing had to be counted as lost
        assert conn.execute("SELECT count(*) FROM ledger WHERE event = 'lost'").fetchone()[0] == 0
