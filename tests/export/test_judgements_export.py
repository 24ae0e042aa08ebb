"""Per-item eval results as JSONL, CSV and Parquet; one eval run per (task, model, strategy)."""

from __future__ import annotations

import csv
import json
from datetime import timedelta

import duckdb
import pyarrow.parquet as pq
import pytest

from halugen.cli import main
from halugen.export import JUDGEMENT_COLUMNS
from halugen.store.db import open_store
from tests.export.stores import T0, TRICKY, add_judgement, add_run, add_sample


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "j.duckdb"
    store = open_store(path)
    add_run(store, "gen")
    fields = [add_sample(store, "gen", "qa", i) for i in range(3)]
    add_run(store, "ev-old", kind="eval", started=T0)
    add_run(store, "ev-new", kind="eval", started=T0 + timedelta(hours=1))
    add_run(store, "ev-cot", kind="eval", started=T0 + timedelta(hours=2))
    for f in fields:
        add_judgement(store, "ev-old", "qa", f, shown="right", verdict="yes")
        add_judgement(store, "ev-new", "qa", f, shown="hallucinated", verdict="yes", raw=TRICKY)
        add_judgement(store, "ev-cot", "qa", f, shown="right", verdict="no", strategy="cot")
    # a resumed run wrote one item twice: the later row counts
    add_judgement(
        store,
        "ev-new",
        "qa",
        fields[0],
        shown="hallucinated",
        verdict="no",
        at=T0 + timedelta(hours=3),
    )
    store.close()
    return path


def test_jsonl_has_every_column_and_one_run_per_model_and_strategy(db, tmp_path, capsys):
    out = tmp_path / "j.jsonl"
    assert (
        main(
            [
                "export",
                "--what",
                "judgements",
                "--format",
                "jsonl",
                "--db",
                str(db),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert list(rows[0]) == list(JUDGEMENT_COLUMNS)
    assert {(r["run_id"], r["strategy"]) for r in rows} == {("ev-new", "plain"), ("ev-cot", "cot")}
    assert len(rows) == 6  # 3 items x 2 runs kept; the duplicate counted once
    new = [r for r in rows if r["run_id"] == "ev-new"]
    assert sorted(r["verdict"] for r in new) == ["no", "yes", "yes"]
    assert all(r["truth"] is True and r["shown"] == "hallucinated" for r in new)
    assert sorted(r["correct"] for r in new) == [False, True, True]
    assert any(r["raw"] == TRICKY for r in new)
    err = capsys.readouterr().err
    assert "qa/gpt-4o-mini/plain/parse: run ev-new" in err and "left out: ev-old" in err


def test_csv_and_parquet(db, tmp_path):
    out = tmp_path / "j.csv"
    assert (
        main(
            [
                "export",
                "--what",
                "judgements",
                "--format",
                "csv",
                "--all-runs",
                "--db",
                str(db),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 9 and rows[0].keys() == set(JUDGEMENT_COLUMNS)
    pdir = tmp_path / "pq"
    assert (
        main(
            [
                "export",
                "--what",
                "judgements",
                "--format",
                "parquet",
                "--run",
                "ev-old",
                "--db",
                str(db),
                "--out",
                f"{pdir}/",
            ]
        )
        == 0
    )
    path = pdir / "judgements.parquet"
    assert pq.read_metadata(path).metadata[b"halugen_run_id"] == b"ev-old"
    n = duckdb.connect().execute(f"SELECT count(*) FROM '{path}'").fetchone()[0]
    assert n == 3


def test_judgements_have_no_halueval_layout(db, tmp_path):
    assert (
        main(["export", "--what", "judgements", "--db", str(db), "--out", str(tmp_path / "x")]) == 2
    )
