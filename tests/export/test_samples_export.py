"""Sample exports: one run per task unless told otherwise, directories, UTF-8, metadata, card."""

from __future__ import annotations

import json

import duckdb
import pyarrow.parquet as pq
import pytest

from halugen import __version__
from halugen.cli import main
from tests.export.stores import TRICKY, two_runs_store


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "s.duckdb"
    two_runs_store(path).close()
    return path


def lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_default_takes_the_newest_run_per_task_and_says_so(db, tmp_path, capsys):
    out = tmp_path / "qa.jsonl"
    assert (
        main(["export", "--format", "jsonl", "--task", "qa", "--db", str(db), "--out", str(out)])
        == 0
    )
    rows = lines(out)
    assert len(rows) == 4  # not 8: the same seeds from two runs are not pooled
    assert {r["run_id"] for r in rows} == {"new"}
    err = capsys.readouterr().err
    assert "qa: run new (4 samples), the newest of 2 runs" in err
    assert "left out: old (4 samples)" in err and "--all-runs" in err


def test_run_and_all_runs(db, tmp_path, capsys):
    out = tmp_path / "a.jsonl"
    assert (
        main(
            [
                "export",
                "--format",
                "jsonl",
                "--task",
                "qa",
                "--run",
                "old",
                "--db",
                str(db),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert {r["run_id"] for r in lines(out)} == {"old"}
    assert (
        main(["export", "--format", "jsonl", "--all-runs", "--db", str(db), "--out", str(out)]) == 0
    )
    rows = lines(out)
    assert len(rows) == 4 + 4 + 3
    assert "all 2 runs" in capsys.readouterr().err
    assert main(["export", "--run", "old", "--all-runs", "--db", str(db)]) == 2
    assert main(["export", "--run", "nope", "--db", str(db)]) == 2


def test_halueval_export_pools_no_runs_and_writes_utf8(db, tmp_path):
    out = tmp_path / "qa_data.json"
    assert main(["export", "--task", "qa", "--db", str(db), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "\\u" not in text and "café ünïcode" in text and TRICKY in text
    rows = lines(out)
    assert len(rows) == 4 and len({r["question"] for r in rows}) == 4
    assert list(rows[0]) == ["knowledge", "question", "right_answer", "hallucinated_answer"]


def test_out_with_a_slash_is_a_directory_even_for_one_task(db, tmp_path):
    target = tmp_path / "hal"
    assert main(["export", "--task", "qa", "--db", str(db), "--out", f"{target}/"]) == 0
    assert target.is_dir() and sorted(p.name for p in target.iterdir()) == ["qa_data.json"]
    pq_dir = tmp_path / "pq"
    assert (
        main(
            [
                "export",
                "--format",
                "parquet",
                "--task",
                "qa",
                "--db",
                str(db),
                "--out",
                f"{pq_dir}/",
            ]
        )
        == 0
    )
    assert sorted(p.name for p in pq_dir.iterdir()) == ["README.md", "qa.parquet"]
    # several tasks into one file is refused for HaluEval's layout
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "x.json")]) == 2


def test_parquet_carries_version_and_run_in_its_metadata(db, tmp_path):
    out = tmp_path / "d"
    assert main(["export", "--format", "parquet", "--db", str(db), "--out", f"{out}/"]) == 0
    qa = pq.read_metadata(out / "qa.parquet").metadata
    assert qa[b"halugen_version"] == __version__.encode()
    assert qa[b"halugen_run_id"] == b"new"
    assert qa[b"halugen_task"] == b"qa"
    assert pq.read_metadata(out / "dialogue.parquet").metadata[b"halugen_run_id"] == b"new"
    n = duckdb.connect().execute(f"SELECT count(*) FROM '{out}/qa.parquet'").fetchone()[0]
    assert n == 4


def test_csv_export(db, tmp_path):
    out = tmp_path / "s.csv"
    assert (
        main(
            ["export", "--format", "csv", "--task", "dialogue", "--db", str(db), "--out", str(out)]
        )
        == 0
    )
    header = out.read_text(encoding="utf-8").splitlines()[0]
    assert "hallucinated_response" in header and "run_model" in header


def test_nothing_to_export_is_an_error(db, tmp_path, capsys):
    assert (
        main(
            [
                "export",
                "--format",
                "jsonl",
                "--where",
                "task = 'none'",
                "--db",
                str(db),
                "--out",
                str(tmp_path / "n.jsonl"),
            ]
        )
        == 1
    )
    assert "no samples match" in capsys.readouterr().err
    assert not (tmp_path / "n.jsonl").exists()


def _front_matter(text: str) -> dict:
    yaml = pytest.importorskip("yaml")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_dataset_card_has_the_hub_header_and_the_figures(db, tmp_path):
    out = tmp_path / "card"
    assert main(["export", "--format", "parquet", "--db", str(db), "--out", f"{out}/"]) == 0
    text = (out / "README.md").read_text(encoding="utf-8")
    meta = _front_matter(text)
    assert sorted(meta["license"]) == ["cc-by-nc-4.0", "cc-by-sa-4.0"]  # HotpotQA, OpenDialKG
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert configs["qa"]["data_files"] == [{"split": "test", "path": "qa.parquet"}]
    info = {c["config_name"]: c for c in meta["dataset_info"]}
    features = {f["name"]: f["dtype"] for f in info["qa"]["features"]}
    assert features["hallucinated_answer"] == "string"
    assert features["source_line"] == "int64" and features["length_ratio"] == "float64"
    (split,) = info["qa"]["splits"]
    assert (split["name"], split["num_examples"]) == ("test", 4)
    assert info["dialogue"]["splits"][0]["num_examples"] == 3
    # the sizes the Hub's loader reads (a split without num_bytes is ignored with a warning)
    for name in ("qa", "dialogue"):
        config = info[name]
        (split,) = config["splits"]
        assert isinstance(split["num_bytes"], int) and split["num_bytes"] > 0
        assert config["dataset_size"] == split["num_bytes"]
        assert config["download_size"] == (out / f"{name}.parquet").stat().st_size
    # every seed dataset, OpenDialKG (not on the Hub) included
    assert meta["source_datasets"] == ["extended|other-opendialkg", "hotpotqa/hotpot_qa"]
    # the Fields table describes every config's columns, saying which config has which
    fields = {
        line.split(" | ")[0].strip("| "): line.split(" | ")[2]
        for line in text.split("## Fields", 1)[1].split("##", 1)[0].splitlines()
        if line.startswith("| ") and " | " in line
    }
    assert fields["right_response"] == "dialogue" and fields["hallucinated_answer"] == "qa"
    assert fields["run_id"] == "all"
    assert meta["size_categories"] == ["n<1K"]
    # the body: runs, licences, baselines; no absolute path of the user's machine
    assert "run `new`" in text and "HotpotQA" in text
    assert "length only" in text and "| qa | 8 | 50.0% | 50.0% |" in text
    assert "/home/someone" not in text


def test_card_beside_a_single_file_and_no_card(db, tmp_path):
    out = tmp_path / "all.jsonl"
    assert main(["export", "--format", "jsonl", "--db", str(db), "--out", str(out)]) == 0
    card = tmp_path / "all.jsonl.README.md"
    meta = _front_matter(card.read_text(encoding="utf-8"))
    assert meta["configs"] == [
        {"config_name": "default", "data_files": [{"split": "test", "path": "all.jsonl"}]}
    ]
    other = tmp_path / "other.jsonl"
    assert (
        main(["export", "--format", "jsonl", "--no-card", "--db", str(db), "--out", str(other)])
        == 0
    )
    assert not (tmp_path / "other.jsonl.README.md").exists()


def test_two_exports_of_one_stem_keep_their_own_cards(db, tmp_path):
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"out.{fmt}"
        assert main(["export", "--format", fmt, "--db", str(db), "--out", str(out)]) == 0
    for fmt in ("csv", "jsonl"):
        meta = _front_matter((tmp_path / f"out.{fmt}.README.md").read_text(encoding="utf-8"))
        paths = [f["path"] for c in meta["configs"] for f in c["data_files"]]
        assert paths == [f"out.{fmt}"]
    assert not (tmp_path / "out.README.md").exists()


def test_a_directory_holding_another_format_keeps_its_card(db, tmp_path):
    out = tmp_path / "data"
    assert main(["export", "--format", "csv", "--db", str(db), "--out", f"{out}/"]) == 0
    csv_card = (out / "README.md").read_text(encoding="utf-8")
    assert main(["export", "--format", "jsonl", "--db", str(db), "--out", f"{out}/"]) == 0
    assert (out / "README.md").read_text(encoding="utf-8") == csv_card
    meta = _front_matter((out / "README.jsonl.md").read_text(encoding="utf-8"))
    paths = {f["path"] for c in meta["configs"] for f in c["data_files"]}
    assert paths and all(p.endswith(".jsonl") for p in paths)


def test_exported_rows_hold_the_seed_file_name_only(db, tmp_path):
    # stored as the run named them; an export carries no directory of anyone's machine
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE sample_rows SET source_file = CASE WHEN task = 'qa' "
        "THEN '../../../data/hotpotqa/hotpot_dev.json' ELSE 'C:\\data\\odkg\\dialogs.csv' END"
    )
    con.execute(
        "INSERT INTO seed_files VALUES ('new', '../../../data/hotpotqa/hotpot_dev.json', 1234, "
        "'ab' || repeat('0', 62), TIMESTAMP '2024-01-01 00:00:00')"
    )
    con.close()
    out = tmp_path / "clean"
    for fmt in ("parquet", "jsonl", "csv"):
        assert main(["export", "--format", fmt, "--db", str(db), "--out", f"{out}-{fmt}/"]) == 0
    names = {r["source_file"] for r in lines(tmp_path / "clean-jsonl" / "qa.jsonl")}
    names |= {r["source_file"] for r in lines(tmp_path / "clean-jsonl" / "dialogue.jsonl")}
    assert names == {"hotpot_dev.json", "dialogs.csv"}
    table = pq.read_table(tmp_path / "clean-parquet" / "qa.parquet")
    assert set(table.column("source_file").to_pylist()) == {"hotpot_dev.json"}
    csv_text = (tmp_path / "clean-csv" / "qa.csv").read_text(encoding="utf-8")
    assert "hotpot_dev.json" in csv_text and "../" not in csv_text
    card = (tmp_path / "clean-parquet" / "README.md").read_text(encoding="utf-8")
    assert "../" not in card and "C:\\" not in card
    # the file's hash travels with its name, for provenance
    assert f"`hotpot_dev.json` (1,234 bytes, sha256 `ab{'0' * 62}`)" in card
    # the store keeps the path as the run named it
    con = duckdb.connect(str(db), read_only=True)
    stored = con.execute(
        "SELECT DISTINCT source_file FROM sample_rows WHERE task = 'qa'"
    ).fetchall()
    assert stored == [("../../../data/hotpotqa/hotpot_dev.json",)]
    con.close()
