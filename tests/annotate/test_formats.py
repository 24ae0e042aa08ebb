"""Import and export: Label Studio JSON, JSON lines, HaluEval's general_data.json."""

from __future__ import annotations

import json

import orjson
import pytest

from halugen.annotate.formats import (
    GeneralExport,
    export_halueval_general,
    export_jsonl,
    import_halueval_general,
    import_jsonl,
)
from halugen.annotate.items import Item, append_rows, insert_items
from halugen.annotate.labelstudio import (
    LABELSTUDIO_CONFIG,
    export_labelstudio,
    import_labelstudio,
)
from halugen.annotate.resolve import LabelRule, resolve_all
from halugen.annotate.spans import locate_spans
from halugen.errors import InputError
from halugen.store.db import open_store

R1 = "Mount Elbrus is the highest peak in the Alps, at 5,642 metres."
R2 = "Sure 😀 the river Serin flows north. It is 90 km long."  # an astral character
R3 = "I am not able to browse the web."


@pytest.fixture
def stores(tmp_path):
    opened = []

    def make(name: str):
        s = open_store(tmp_path / f"{name}.duckdb")
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


def _span(text: str, part: str, kind: str | None) -> dict:
    start = text.index(part)
    return {"start": start, "end": start + len(part), "text": part, "kind": kind}


def _annotated(store) -> None:
    insert_items(
        store,
        [
            Item("q1:0", "jsonl", "Highest peak of the Caucasus?", R1),
            Item("q2:0", "jsonl", "Tell me about the Serin.", R2),
            Item("q3:0", "jsonl", "What is on example.org today?", R3),
        ],
    )
    rows = [
        ("q1:0", "ana@example.org", "yes", [_span(R1, "in the Alps", "non-factual")], None),
        (
            "q1:0",
            "ben",
            "yes",
            [_span(R1, "in the Alps", "non-factual"), _span(R1, "5,642", "unverifiable")],
            "check height",
        ),
        ("q1:0", "cy", "no", [], None),
        ("q2:0", "ana@example.org", "yes", [_span(R2, "flows north", "unverifiable")], None),
        ("q2:0", "ben", "no", [], None),
        ("q3:0", "ben", "yes", [_span(R3, "I am not able to browse the web.", "irrelevant")], None),
    ]
    append_rows(
        store,
        "annotations",
        [(i, a, lab, orjson.dumps(sp).decode(), note, "web") for i, a, lab, sp, note in rows],
    )
    # an older label of ben on q2 that his latest one replaced: exports carry the latest
    store.conn.execute(
        "UPDATE annotations SET created_at = created_at + INTERVAL 1 SECOND "
        "WHERE item_id = 'q2:0' AND annotator = 'ben'"
    )
    append_rows(store, "annotations", [("q2:0", "ben", "yes", "[]", None, "web")])
    store.conn.execute(
        "UPDATE annotations SET created_at = created_at - INTERVAL 1 HOUR "
        "WHERE item_id = 'q2:0' AND annotator = 'ben' AND label = 'yes'"
    )


def _latest(store) -> set[tuple]:
    return set(
        store.query("SELECT item_id, annotator, label, spans_json, note FROM annotations_latest")
    )


def _items_of(store) -> set[tuple]:
    return set(store.query("SELECT item_id, query, response FROM annotation_items"))


# -- Label Studio --------------------------------------------------------------------------
def test_labelstudio_round_trip(stores, tmp_path):
    a = stores("a")
    _annotated(a)
    out = tmp_path / "ls.json"
    assert export_labelstudio(a, out) == 3

    tasks = orjson.loads(out.read_bytes())
    assert isinstance(tasks, list) and [t["id"] for t in tasks] == [1, 2, 3]
    first = tasks[0]
    assert first["data"] == {
        "item_id": "q1:0",
        "query": "Highest peak of the Caucasus?",
        "response": R1,
    }
    anns = {x["halugen_annotator"]: x for x in first["annotations"]}
    assert set(anns) == {"ana@example.org", "ben", "cy"}
    # Label Studio resolves members by email; a plain name must not be sent as one
    assert anns["ana@example.org"]["completed_by"] == {"email": "ana@example.org"}
    assert "completed_by" not in anns["ben"]
    types = [(r["from_name"], r["to_name"], r["type"]) for r in anns["ben"]["result"]]
    assert types == [
        ("hallucinated", "response", "choices"),
        ("spans", "response", "labels"),
        ("spans", "response", "labels"),
        ("note", "response", "textarea"),
    ]
    assert anns["ben"]["result"][0]["value"] == {"choices": ["Yes"]}
    assert anns["ben"]["result"][1]["value"] == {
        "start": R1.index("in the Alps"),
        "end": R1.index("in the Alps") + 11,
        "text": "in the Alps",
        "labels": ["Non-factual"],
    }
    assert anns["cy"]["result"] == [
        {
            "id": anns["cy"]["result"][0]["id"],
            "from_name": "hallucinated",
            "to_name": "response",
            "type": "choices",
            "value": {"choices": ["No"]},
        }
    ]
    for name in ('name="hallucinated"', 'name="spans"', 'name="response"', 'name="note"'):
        assert name in LABELSTUDIO_CONFIG

    b = stores("b")
    skipped = []
    assert import_labelstudio(b, out, skipped) == (3, 6)
    assert skipped == []
    assert _items_of(b) == _items_of(a)
    assert _latest(b) == _latest(a)
    # importing again adds nothing
    assert import_labelstudio(b, out) == (0, 0)
    assert b.query("SELECT count(*) FROM annotations")[0][0] == 6
    # and resolution agrees between the two stores
    assert resolve_all(a).label_counts == resolve_all(b).label_counts


