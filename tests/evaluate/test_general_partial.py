"""``eval --task general`` from the store and items with fewer labels than ``--per-item``:
refused with one line unless ``--allow-partial`` takes them, then counted in the output."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from halugen.cli import main
from halugen.store.db import open_store
from tests.export.stores import insert


def labelled_store(path: Path) -> Path:
    """g0 (yes) and g1 (no) with three labels each, g2 with one label, g3 with two."""
    store = open_store(path)
    votes = {"g0": "yyy", "g1": "nnn", "g2": "y", "g3": "nn"}
    for item, labels in votes.items():
        insert(
            store,
            "annotation_items",
            {"item_id": item, "source": "jsonl", "query": f"Q {item}?", "response": f"R {item}"},
        )
        for annotator, label in zip("abc", labels, strict=False):
            insert(
                store,
                "annotations",
                {
                    "item_id": item,
                    "annotator": annotator,
                    "label": "yes" if label == "y" else "no",
                    "spans_json": "[]",
                    "source": "web",
                },
            )
    store.close()
    return path


def judged(db: Path) -> list[tuple[str, bool]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT item_id, truth FROM judgements ORDER BY item_id").fetchall()


def eval_runs(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM runs WHERE kind = 'eval'").fetchone()
    assert row is not None
    return int(row[0])


def eval_args(base_url: str, db: Path, *extra: str) -> list[str]:
    """``eval --task general`` of the store ``db`` against the simulator at ``base_url``."""
    endpoint = {"--base-url": base_url, "--api-key": "k", "--db": str(db)}
    flags = [x for kv in endpoint.items() for x in kv]
    return ["eval", "--task", "general", *flags, "--no-progress", *extra]


def test_partly_labelled_items_are_refused_before_a_run(simulator, tmp_path, capsys):
    sim = simulator()
    db = labelled_store(tmp_path / "g.duckdb")
    assert main(eval_args(sim.base_url, db)) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "2 annotated item(s) have fewer than 3 labels" in lines[0]
    assert "--allow-partial" in lines[0] and "--per-item" in lines[0]
    assert eval_runs(db) == 0  # refused before a run was opened
    assert sim.stats(keys=False)["requests"] == 0


def test_a_lower_per_item_admits_them_as_labelled(simulator, tmp_path, capsys):
    sim = simulator()
    db = labelled_store(tmp_path / "g.duckdb")
    # g3 has two labels: with --per-item 2 only g2 is partial, still refused
    assert main(eval_args(sim.base_url, db, "--per-item", "2")) == 2
    assert "1 annotated item(s) have fewer than 2 labels" in capsys.readouterr().err
    assert main(eval_args(sim.base_url, db, "--per-item", "1")) == 0
    assert [item for item, _ in judged(db)] == ["g0", "g1", "g2", "g3"]
    assert "--allow-partial" not in capsys.readouterr().err


def test_allow_partial_judges_them_and_says_how_many(simulator, tmp_path, capsys):
    sim = simulator()
    db = labelled_store(tmp_path / "g.duckdb")
    assert main(eval_args(sim.base_url, db, "--allow-partial")) == 0
    assert judged(db) == [("g0", True), ("g1", False), ("g2", True), ("g3", False)]
    err = capsys.readouterr().err
    assert "took 2 item(s) with fewer than 3 labels (--allow-partial)" in err


def test_fully_labelled_items_need_no_flag(simulator, tmp_path, capsys):
    sim = simulator()
    db = tmp_path / "g.duckdb"
    labelled_store(db)
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM annotations WHERE item_id IN ('g2', 'g3')")
    assert main(eval_args(sim.base_url, db)) == 0
    assert judged(db) == [("g0", True), ("g1", False)]
    assert "fewer than" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra",
    [
        ("--task", "qa", "--allow-partial"),
        ("--data", "general_data.json", "--per-item", "2"),
    ],
)
def test_the_flags_apply_only_to_the_general_task_from_the_store(tmp_path, capsys, extra):
    args = ["eval", "--task", "general", "--base-url", "http://127.0.0.1:9", "--api-key", "k"]
    args += ["--db", str(tmp_path / "g.duckdb"), *extra]
    assert main(args) == 2
    assert "apply to 'eval --task general' without --data" in capsys.readouterr().err
