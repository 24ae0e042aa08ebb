"""Adding items to annotate: from a pre-selection run, HaluEval general, plain JSON lines."""

from __future__ import annotations

import json

import orjson
import pytest

from halugen.annotate.items import (
    Item,
    add_halueval_general,
    add_jsonl,
    add_preselected,
    insert_items,
    jsonl_item_id,
    preselect_item_id,
)
from halugen.errors import InputError, UsageError
from halugen.store.db import open_store


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "s.duckdb") as s:
        yield s


def _preselection(store) -> None:
    # four queries, three responses each; scores: q2 (least similar) < q4 < q1 < q3;
    # q5 has a NaN score (one response only) and is never picked
    store.conn.execute(
        "INSERT INTO preselect_queries VALUES ('r1', 'k5', 'id5', 'query 5', 'q.jsonl', 5, now())"
    )
    store.conn.execute("INSERT INTO preselect_scores VALUES ('r1', 'k5', 'NaN', 1, 'fake', now())")
    store.conn.execute(
        "INSERT INTO preselect_responses VALUES ('r1', 'k5', 0, 'lonely', NULL, now())"
    )
    scores = {"k1": 0.9, "k2": 0.4, "k3": 0.95, "k4": 0.6}
    for n, (key, score) in enumerate(scores.items(), 1):
        store.conn.execute(
            "INSERT INTO preselect_queries VALUES ('r1', ?, ?, ?, 'q.jsonl', ?, now())",
            [key, f"id{n}", f"query {n}", n],
        )
        store.conn.execute(
            "INSERT INTO preselect_scores VALUES ('r1', ?, ?, 3, 'fake', now())", [key, score]
        )
        if key == "k2":  # scored twice (a resumed run): still one query
            store.conn.execute(
                "INSERT INTO preselect_scores VALUES ('r1', ?, ?, 3, 'fake', now())", [key, score]
            )
        for idx in range(3):
            store.conn.execute(
                "INSERT INTO preselect_responses VALUES ('r1', ?, ?, ?, NULL, now())",
                [key, idx, f"answer {n}.{idx}"],
            )


def test_preselected_k_best_become_items(store):
    _preselection(store)
    assert add_preselected(store, "r1", 2) == 6
    rows = store.query(
        "SELECT item_id, source, run_id, query, response, meta_json "
        "FROM annotation_items ORDER BY item_id"
    )
    assert sorted(r[0] for r in rows) == sorted(
        preselect_item_id("r1", k, i) for k in ("k2", "k4") for i in range(3)
    )
    rows.sort(key=lambda r: orjson.loads(r[5])["rank"] * 10 + orjson.loads(r[5])["idx"])
    assert {r[1] for r in rows} == {"preselect"} and {r[2] for r in rows} == {"r1"}
    assert rows[0][3:5] == ("query 2", "answer 2.0")
    meta = orjson.loads(rows[0][5])
    assert (meta["rank"], meta["score"], meta["query_id"], meta["idx"]) == (1, 0.4, "id2", 0)
    assert orjson.loads(rows[3][5])["rank"] == 2  # k4: second, whatever k2's duplicate
    # asking for more adds only the new ones; asking again adds nothing
    assert add_preselected(store, "r1", 3) == 3
    assert add_preselected(store, "r1", 3) == 0
    assert add_preselected(store, "r1", 10) == 3  # k3 joins; k5 (NaN) never does
    assert not store.query("SELECT 1 FROM annotation_items WHERE query = 'query 5'")
    with pytest.raises(UsageError, match="no scored queries"):
        add_preselected(store, "nope", 3)
    with pytest.raises(UsageError):
        add_preselected(store, "r1", 0)