def test_labelstudio_import_of_its_own_export_shape(stores, tmp_path):
    text = "Hi 😀 Paris is in Spain."  # Label Studio (JS) counts 😀 as two units
    start16 = len("Hi ") + 2 + 1  # "Paris is in Spain" after the emoji, in UTF-16 units
    tasks = [
        {
            "id": 11,
            "data": {"text": text},
            "annotations": [
                {
                    "id": 1,
                    "completed_by": 7,
                    "result": [
                        {
                            "from_name": "hallucinated",
                            "to_name": "text",
                            "type": "choices",
                            "value": {"choices": ["yes"]},
                        },
                        {
                            "from_name": "spans",
                            "to_name": "text",
                            "type": "labels",
                            "value": {
                                "start": start16,
                                "end": start16 + 17,
                                "text": "Paris is in Spain",
                                "labels": ["Non-factual"],
                            },
                        },
                    ],
                },
                {
                    "id": 2,
                    "completed_by": {"id": 8, "email": "dee@example.org"},
                    "result": [
                        {
                            "from_name": "hallucinated",
                            "to_name": "text",
                            "type": "choices",
                            "value": {"choices": ["Maybe"]},
                        }
                    ],
                },
                {"id": 3, "completed_by": 9, "was_cancelled": True, "result": []},
                {
                    "id": 4,
                    "completed_by": 10,
                    "result": [
                        {
                            "from_name": "spans",
                            "to_name": "text",
                            "type": "labels",
                            "value": {"start": 0, "end": 99, "labels": ["Irrelevant"]},
                        }
                    ],
                },
                {
                    "id": 5,
                    "completed_by": 12,
                    "result": [
                        {
                            "from_name": "spans",
                            "to_name": "text",
                            "type": "labels",
                            "value": {"start": 0, "end": 2, "text": "Hi", "labels": ["Irrelevant"]},
                        }
                    ],
                },
            ],
        },
        {"no": "data"},
    ]
    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps(tasks))
    store = stores("s")
    skipped = []
    assert import_labelstudio(store, path, skipped) == (1, 2)
    reasons = sorted(s.reason for s in skipped)
    assert any("unknown choice 'Maybe'" in r for r in reasons)
    assert any("cancelled" in r for r in reasons)
    assert any("outside the response" in r for r in reasons)
    assert any("not a Label Studio task" in r for r in reasons)
    assert all(str(path) in str(s) for s in skipped)
    rows = {
        r[1]: r
        for r in store.query("SELECT item_id, annotator, label, spans_json FROM annotations")
    }
    assert set(rows) == {"labelstudio-user-7", "labelstudio-user-12"}
    assert rows["labelstudio-user-7"][0] == "labelstudio:11"
    # the UTF-16 offsets were converted to code points
    (span,) = orjson.loads(rows["labelstudio-user-7"][3])
    assert text[span["start"] : span["end"]] == "Paris is in Spain"
    assert span["kind"] == "non-factual"
    # spans without a choice mean "yes"
    assert rows["labelstudio-user-12"][2] == "yes"


def test_labelstudio_import_of_another_format_is_an_input_error(stores, tmp_path):
    path = tmp_path / "general.json"
    path.write_text('{"ID": "1", "user_query": "q", "chatgpt_response": "r"}\n')
    with pytest.raises(InputError, match=r"not a Label Studio JSON file: .*general\.json:1"):
        import_labelstudio(stores("s"), path)
    with pytest.raises(InputError, match="not found"):
        import_labelstudio(stores("t"), tmp_path / "missing.json")


