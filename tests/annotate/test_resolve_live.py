"""``annotate resolve`` while ``annotate serve`` holds the store: the holder resolves.

DuckDB's file lock is per process, so the server runs in a process of its own here; the
protocol itself (an action offered by name, next to the read-only SQL route) is also
checked in one process, where the holder's socket answers from its own thread.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from halugen.annotate.items import Item, append_rows, insert_items
from halugen.annotate.resolve import (
    RESOLVE_ACTION,
    report_from_json,
    resolve_action,
)
from halugen.cli import main
from halugen.errors import StoreInUse, UsageError
from halugen.store.db import Store, open_store
from halugen.store.live import ask_holder, connect_live

ROOT = Path(__file__).resolve().parents[2]


def _labelled(store: Store) -> None:
    """Item full: 3 labels (2 yes); item half: 1 label."""
    insert_items(store, [Item(i, "jsonl", "q", f"response {i}") for i in ("full", "half")])
    votes = [("full", "a", "yes"), ("full", "b", "yes"), ("full", "c", "no"), ("half", "a", "no")]
    append_rows(
        store, "annotations", [(i, who, label, "[]", None, "web") for i, who, label in votes]
    )


def _resolved(db: Path, capsys) -> dict[str, int]:
    """item -> n_labels of its resolution, read through the holder (sql is read-only)."""
    capsys.readouterr()
    sql = "SELECT item_id, n_labels FROM annotation_resolved ORDER BY item_id"
    assert main(["sql", sql, "--db", str(db), "--format", "json"]) == 0
    return {r["item_id"]: r["n_labels"] for r in json.loads(capsys.readouterr().out)}


def test_the_holder_resolves_for_another_process_on_request(tmp_path):
    db = tmp_path / "s.duckdb"
    store = open_store(db)  # this process holds the file and answers on its socket
    resolver = Store(db, store.conn.cursor())
    try:
        _labelled(store)
        assert store.offer(RESOLVE_ACTION, resolve_action(resolver))
        result = ask_holder(db, RESOLVE_ACTION, {"per_item": 3, "allow_partial": False})
        report = report_from_json(orjson.loads(orjson.dumps(result)))  # as it travels
        assert (report.items, report.partial, report.resolved) == (2, 1, 1)
        assert report.raters_per_item == {1: 1, 3: 1}
        rows = store.query("SELECT item_id, label, n_labels FROM annotation_resolved")
        assert rows == [("full", "yes", 3)]
        # the asker's arguments are checked by the holder
        with pytest.raises(UsageError, match="--per-item must be at least 1"):
            ask_holder(db, RESOLVE_ACTION, {"per_item": 0})
        # an action the holder does not offer: the store is in use, say so
        with pytest.raises(StoreInUse, match=r"does not offer 'annotate\.drop'"):
            ask_holder(db, "annotate.drop", {})
        # the SQL route stays read-only beside it
        live = connect_live(db)
        assert live is not None
        with pytest.raises(UsageError, match="read-only"):
            live.execute("DELETE FROM annotation_resolutions")
        live.close()
        # withdrawn: asked again, the holder says it does not offer it
        store.offer(RESOLVE_ACTION, None)
        with pytest.raises(StoreInUse, match="offers none"):
            ask_holder(db, RESOLVE_ACTION, {})
    finally:
        resolver.conn.close()
        store.close()
    # nobody holds the file: nothing to ask
    assert ask_holder(db, RESOLVE_ACTION, {}) is None


@pytest.fixture
def served(tmp_path):
    """'annotate serve' in a process of its own, on a store with labels."""
    db = tmp_path / "served.duckdb"
    with open_store(db) as store:
        _labelled(store)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "halugen", "annotate", "serve", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("annotation page at "), (line, proc.stderr.read())
        yield db
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_annotate_resolve_while_serve_holds_the_store(served, capsys):
    db = served
    capsys.readouterr()
    assert main(["annotate", "resolve", "--db", str(db), "--format", "json"]) == 0
    out = capsys.readouterr()
    rows = {r["measure"]: r["value"] for r in json.loads(out.out)}
    assert rows["resolved by majority"] == 1 and rows["left out (fewer than 3 labels)"] == 1
    assert "resolved by the process that holds the store" in out.err
    assert "left out 1 item(s)" in out.err
    assert _resolved(db, capsys) == {"full": 3}
    argv = ["annotate", "resolve", "--db", str(db), "--allow-partial", "--format", "json"]
    assert main(argv) == 0
    assert _resolved(db, capsys) == {"full": 3, "half": 1}
    # the export only reads: it goes through the holder's read-only route
    out_file = db.parent / "general_data.json"
    argv = ["annotate", "export", "--format", "halueval", "--db", str(db), "-o", str(out_file)]
    assert main(argv) == 0
    assert [json.loads(x)["ID"] for x in out_file.read_text().splitlines()] == ["full"]
