"""The hard split: ``audit --balance`` of a generation run records which samples it kept,
and ``export`` writes them beside the full set as split ``hard`` of the task's config."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from halugen.cli import main
from halugen.intervals import size_line
from tests.e2e.test_generate import config, run

# the measures that need no optional extra, and no probes: the split is what is tested
_BALANCE = ["--balance", "--min-items", "1", "--measures", "length_only,overlap",
            "--probes", "none"]  # fmt: skip


def _generated(simulator, hotpot_file, tmp_path: Path) -> tuple[Path, str]:
    sim = simulator()
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(60, more_names=True), db))
    assert outcome.exit_code == 0
    return db, outcome.run_id


def _recorded(db: Path) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute("SELECT seed_key FROM hard_split_rows ORDER BY seed_key").fetchall()
    return [r[0] for r in rows]


def _samples(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as conn:
        row = conn.execute("SELECT count(*) FROM samples").fetchone()
    assert row is not None
    return int(row[0])


def _header(card: Path) -> str:
    text = card.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return text.split("\n---\n", 1)[0]


def test_a_balanced_run_exports_its_hard_split_beside_the_full_set(
    simulator, hotpot_file, tmp_path, capsys
) -> None:
    db, run_id = _generated(simulator, hotpot_file, tmp_path)
    audit = ["audit", "--db", str(db), "--run", run_id, "--task", "qa", *_BALANCE]
    assert main(audit) == 0
    assert "hard split of qa recorded" in capsys.readouterr().err
    recorded = _recorded(db)
    total = _samples(db)
    assert 0 < len(recorded) <= total
    # balanced again: the new record replaces the old one, never adds to it
    assert main(audit) == 0
    assert _recorded(db) == recorded

    out = tmp_path / "pq"
    assert main(["export", "--format", "parquet", "--db", str(db), "--out", f"{out}/"]) == 0
    full = pq.read_table(out / "qa.parquet").to_pylist()
    hard = pq.read_table(out / "qa.hard.parquet").to_pylist()
    assert len(full) == total  # the full set stays whole: the default split
    assert sorted(r["seed_key"] for r in hard) == recorded
    assert set(hard[0]) == set(full[0])  # the same columns in both splits
    meta = pq.read_metadata(out / "qa.hard.parquet").metadata
    assert meta[b"halugen_split"] == b"hard"

    card = (out / "README.md").read_text(encoding="utf-8")
    header = _header(out / "README.md")
    assert (
        '- config_name: "qa"\n  data_files:\n  - split: test\n    path: "qa.parquet"\n'
        '  - split: hard\n    path: "qa.hard.parquet"'
    ) in header
    assert "  - name: hard\n" in header and f"    num_examples: {len(recorded)}\n" in header
    assert f"    num_examples: {total}\n" in header
    assert "split `hard` (`qa.hard.parquet`)" in card
    assert f"| qa | hard | qa.hard.parquet | {len(recorded):,} | {run_id} |" in card
    assert size_line(len(recorded)) in card  # n, the interval, what it can and cannot show
    assert f"n={len(recorded)}: a 95% interval of ±" in card

    jsonl = tmp_path / "jl"
    assert main(["export", "--format", "jsonl", "--db", str(db), "--out", f"{jsonl}/"]) == 0
    lines = (jsonl / "qa.hard.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["seed_key"] for line in lines) == recorded
    assert len((jsonl / "qa.jsonl").read_text(encoding="utf-8").splitlines()) == total
    assert '  - split: hard\n    path: "qa.hard.jsonl"' in _header(jsonl / "README.md")


def test_a_balanced_file_records_no_hard_split_in_the_store(tmp_path, capsys) -> None:
    from tests.audit import fixtures

    path = fixtures.write(tmp_path / "qa_data.json", fixtures.balanceable(60))
    db = tmp_path / "s.duckdb"
    assert main(["audit", "--data", str(path), "--db", str(db), *_BALANCE]) == 0
    assert "hard split of" not in capsys.readouterr().err
    assert _recorded(db) == []


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_without_a_balance_there_is_no_hard_split_and_the_card_says_so(
    simulator, hotpot_file, tmp_path, fmt
) -> None:
    db, _ = _generated(simulator, hotpot_file, tmp_path)
    out = tmp_path / "out"
    assert main(["export", "--format", fmt, "--db", str(db), "--out", f"{out}/"]) == 0
    assert (out / f"qa.{fmt}").exists()
    assert not (out / f"qa.hard.{fmt}").exists()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "split: hard" not in _header(out / "README.md")
    assert "`qa`: no hard split" in card