# -- JSON lines ----------------------------------------------------------------------------
def test_jsonl_round_trip(stores, tmp_path):
    a = stores("a")
    _annotated(a)
    out = tmp_path / "ann.jsonl"
    assert export_jsonl(a, out) == 6
    lines = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert list(lines[0])[:4] == ["item_id", "annotator", "label", "spans"]
    assert all(set(s) == {"start", "end", "text", "kind"} for x in lines for s in x["spans"])

    b = stores("b")
    assert import_jsonl(b, out) == 6
    assert _latest(b) == _latest(a)
    assert _items_of(b) == _items_of(a)
    assert import_jsonl(b, out) == 0  # idempotent


def test_jsonl_import_skips_bad_lines_with_reasons(stores, tmp_path):
    store = stores("s")
    insert_items(store, [Item("x1", "jsonl", "q", R3)])
    good = {
        "item_id": "x1",
        "annotator": "ana",
        "label": "yes",
        "spans": [{"start": 0, "end": 4, "text": "I am", "kind": "irrelevant"}],
    }
    lines = [
        orjson.dumps(good).decode(),
        "{not json",
        orjson.dumps({**good, "label": "perhaps"}).decode(),
        orjson.dumps({**good, "spans": [{"start": 5, "end": 500, "kind": None}]}).decode(),
        orjson.dumps({**good, "spans": [{"start": 0, "end": 4, "text": "nope"}]}).decode(),
        orjson.dumps({**good, "spans": [{"start": 0, "end": 4, "kind": "rumour"}]}).decode(),
        orjson.dumps({**good, "item_id": "ghost"}).decode(),
        orjson.dumps({**good, "annotator": "ben", "label": "no"}).decode(),
    ]
    path = tmp_path / "a.jsonl"
    path.write_text("\r\n".join(lines) + "\r\n")
    skipped = []
    assert import_jsonl(store, path, skipped) == 1
    where = sorted(s.where for s in skipped)
    assert where == [f"{path}:{n}" for n in range(2, 9)]
    reasons = " | ".join(s.reason for s in sorted(skipped, key=lambda s: s.where))
    for expected in (
        "invalid JSON",
        "unknown label 'perhaps'",
        "outside the response",
        "does not match",
        "unknown span kind 'rumour'",
        "unknown item ghost",
        "label 'no' with hallucinated spans",
    ):
        assert expected in reasons


# -- HaluEval general ----------------------------------------------------------------------
GENERAL = [
    {
        "ID": "1",
        "user_query": "List three prime numbers.",
        "chatgpt_response": "2, 3 and 5.",
        "hallucination": "no",
        "hallucination_spans": [],
    },
    {
        "ID": "2",
        "user_query": "Where is Paris?",
        "chatgpt_response": "Paris is the capital of France. Paris is in Spain.",
        "hallucination": "yes",
        "hallucination_spans": ["Paris is in Spain."],
    },
    {
        "ID": "3",
        "user_query": "Write a long poem.",
        "chatgpt_response": "Roses are red, violets are",
        "hallucination": "yes",
        "hallucination_spans": ["Incomplete answer"],
    },
    {
        "ID": "4",
        "user_query": "Homophones?",
        "chatgpt_response": "1. to and too\n2. hear and here\n3. sea and see\n4. pair and pear",
        "hallucination": "yes",
        "hallucination_spans": ["1. to and too\n3. sea and see"],
    },
    {
        "ID": "5",
        "user_query": "Say hi “politely”.",
        "chatgpt_response": "Hello — nice to meet you.",
        "hallucination": "no",
        "hallucination_spans": [],
    },
]


def _general_file(tmp_path):
    path = tmp_path / "general_data.json"
    # HaluEval's file: json.dumps lines with CRLF ends; plus one broken line
    lines = [json.dumps(r, ensure_ascii=False) for r in GENERAL]
    lines.insert(2, '{"ID": "x", broken')
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return path


def test_halueval_general_import_resolve_export(stores, tmp_path):
    path = _general_file(tmp_path)
    store = stores("s")
    skipped = []
    assert import_halueval_general(store, path, skipped) == 5
    assert [(s.where, s.reason[:12]) for s in skipped] == [(f"{path}:3", "invalid JSON")]
    assert import_halueval_general(store, path) == 0  # idempotent

    rows = {
        r[0]: r
        for r in store.query(
            "SELECT a.item_id, a.annotator, a.source, a.label, a.spans_json, i.meta_json "
            "FROM annotations a JOIN annotation_items i USING (item_id)"
        )
    }
    assert set(rows) == {f"halueval:{n}" for n in range(1, 6)}
    assert {(r[1], r[2]) for r in rows.values()} == {("halueval", "halueval")}
    spans2 = orjson.loads(rows["halueval:2"][4])
    assert spans2 == [{"start": 32, "end": 50, "text": "Paris is in Spain.", "kind": None}]
    # not in the response: no offsets, kept in the item's meta
    assert orjson.loads(rows["halueval:3"][4]) == []
    assert orjson.loads(rows["halueval:3"][5])["unlocated_spans"] == ["Incomplete answer"]
    # two passages joined by a newline: each line found on its own
    assert [s["text"] for s in orjson.loads(rows["halueval:4"][4])] == [
        "1. to and too",
        "3. sea and see",
    ]

    report = resolve_all(store)
    assert (report.items, report.single, report.resolved, report.ties) == (5, 5, 0, 0)
    assert report.fleiss_kappa is None  # no item has two labels
    methods = {r[0] for r in store.query("SELECT DISTINCT method FROM annotation_resolved")}
    assert methods == {"single"}

    out = tmp_path / "out.json"
    assert export_halueval_general(store, out).rows == 5
    back = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert back == GENERAL
    assert list(back[0]) == [
        "ID",
        "user_query",
        "chatgpt_response",
        "hallucination",
        "hallucination_spans",
    ]
    assert "“politely”" in out.read_text(encoding="utf-8")  # text as written, like HaluEval


