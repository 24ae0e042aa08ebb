"""Seed paths as a run sees them: stored relative to where it started, damaged files read up to
the damage, links that lead nowhere named for what they are."""

from __future__ import annotations

import json

import orjson
import pytest

from halugen.cli import main
from tests.conftest import hotpot_record
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
    assert str(tmp_path) not in (tmp_path / "s.jsonl.README.md").read_text()


def _args(sim, seeds, db, *extra: str) -> list[str]:
    return ["run", "--seeds", str(seeds), "--base-url", sim.base_url, "--api-key", "k",
            "--model", "gpt-4o-mini", "--db", str(db), "--no-progress", *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda whole: whole[:-25], "the JSON array is cut short"),  # inside the sixth record
        (lambda whole: whole + b"\n garbage", "bytes after the end of the JSON array"),
    ],
    ids=["cut-short", "bytes-after-the-end"],
)
def test_records_before_damage_in_a_json_array_are_read(simulator, tmp_path, capsys, damage, says):
    sim = simulator()
    records = [hotpot_record(i) for i in range(6)]
    whole = orjson.dumps(records)
    seeds = tmp_path / "hotpot.json"
    seeds.write_bytes(damage(whole))
    good = 5 if seeds.stat().st_size < len(whole) else 6
    db = tmp_path / "h.duckdb"
    code = main(_args(sim, seeds, db))
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err and str(seeds) in err and "Traceback" not in err
    assert f"{good} record(s)" in err  # how many were read, as the run did
    assert query(db, "SELECT count(*) FROM samples") == [(good,)]
    assert {r[0] for r in query(db, "SELECT seed_id FROM samples")} == {
        r["_id"] for r in records[:good]
    }


def test_a_seed_symlink_loop_is_named_with_exit_2(simulator, tmp_path, capsys):
    sim = simulator()
    loop = tmp_path / "seeds.json"
    loop.symlink_to(loop)
    assert main(_args(sim, loop, tmp_path / "h.duckdb")) == 2
    err = capsys.readouterr().err
    assert "symbolic link that loops" in err and "not found" not in err
    assert sim.stats(keys=False)["requests"] == 0


def test_a_seed_file_changed_under_its_path_is_refused_on_resume_unless_fresh(
    simulator, hotpot_file, tmp_path, capsys
):
    sim = simulator()
    seeds = hotpot_file(3)
    db = tmp_path / "h.duckdb"
    assert main(_args(sim, seeds, db)) == 0
    (first_run,) = query(db, "SELECT run_id FROM runs")[0]
    recorded = query(db, "SELECT path, size, sha256 FROM seed_files")
    assert [(p, s) for p, s, _ in recorded] == [(str(seeds), seeds.stat().st_size)]
    assert main(_args(sim, seeds, db)) == 0  # unchanged: resumes, nothing to do
    capsys.readouterr()
    before = sim.stats(keys=False)["requests"]
    # the same size, another text: only the hash tells
    seeds.write_bytes(seeds.read_bytes().replace(b"Serin0", b"Serin9", 1))
    assert main(_args(sim, seeds, db)) == 2
    err = capsys.readouterr().err
    assert f"seed file {seeds} changed since run {first_run} read it (same size" in err
    assert "--fresh" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert sim.stats(keys=False)["requests"] == before  # refused before any call
    # a changed file never starts a new run on its own; --fresh does
    assert query(db, "SELECT count(*) FROM runs") == [(1,)]
    assert main(_args(sim, seeds, db, "--fresh")) == 0
    runs = query(db, "SELECT run_id FROM runs ORDER BY created_at")
    assert len(runs) == 2
    (new_size,) = query(db, f"SELECT size FROM seed_files WHERE run_id = '{runs[1][0]}'")[0]
    assert new_size == seeds.stat().st_size


