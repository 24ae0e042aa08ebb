"""Resolution of labels into one per item, and the agreement report, on small stores."""

from __future__ import annotations

import orjson
import pytest

from halugen.annotate.items import Item, append_rows, insert_items
from halugen.annotate.resolve import (
    LabelRule,
    format_report,
    resolve_all,
    resolve_item,
    resolve_spans,
)
from halugen.store.db import open_store

RESPONSE = "The tower was built in 1889 by Gustave Eiffel for the fair."  # 59 characters


def _span(start: int, end: int, kind: str | None = "non-factual") -> dict:
    return {"start": start, "end": end, "text": RESPONSE[start:end], "kind": kind}


def _label(store, item_id: str, annotator: str, label: str, spans=(), note=None) -> None:
    append_rows(
        store,
        "annotations",
        [
            (item_id, annotator, label, orjson.dumps(list(spans)).decode(), note, "web"),
        ],
    )


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "s.duckdb") as s:
        yield s


def _items(store, n: int) -> None:
    insert_items(store, [Item(f"i{k}", "jsonl", f"query {k}", RESPONSE) for k in range(1, n + 1)])


def _resolved(store) -> dict[str, tuple]:
    return {
        r[0]: r[1:]
        for r in store.query(
            "SELECT item_id, label, spans_json, n_labels, agreement, method "
            "FROM annotation_resolved ORDER BY item_id"
        )
    }


def test_three_annotators_five_items(store):
    _items(store, 5)
    votes = {  # item: labels of a, b, c
        "i1": ("yes", "yes", "yes"),
        "i2": ("yes", "yes", "no"),
        "i3": ("no", "no", "no"),
        "i4": ("no", "no", "yes"),
        "i5": ("yes", "no", "no"),
    }
    for item_id, labels in votes.items():
        for annotator, label in zip("abc", labels, strict=True):
            spans = []
            if item_id == "i2" and annotator == "a":
                spans = [_span(0, 5, "unverifiable")]
            elif item_id == "i2" and annotator == "b":
                spans = [_span(3, 10, "non-factual")]
            elif label == "yes":
                spans = [_span(23, 27)]
            _label(store, item_id, annotator, label, spans)

    report = resolve_all(store)

    got = _resolved(store)
    assert {k: v[0] for k, v in got.items()} == {
        "i1": "yes",
        "i2": "yes",
        "i3": "no",
        "i4": "no",
        "i5": "no",
    }
    assert {k: v[2:] for k, v in got.items()} == {
        "i1": (3, pytest.approx(1.0), "majority"),
        "i2": (3, pytest.approx(2 / 3), "majority"),
        "i3": (3, pytest.approx(1.0), "majority"),
        "i4": (3, pytest.approx(2 / 3), "majority"),
        "i5": (3, pytest.approx(2 / 3), "majority"),
    }
    # i2: union of the yes voters' spans [0,5) and [3,10) -> [0,10); kind by characters:
    # unverifiable 5, non-factual 7 -> non-factual. c voted no: its (none) spans don't count.
    assert orjson.loads(got["i2"][1]) == [
        {"start": 0, "end": 10, "text": RESPONSE[:10], "kind": "non-factual"}
    ]
    assert orjson.loads(got["i3"][1]) == []
    # i5 resolved no: the lone yes voter's span is not the resolution's
    assert orjson.loads(got["i5"][1]) == []

    # Fleiss by hand, columns (yes, no): rows [3,0] [2,1] [0,3] [1,2] [1,2]
    # P_i = 1, 1/3, 1, 1/3, 1/3 -> P-bar = 3/5
    # p_yes = 7/15, p_no = 8/15 -> P_e = (49 + 64) / 225 = 113/225
    # kappa = (135/225 - 113/225) / (112/225) = 22/112 = 11/56
    assert report.fleiss_kappa == pytest.approx(11 / 56)
    assert report.percent_agreement == pytest.approx(3 / 5)
    # alpha: disagreement 0 + 2 + 0 + 2 + 2 = 6, n_yes = 7, n_no = 8, n = 15
    # alpha = 1 - 14 * 6 / (2 * 7 * 8) = 1 - 84/112 = 1/4
    assert report.krippendorff_alpha == pytest.approx(0.25)
    assert (report.items, report.resolved, report.ties, report.single) == (5, 5, 0, 0)
    assert report.label_counts == {"no": 3, "yes": 2}
    assert report.raters_per_item == {3: 5}
    assert (report.kappa_items, report.kappa_raters) == (5, 3)
    assert report.written == 5
    # span agreement over items with >= 2 yes voters: i1 (three identical spans -> 1.0),
    # i2 ([0,5) vs [3,10): overlap 2, F1 = 4/12 = 1/3) -> mean 2/3
    assert report.span_agreement == pytest.approx(2 / 3)
    text = format_report(report)
    assert "Fleiss' kappa: 0.196 over 5 items with 3 labels" in text
    assert "Krippendorff's alpha: 0.250" in text


