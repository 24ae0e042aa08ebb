"""`annotate import --format halueval` keeps every record: an empty, missing or repeated ID gets
a derived item id and a warning; the export writes the released ID back; messages name the
field they are about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halugen.annotate.formats import export_halueval_general, import_halueval_general
from halugen.annotate.items import Skip
from halugen.annotate.resolve import resolve_all
from halugen.cli import main
from halugen.store.db import open_store


def record(ident: object, query: str, label: str = "no", **extra: object) -> dict[str, object]:
    rec: dict[str, object] = {
        "ID": ident,
        "user_query": query,
        "chatgpt_response": f"An answer to {query}",
        "hallucination": label,
        "hallucination_spans": [],
    }
    rec.update(extra)
    return {k: v for k, v in rec.items() if v is not ...}


RECORDS = [
    record("1", "first"),
    record("", "empty id"),
    record("  ", "blank id"),
    record(..., "no id at all"),
    record("2", "second"),
    record("2", "second, again with other texts"),  # a repeated ID
    record(None, "null id"),
    record(["x"], "list id"),
    record(3, "a number id"),
    record("1", "first"),  # the same record twice
]


def write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


@pytest.fixture
def store(tmp_path: Path):
    s = open_store(tmp_path / "a.duckdb")
    yield s
    s.close()


def test_every_record_is_kept_with_a_warning(store, tmp_path: Path) -> None:
    path = write(tmp_path / "general_data.json", RECORDS)
    skipped: list[Skip] = []
    assert import_halueval_general(store, path, skipped) == 9  # the repeat adds no annotation
    items = dict(store.query("SELECT query, item_id FROM annotation_items"))
    assert len(items) == 9 and len(set(items.values())) == 9
    assert items["first"] == "halueval:1" and items["second"] == "halueval:2"
    assert items["a number id"] == "halueval:3"
    assert items["second, again with other texts"].startswith("halueval:2~")
    for query in ("empty id", "blank id", "no id at all", "null id", "list id"):
        assert items[query].startswith("halueval:~"), query
    warnings = {s.where.rsplit(":", 1)[1]: s.reason for s in skipped}
    assert all(s.kept for s in skipped)
    assert warnings == {
        "2": f"field ID is empty: kept as item {items['empty id']}",
        "3": f"field ID is empty: kept as item {items['blank id']}",
        "4": f"no field ID: kept as item {items['no id at all']}",
        "6": f"ID 2 is also at {path}:5 with other texts: kept as item "
        f"{items['second, again with other texts']}",
        "7": f"field ID is null, not a string or a number: kept as item {items['null id']}",
        "8": f"field ID is a list, not a string or a number: kept as item {items['list id']}",
        "10": f"ID 1 repeats the record at {path}:1 with the same texts: one item, both "
        "labels stored (the later one counts)",
    }
    # the same file again: the same ids, nothing added
    assert import_halueval_general(store, path) == 0
    assert store.query("SELECT count(*) FROM annotation_items")[0][0] == 9
    # the export writes the IDs as they were released
    resolve_all(store)
    out = tmp_path / "out.json"
    assert export_halueval_general(store, out).rows == 9
    back = {r["user_query"]: r["ID"] for r in map(json.loads, out.read_text().splitlines())}
    assert back["second, again with other texts"] == "2"
    assert back["empty id"] == "" and back["first"] == "1"


def test_an_id_taken_in_the_store_by_other_texts_gets_a_derived_id(store, tmp_path: Path) -> None:
    import_halueval_general(store, write(tmp_path / "a.json", [record("7", "one release")]))
    skipped: list[Skip] = []
    other = write(tmp_path / "b.json", [record("7", "another release")])
    assert import_halueval_general(store, other, skipped) == 1
    ids = sorted(r[0] for r in store.query("SELECT item_id FROM annotation_items"))
    assert ids[0] == "halueval:7" and ids[1].startswith("halueval:7~")
    assert skipped[0].reason.startswith("ID 7 is also in the store with other texts")


@pytest.mark.parametrize(
    ("rec", "reason"),
    [
        (
            {"ID": "1", "user_query": "q", "chatgpt_response": "r", "hallucination_label": "maybe"},
            "field hallucination_label is 'maybe', expected 'yes' or 'no'",
        ),
        (
            {"ID": "1", "user_query": "q", "chatgpt_response": "r", "hallucination": "sure"},
            "field hallucination is 'sure', expected 'yes' or 'no'",
        ),
        (
            {"ID": "1", "user_query": "q", "hallucination": "no"},
            "missing field chatgpt_response (not a HaluEval general record)",
        ),
        (
            {"ID": "1", "user_query": "q", "chatgpt_response": "r", "hallucination_spans": "x"},
            "field hallucination_spans is not a list of strings",
        ),
        (
            {"ID": "1", "chatgpt_response": "r", "hallucination": "no"},
            "field user_query is missing",
        ),
    ],
)
def test_messages_name_the_field(
    store, tmp_path: Path, rec: dict[str, object], reason: str
) -> None:
    path = write(tmp_path / "g.json", [record("ok", "fine"), rec])
    skipped: list[Skip] = []
    import_halueval_general(store, path, skipped)
    assert [(s.where, s.reason, s.kept) for s in skipped] == [(f"{path}:2", reason, False)]


def test_an_unlabelled_record_is_kept_and_said_so(store, tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", [record("1", "q", label=...)])
    skipped: list[Skip] = []
    import_halueval_general(store, path, skipped)
    assert [(s.reason, s.kept) for s in skipped] == [
        ("no field hallucination (or hallucination_label): kept unlabelled", True)
    ]


def test_the_cli_says_warning_for_kept_records(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "general_data.json", [record("", "a"), record("x", "b", label="maybe")])
    db = tmp_path / "h.duckdb"
    code = main(["annotate", "import", str(path), "--format", "halueval", "--db", str(db)])
    assert code == 0
    err = capsys.readouterr().err
    assert f"warning {path}:1: field ID is empty: kept as item halueval:~" in err
    assert f"skipped {path}:2: field hallucination is 'maybe'" in err