def test_a_file_added_to_a_seed_pattern_is_refused_on_resume(
    simulator, tmp_path, capsys, monkeypatch
):
    sim = simulator()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_bytes(orjson.dumps([hotpot_record(0)]))
    db = tmp_path / "h.duckdb"
    assert main(_args(sim, "*.json", db)) == 0
    capsys.readouterr()
    (tmp_path / "b.json").write_bytes(orjson.dumps([hotpot_record(1)]))
    assert main(_args(sim, "*.json", db)) == 2
    err = capsys.readouterr().err
    assert "seed file b.json is not among the files run" in err and "--fresh" in err


def _hub_folder(tmp_path, n: int, *, empty_answer_at: int | None = None):
    """A Hub-style Parquet folder (data/train-0000k-of-00002.parquet) with nested columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for i in range(n):
        rec = hotpot_record(i)
        rows.append(
            {
                "id": rec["_id"],
                "query": rec["question"],
                "answer": "" if i == empty_answer_at else rec["answer"],
                "context": {
                    "title": [t for t, _ in rec["context"]],
                    "sentences": [s for _, s in rec["context"]],
                },
            }
        )
    data = tmp_path / "hub" / "data"
    data.mkdir(parents=True)
    half = n // 2
    for k, part in enumerate((rows[:half], rows[half:])):
        pq.write_table(pa.Table.from_pylist(part), data / f"train-{k:05d}-of-00002.parquet")
    return tmp_path / "hub"


MAPS = ("--map", "question=query", "--map", "right_answer=answer",
        "--map", "knowledge=context.sentences", "--map", "id=id")  # fmt: skip


def test_run_from_a_parquet_folder_with_map(simulator, tmp_path, capsys):
    sim = simulator()
    hub = _hub_folder(tmp_path, 6, empty_answer_at=4)
    db = tmp_path / "h.duckdb"
    code = main(_args(sim, hub, db, *MAPS))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = query(db, "SELECT seed_id, question, right_answer, knowledge FROM samples ORDER BY 1")
    assert [r[0] for r in rows] == ["rec00000", "rec00001", "rec00002", "rec00003", "rec00005"]
    record = hotpot_record(0)
    assert rows[0][1:3] == (record["question"], record["answer"])
    assert rows[0][3].startswith("Aldo Brun0 was a painter born in Vallona0 in 1800.")
    assert "He worked mostly in Lisbon. Vallona0 is a small town" in rows[0][3]
    assert query(db, "SELECT source_file, source_line, reason FROM bad_records") == [
        (str(hub / "data" / "train-00001-of-00002.parquet"), 2, "column answer is empty")
    ]
    (config_json,) = query(db, "SELECT config_json FROM runs")[0]
    assert json.loads(config_json)["seed_map"] == {
        "id": "id",
        "knowledge": "context.sentences",
        "question": "query",
        "right_answer": "answer",
    }
    # the same mapping from halugen.toml is the same run; the flag wins for its field
    settings = tmp_path / "halugen.toml"
    settings.write_text(
        '[run]\nmap = { question = "query", right_answer = "answer", id = "id", '
        'knowledge = "context.title" }\n'
    )
    before = sim.stats(keys=False)["requests"]
    code = main(
        _args(sim, hub, db, "--config", str(settings), "--map", "knowledge=context.sentences")
    )
    assert code == 0, capsys.readouterr().err
    assert query(db, "SELECT count(*) FROM runs") == [(1,)]
    assert sim.stats(keys=False)["requests"] == before


def test_a_mapped_column_no_record_has_exits_2_before_any_call(simulator, tmp_path, capsys):
    sim = simulator()
    hub = _hub_folder(tmp_path, 2)
    maps = [m.replace("question=query", "question=qeury") for m in MAPS]
    assert main(_args(sim, hub, tmp_path / "h.duckdb", *maps)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --map question=qeury: ")
    assert "has no column qeury (its columns are: id, query, answer, context)" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert sim.stats(keys=False)["requests"] == 0


def test_estimate_reads_a_table_with_map(tmp_path, capsys):
    hub = _hub_folder(tmp_path, 4)
    code = main(["estimate", "--seeds", str(hub), "--model", "gpt-4o-mini", *MAPS,
                 "--db", str(tmp_path / "h.duckdb")])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "qa" in out and " 4 " in out
