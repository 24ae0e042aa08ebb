"""Text from data or a provider is never read as Rich markup or emoji codes, anywhere."""

from __future__ import annotations

import pytest

from halugen.cli import main
from halugen.store.db import open_store
from tests.export.stores import TRICKY, add_judgement, add_run, add_sample

MARKS = ("[/]", "[bold]x[/bold]", ":ID:")


def literal(text: str) -> bool:
    return all(m in text for m in MARKS) and "🆔" not in text


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "m.duckdb"
    store = open_store(path)
    add_run(store, "gen", model=TRICKY)
    fields = [add_sample(store, "gen", "qa", i, text=TRICKY) for i in range(4)]
    add_run(store, "ev", kind="eval", model=TRICKY)
    for f in fields:
        add_judgement(
            store, "ev", "qa", f, shown="hallucinated", verdict="yes", model=TRICKY, raw=TRICKY
        )
    store.close()
    return path


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json", "latex", "jsonl"])
def test_sql_prints_cells_as_they_are(db, fmt, capsys):
    query = "SELECT '[/]' AS a, '[bold]x[/bold]' AS b, ':ID:' AS c, raw FROM judgements LIMIT 1"
    assert main(["sql", query, "--db", str(db), "--format", fmt]) == 0
    assert literal(capsys.readouterr().out)


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex"])
def test_report_and_status(db, fmt, capsys):
    assert main(["report", "--db", str(db), "--format", fmt]) == 0
    assert literal(capsys.readouterr().out)
    assert main(["status", "--db", str(db), "--format", fmt]) == 0
    assert literal(capsys.readouterr().out)


def test_error_messages(db, capsys):
    assert main(["export", "--run", TRICKY, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert literal(err) and err.startswith("error: no run")
    assert main(["sql", "SELECT * FROM [/] :ID:", "--db", str(db)]) == 2
    assert "🆔" not in capsys.readouterr().err


def test_annotate_import_skips(tmp_path, capsys):
    import json

    bad = tmp_path / "labels.jsonl"
    good = {
        "item_id": "i1",
        "query": "q",
        "response": "r",
        "annotator": "a",
        "label": "no",
        "spans": [],
    }
    record = {"item_id": TRICKY, "annotator": "a", "label": "yes", "spans": []}
    bad.write_text(json.dumps(good) + "\n" + json.dumps(record) + "\n")
    db = tmp_path / "a.duckdb"
    assert main(["annotate", "import", str(bad), "--format", "jsonl", "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and literal(err)


def test_annotate_resolve_formats(tmp_path, capsys):
    import json

    db = tmp_path / "r.duckdb"
    labels = tmp_path / "l.jsonl"
    items = tmp_path / "i.jsonl"
    items.write_text(json.dumps({"item_id": "i1", "query": "q", "response": TRICKY}) + "\n")
    assert main(["annotate", "add", "--jsonl", str(items), "--db", str(db)]) == 0
    with labels.open("w") as f:
        for who, label in (("a", "yes"), ("b", "yes"), ("c", "no")):
            f.write(
                json.dumps({"item_id": "i1", "annotator": who, "label": label, "spans": []}) + "\n"
            )
    assert main(["annotate", "import", str(labels), "--format", "jsonl", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["annotate", "resolve", "--db", str(db), "--format", "json"]) == 0
    rows = {r["measure"]: r["value"] for r in json.loads(capsys.readouterr().out)}
    assert rows["items with labels"] == 1 and rows["resolved by majority"] == 1
    assert rows["resolved yes"] == 1
    assert main(["annotate", "resolve", "--db", str(db), "--format", "latex"]) == 0
    assert r"\toprule" in capsys.readouterr().out