def test_resolving_twice_writes_nothing_and_a_relabel_writes_one_row(store):
    _items(store, 2)
    for annotator, label in zip("abc", ("yes", "no", "no"), strict=True):
        _label(store, "i1", annotator, label, [_span(0, 3)] if label == "yes" else [])
        _label(store, "i2", annotator, "no")
    assert resolve_all(store).written == 2
    again = resolve_all(store)
    assert again.written == 0 and again.items == 2
    # b changes their mind on i1: the latest label counts, the majority flips
    _label(store, "i1", "b", "yes", [_span(0, 3)])
    report = resolve_all(store)
    assert report.written == 1
    assert _resolved(store)["i1"][0] == "yes"
    (rows,) = store.query("SELECT count(*) FROM annotation_resolutions")
    assert rows[0] == 3  # append-only: the old i1 row is still there


def test_ties_single_labels_and_modal_raters(store):
    _items(store, 5)
    # i1, i2: 3 raters; i3: 2 raters tied; i4: HaluEval-like single label; i5: no labels
    for annotator, label in zip("abc", ("yes", "yes", "no"), strict=True):
        _label(store, "i1", annotator, label)
    for annotator in "abc":
        _label(store, "i2", annotator, "no")
    _label(store, "i3", "a", "yes", [_span(0, 3, "irrelevant")])
    _label(store, "i3", "b", "no")
    _label(store, "i4", "halueval", "no")

    report = resolve_all(store, LabelRule(allow_partial=True))
    got = _resolved(store)
    assert set(got) == {"i1", "i2", "i3", "i4"}
    # a tie resolves to yes, flagged; agreement = the share of yes votes
    assert got["i3"][0] == "yes" and got["i3"][4] == "tie"
    assert got["i3"][3] == pytest.approx(0.5)
    assert orjson.loads(got["i3"][1]) == [_span(0, 3, "irrelevant")]
    assert got["i4"][0] == "no" and got["i4"][4] == "single" and got["i4"][2] == 1
    assert (report.items, report.resolved, report.ties, report.single) == (4, 2, 1, 1)
    assert report.raters_per_item == {1: 1, 2: 1, 3: 2}
    # kappa only over the items with the modal count (3): rows [2,1] [0,3]
    # P_i = 1/3, 1 -> P-bar = 2/3; p_yes = 2/6, p_no = 4/6 -> P_e = 1/9 + 4/9 = 5/9
    # kappa = (2/3 - 5/9) / (4/9) = (1/9) / (4/9) = 1/4
    assert (report.kappa_items, report.kappa_raters) == (2, 3)
    assert report.fleiss_kappa == pytest.approx(0.25)
    # percent agreement over items with >= 2 labels: i1 1/3, i2 1, i3 0 -> 4/9
    assert report.percent_agreement == pytest.approx(4 / 9)


def test_partial_items_are_not_resolved_unless_allowed(store):
    _items(store, 3)
    for annotator in "abc":
        _label(store, "i1", annotator, "yes")
    _label(store, "i2", "a", "no")  # 1 of 3 labels
    _label(store, "i3", "a", "yes")
    _label(store, "i3", "b", "yes")  # 2 of 3

    report = resolve_all(store)
    assert set(_resolved(store)) == {"i1"}
    assert (report.items, report.partial, report.resolved, report.single) == (3, 2, 1, 0)
    assert "items left out (fewer than 3 labels): 2" in format_report(report)
    assert report.raters_per_item == {1: 1, 2: 1, 3: 1}  # agreement sees every label

    report = resolve_all(store, LabelRule(per_item=2))
    assert set(_resolved(store)) == {"i1", "i3"} and report.partial == 1

    report = resolve_all(store, LabelRule(allow_partial=True))
    got = _resolved(store)
    assert {k: (v[0], v[2]) for k, v in got.items()} == {
        "i1": ("yes", 3),
        "i2": ("no", 1),
        "i3": ("yes", 2),
    }
    assert report.partial == 0


def test_a_released_label_counts_as_resolved(store):
    # HaluEval's own label (annotator and source halueval) stands for HaluEval's annotators
    _items(store, 2)
    append_rows(store, "annotations", [("i1", "halueval", "no", "[]", None, "halueval")])
    _label(store, "i2", "halueval", "no")  # a page annotator who calls themself halueval
    report = resolve_all(store)
    assert set(_resolved(store)) == {"i1"} and report.partial == 1