def test_jsonl_items_with_and_without_ids(store, tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"item_id": "a", "query": "q a", "response": "r a"}),
                json.dumps({"query": "q b", "response": "r b", "topic": "x"}),
                json.dumps({"query": "q c"}),
                "[1, 2",
                "",
            ]
        )
    )
    skipped = []
    assert add_jsonl(store, path, skipped) == 2
    assert [s.where for s in skipped] == [f"{path}:3", f"{path}:4"]
    assert "response is missing" in skipped[0].reason
    ids = {r[0] for r in store.query("SELECT item_id FROM annotation_items")}
    assert ids == {"a", jsonl_item_id("q b", "r b")}
    assert add_jsonl(store, path) == 0  # the generated id is stable


def test_same_id_different_text_is_reported_not_overwritten(store):
    assert insert_items(store, [Item("a", "jsonl", "q", "r")]) == 1
    skipped = []
    assert (
        insert_items(
            store,
            [
                Item("a", "jsonl", "q", "other"),
                Item("b", "jsonl", "q", "r"),
                Item("b", "jsonl", "q", "r"),
            ],
            skipped,
        )
        == 1
    )
    assert len(skipped) == 1 and "different" in skipped[0].reason
    assert store.query("SELECT response FROM annotation_items WHERE item_id = 'a'") == [("r",)]


def test_halueval_general_items_without_labels(store, tmp_path):
    path = tmp_path / "general_data.json"
    path.write_bytes(
        b"\r\n".join(
            [
                json.dumps(
                    {
                        "ID": "1",
                        "user_query": "q1",
                        "chatgpt_response": "r1",
                        "hallucination": "yes",
                        "hallucination_spans": ["r1"],
                    }
                ).encode(),
                json.dumps(
                    {
                        "ID": "2",
                        "user_query": "q2",
                        "chatgpt_response": "r2",
                        "hallucination": "maybe",
                    }
                ).encode(),
            ]
        )
        + b"\r\n"
    )
    skipped = []
    assert add_halueval_general(store, path, skipped) == 1
    assert "'maybe'" in skipped[0].reason
    assert store.query("SELECT item_id, meta_json FROM annotation_items") == [
        ("halueval:1", '{"halueval_id":"1"}')
    ]
    assert store.query("SELECT count(*) FROM annotations") == [(0,)]


def test_files_that_are_not_items(store, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match="empty"):
        add_jsonl(store, empty)
    other = tmp_path / "other.jsonl"
    other.write_text('{"question": "q"}\n')
    with pytest.raises(InputError, match=r"not a JSON-lines items file: .*other\.jsonl:1"):
        add_jsonl(store, other)
    with pytest.raises(InputError, match="directory"):
        add_jsonl(store, tmp_path)


def test_preselected_item_ids_are_short_and_stable(store):
    _preselection(store)
    assert preselect_item_id("20250101-120000-abcdef", "f" * 32, 2) == preselect_item_id(
        "20250101-120000-abcdef", "f" * 32, 2
    )
    assert len(preselect_item_id("20250101-120000-abcdef", "f" * 32, 2)) == 18
    assert add_preselected(store, "r1", 1) == 3
    ids = [i for (i,) in store.query("SELECT item_id FROM annotation_items ORDER BY item_id")]
    assert ids == [preselect_item_id("r1", "k2", i) for i in range(3)]


def test_items_added_under_the_long_ids_keep_them(store):
    """A store written before short ids: its items (and the labels on them) keep their ids,
    adding the run again adds only what is new."""
    _preselection(store)
    for idx in range(3):  # k2's items under the old form, with a label on one
        store.conn.execute(
            "INSERT INTO annotation_items VALUES (?, 'preselect', 'r1', 'query 2', ?, NULL, now())",
            [f"r1:k2:{idx}", f"answer 2.{idx}"],
        )
    assert add_preselected(store, "r1", 2) == 3  # k4's three, nothing of k2 again
    ids = {i for (i,) in store.query("SELECT item_id FROM annotation_items")}
    assert {f"r1:k2:{i}" for i in range(3)} <= ids
    assert {preselect_item_id("r1", "k4", i) for i in range(3)} <= ids
    assert len(ids) == 6
