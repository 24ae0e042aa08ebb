"""Seed paths are stored relative to where the run was started, not as absolute paths."""

from __future__ import annotations

import json

from halugen.cli import main
from tests.e2e.test_generate import config, query, run


def test_absolute_seed_paths_are_stored_relative(simulator, hotpot_file, tmp_path, monkeypatch):
    sim = simulator()
    seeds = hotpot_file(3)  # an absolute path under tmp_path
    assert seeds.is_absolute()
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "h.duckdb"
    assert run(config(sim.base_url, seeds, db)).exit_code == 0
    expected = str(seeds.relative_to(tmp_path))
    assert {r[0] for r in query(db, "SELECT DISTINCT source_file FROM seeds")} == {expected}
    assert {r[0] for r in query(db, "SELECT DISTINCT source_file FROM samples")} == {expected}
    out = tmp_path / "s.jsonl"
    assert main(["export", "--format", "jsonl", "--db", str(db), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["source_file"] for r in rows} == {expected}
    assert str(tmp_path) not in (tmp_path / "s.README.md").read_text()
