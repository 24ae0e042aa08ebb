"""Exports, the dataset card and the figures also work while another process holds the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]

# the holder: writes two runs of samples, judgements and ledger rows, then keeps the file
_HOLDER = textwrap.dedent(
    """
    import sys
    from datetime import timedelta
    from halugen.store.db import open_store
    from tests.export.stores import T0, add_judgement, add_run, add_sample, insert
    store = open_store(sys.argv[1])
    add_run(store, "old")
    add_run(store, "new", started=T0 + timedelta(hours=1))
    add_run(store, "ev", kind="eval")
    for i in range(3):
        add_sample(store, "old", "qa", i)
        fields = add_sample(store, "new", "qa", i)
        add_judgement(store, "ev", "qa", fields, shown="right", verdict="no")
    for call in range(3):
        for event in ("reserve", "settle"):
            insert(store, "ledger", {"call_id": call, "res_no": 0, "run_id": "new",
                                     "event": event, "pusd": 10**9, "stage": "sample",
                                     "task": "qa", "created_at": T0 + timedelta(seconds=call)})
    store.conn.execute("CHECKPOINT")
    print("ready", flush=True)
    sys.stdin.read()
    store.close()
    """
)


@pytest.fixture
def held(tmp_path):
    db = tmp_path / "held.duckdb"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout.readline().strip() == "ready"
    yield db
    proc.stdin.close()
    proc.wait(30)


def halugen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "halugen", *args], capture_output=True, text=True, env=env
    )


def test_exports_of_a_held_store(held, tmp_path):
    out = tmp_path / "pq"
    done = halugen("export", "--format", "parquet", "--db", str(held), "--out", f"{out}/")
    assert done.returncode == 0, done.stderr
    assert "qa: run new (3 samples), the newest of 2 runs" in done.stderr
    assert pq.read_metadata(out / "qa.parquet").metadata[b"halugen_run_id"] == b"new"
    card = (out / "README.md").read_text(encoding="utf-8")
    assert '    dtype: "int64"' in card and "num_examples: 3" in card

    judgements = tmp_path / "j.jsonl"
    done = halugen(
        "export",
        "--what",
        "judgements",
        "--format",
        "jsonl",
        "--db",
        str(held),
        "--out",
        str(judgements),
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in judgements.read_text().splitlines()]
    assert len(rows) == 3 and all(r["correct"] for r in rows)

    lm = tmp_path / "lm"
    done = halugen("export", "--format", "lm-eval", "--db", str(held), "--out", str(lm))
    assert done.returncode == 0, done.stderr
    assert len((lm / "qa.jsonl").read_text().splitlines()) == 6


def test_cost_figure_of_a_held_store(held, tmp_path):
    pytest.importorskip("matplotlib", reason="needs the topics extra")
    figure = tmp_path / "cost.svg"
    done = halugen(
        "status", "--db", str(held), "--run", "new", "--plot", str(figure), "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert "qa / sample: $0.0030" in figure.read_text(encoding="utf-8")
    assert json.loads(done.stdout)["runs"][0]["run_id"] in ("old", "new", "ev")