def test_no_labels_at_all(store):
    _items(store, 2)
    report = resolve_all(store)
    assert report.items == 0 and report.written == 0
    assert report.fleiss_kappa is None and report.percent_agreement is None
    assert report.krippendorff_alpha is None
    assert "n/a" in format_report(report)


def test_resolve_item_tie_rule_without_yes():
    res = resolve_item([("maybe", []), ("unsure", [])], RESPONSE)
    assert (res.label, res.method) == ("maybe", "tie")


def test_span_kind_majority_by_characters_and_tie_order():
    # one region [0, 8): unverifiable marks 4 characters, irrelevant 4 -> tie -> KINDS order
    spans = resolve_spans([[_span(0, 4, "irrelevant")], [_span(4, 8, "unverifiable")]], RESPONSE)
    assert spans == [{"start": 0, "end": 8, "text": RESPONSE[:8], "kind": "unverifiable"}]
    # kind-less spans (HaluEval) only count when nothing there has a kind
    spans = resolve_spans([[_span(0, 6, None)], [_span(2, 4, "irrelevant")]], RESPONSE)
    assert spans[0]["kind"] == "irrelevant"
    assert resolve_spans([[_span(0, 6, None)]], RESPONSE)[0]["kind"] is None
    # separate regions keep separate kinds
    spans = resolve_spans([[_span(0, 3, "irrelevant"), _span(10, 12, "non-factual")]], RESPONSE)
    assert [(s["start"], s["end"], s["kind"]) for s in spans] == [
        (0, 3, "irrelevant"),
        (10, 12, "non-factual"),
    ]


def test_resolve_records_the_agreement_it_measured(tmp_path):
    from halugen.annotate.items import append_rows, insert_items  # noqa: F401
    from halugen.annotate.resolve import resolve_all
    from halugen.store.db import open_store

    store = open_store(tmp_path / "s.duckdb")
    append_rows(
        store,
        "annotation_items",
        [(f"i{k}", "jsonl", None, f"q{k}", f"response {k}", None) for k in range(3)],
    )
    votes = (("yes", "yes", "no"), ("no", "no", "no"), ("yes", "yes", "yes"))
    append_rows(
        store,
        "annotations",
        [
            (f"i{k}", a, label, "[]", None, "web")
            for k, labels in enumerate(votes)
            for a, label in zip(("a", "b", "c"), labels, strict=True)
        ],
    )
    report = resolve_all(store)
    rows = store.query(
        "SELECT items, kappa_raters, fleiss_kappa, krippendorff_alpha FROM annotation_agreement"
    )
    assert rows == [(3, 3, report.fleiss_kappa, report.krippendorff_alpha)]
    store.close()


def test_cli_resolve_and_export_refuse_partial_items(tmp_path, capsys):
    import json

    from halugen.cli import main

    db = tmp_path / "c.duckdb"
    lines = [
        {"item_id": item, "annotator": who, "label": label, "spans": [], "query": "q"}
        | {"response": RESPONSE}
        for item, votes in (("full", "yyn"), ("half", "n"))
        for who, label in zip("abc", ("yes" if v == "y" else "no" for v in votes), strict=False)
    ]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["annotate", "import", str(labels), "--format", "jsonl", "--db", str(db)]) == 0
    capsys.readouterr()

    assert main(["annotate", "resolve", "--db", str(db), "--format", "json"]) == 0
    captured = capsys.readouterr()
    rows = {r["measure"]: r["value"] for r in json.loads(captured.out)}
    assert rows["left out (fewer than 3 labels)"] == 1 and rows["resolved by majority"] == 1
    assert "left out 1 item(s) with fewer than 3 labels" in captured.err
    assert "--allow-partial" in captured.err

    out = tmp_path / "general_data.json"
    args = ["export", "--task", "general", "--db", str(db), "--out", str(out)]
    assert main(args) == 0
    assert "left out 1 item(s)" in capsys.readouterr().err
    assert [json.loads(x)["ID"] for x in out.read_text().splitlines()] == ["full"]
    assert main([*args, "--allow-partial"]) == 0
    back = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["ID"], r["n_labels"]) for r in back] == [("full", 3), ("half", 1)]
    assert main([*args, "--per-item", "0"]) == 2  # a usage error, one line
    assert "--per-item must be at least 1" in capsys.readouterr().err


def test_cli_label_rule_flags_belong_to_resolved_exports(tmp_path, capsys):
    from halugen.cli import main

    db = tmp_path / "e.duckdb"
    argv = ["annotate", "export", "--format", "jsonl", "--db", str(db), "-o", str(tmp_path / "x")]
    with open_store(db):
        pass
    assert main([*argv, "--allow-partial"]) == 2
    assert "writes every label as it is" in capsys.readouterr().err