def test_imported_halueval_file_exports_without_resolve(stores, tmp_path):
    # the README: an imported HaluEval file counts as resolved; no resolve step before export
    store = stores("s")
    import_halueval_general(store, _general_file(tmp_path))
    out = tmp_path / "out.json"
    assert export_halueval_general(store, out) == GeneralExport(5, 0)
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == GENERAL


def _partly_labelled(store) -> None:
    """Items p1 (3 labels), p2 (1 label), p3 (2 labels), p4 (none), labelled on the page."""
    insert_items(store, [Item(f"p{k}", "jsonl", f"q{k}", f"response {k}") for k in range(1, 5)])
    votes = {"p1": ("yes", "yes", "no"), "p2": ("no",), "p3": ("no", "yes")}
    append_rows(
        store,
        "annotations",
        [
            (item, annotator, label, "[]", None, "web")
            for item, labels in votes.items()
            for annotator, label in zip("abc", labels, strict=False)
        ],
    )


def test_general_export_refuses_partly_labelled_items(stores, tmp_path):
    store = stores("s")
    _partly_labelled(store)
    out = tmp_path / "out.json"
    # by default only p1 (3 of 3 labels) is resolved; p2 and p3 are counted as left out
    assert export_halueval_general(store, out) == GeneralExport(1, 2)
    (only,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert (only["ID"], only["hallucination"]) == ("p1", "yes")
    assert "n_labels" not in only
    # asked for, they come with their label counts
    rule = LabelRule(per_item=3, allow_partial=True)
    assert export_halueval_general(store, out, rule) == GeneralExport(3, 0)
    back = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["ID"], r["hallucination"], r["n_labels"]) for r in back] == [
        ("p1", "yes", 3),
        ("p2", "no", 1),
        ("p3", "yes", 2),  # a tie: yes, as resolve makes it
    ]
    # two labels are enough when two are asked for
    assert export_halueval_general(store, out, LabelRule(per_item=2)) == GeneralExport(2, 1)


def test_halueval_export_follows_a_changed_resolution(stores, tmp_path):
    store = stores("s")
    import_halueval_general(store, _general_file(tmp_path))
    # two annotators overrule HaluEval on item 1 and mark a span
    r = GENERAL[0]["chatgpt_response"]
    span = orjson.dumps([{"start": 0, "end": 1, "text": r[:1], "kind": "non-factual"}]).decode()
    append_rows(
        store,
        "annotations",
        [
            ("halueval:1", "ana", "yes", span, None, "web"),
            ("halueval:1", "ben", "yes", span, None, "web"),
        ],
    )
    resolve_all(store)
    out = tmp_path / "out.json"
    export_halueval_general(store, out)
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert (first["hallucination"], first["hallucination_spans"]) == ("yes", ["2"])


def test_halueval_earlier_release_and_wrong_file(stores, tmp_path):
    old = tmp_path / "old.json"
    old.write_text(
        json.dumps(
            {"ID": "7", "user_query": "q", "chatgpt_response": "r", "hallucination_label": "Yes"}
        )
        + "\n"
    )
    store = stores("s")
    assert import_halueval_general(store, old) == 1
    assert store.query("SELECT label FROM annotations") == [("yes",)]

    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"item_id": "a", "annotator": "x", "label": "yes"}\n')
    with pytest.raises(InputError, match=r"not a HaluEval general file: .*wrong\.jsonl:1"):
        import_halueval_general(store, wrong)


def test_locate_spans():
    text = "one two one two"
    spans, missing = locate_spans(["one", "one", "zzz", "two\nnone"], text)
    assert [(s["start"], s["end"]) for s in spans] == [(0, 3), (8, 11), (12, 15)]
    assert missing == ["zzz", "two\nnone"]
