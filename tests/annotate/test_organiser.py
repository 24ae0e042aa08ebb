"""The organiser view's API: who may see it, what it shows, extra places, exports."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp.test_utils import TestServer

from halugen.annotate.access import ORGANISER_KEY, make_tokens, split_tokens
from halugen.annotate.assign import Assigner
from halugen.annotate.organiser import overview
from halugen.store.db import Store
from halugen.store.rows import AnnotationRow

from ._web import TRICKY, Annotator, add_items, run


def test_open_on_loopback_without_tokens(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        org = await person(None)
        _, data = await org.call("GET", "/api/organiser/session")
        assert data == {"organiser": True, "token_required": False, "available": True}
        assert (await org.call("GET", "/api/organiser/overview"))[0] == 200
        async with org.session.get(server.make_url("/organiser")) as r:
            assert r.status == 200 and "organiser" in await r.text()
            assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        async with org.session.get(server.make_url("/static/organiser.js")) as r:
            text = await r.text()
            assert r.status == 200 and "innerHTML" not in text
            # the partial download's link says what partial means
            assert "e.partial" in text and "fewer than" in text and "n_labels" in text
        async with org.session.get(server.make_url("/organiser")) as r:
            assert "partly labelled download" in await r.text()

    run(store, scenario)


def test_behind_the_organiser_token_when_tokens_are_in_force(store: Store) -> None:
    tokens = make_tokens(["ann1", "ann2"], organiser=True)
    people, organiser = split_tokens(tokens)
    assert organiser == tokens[ORGANISER_KEY] and set(people) == {"ann1", "ann2"}

    async def scenario(server: TestServer, person: Any) -> None:
        org = await person(None)
        assert (await org.call("GET", "/api/organiser/session"))[1] == {
            "organiser": False,
            "token_required": True,
            "available": True,
        }
        for path in ("/api/organiser/overview", "/api/organiser/export/jsonl"):
            assert (await org.call("GET", path))[0] == 401, path
        status, _ = await org.call("POST", "/api/organiser/extra-place", {"item_id": "i1"})
        assert status == 401
        for wrong in ("nope", people["ann1"], None, 7):
            status, data = await org.call("POST", "/api/organiser/login", {"token": wrong})
            assert status == 403 and data == {"error": "wrong organiser token"}, wrong
        # an annotator's login is not the organiser's
        ann = await person("ann1", login=False)
        await ann.login(people["ann1"])
        assert (await ann.call("GET", "/api/organiser/overview"))[0] == 401
        # the organiser token, without the custom header, is refused (CSRF)
        async with org.session.post(
            server.make_url("/api/organiser/login"),
            data=orjson.dumps({"token": organiser}),
            headers={"X-Halugen": ""},
        ) as r:
            assert r.status == 403
        status, data = await org.call("POST", "/api/organiser/login", {"token": organiser})
        assert status == 200 and data == {"organiser": True}
        status, data = await org.call("GET", "/api/organiser/overview")
        assert status == 200
        # the names in the tokens file are listed before their first label
        assert [a["annotator"] for a in data["annotators"]] == ["ann1", "ann2"]
        assert (await org.call("POST", "/api/organiser/logout", {}))[0] == 200
        assert (await org.call("GET", "/api/organiser/overview"))[0] == 401

    run(store, scenario, tokens=people, organiser_token=organiser, allowed_hosts=None)


def test_tokens_without_an_organiser_token_close_the_view(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        org = await person(None)
        status, data = await org.call("GET", "/api/organiser/session")
        assert data["available"] is False
        status, data = await org.call("POST", "/api/organiser/login", {"token": "x"})
        assert status == 403 and "annotate tokens" in data["error"]
        assert (await org.call("GET", "/api/organiser/overview"))[0] == 401

    run(store, scenario, tokens={"ann1": "t1"}, allowed_hosts=None)


async def _label_all(people: dict[str, Annotator], votes: dict[str, dict[str, str]]) -> None:
    for name, theirs in votes.items():
        for item_id, label in theirs.items():
            status, data = await people[name].label(item_id, label)
            assert status == 200, data


def test_progress_disagreements_and_ties(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        people = {n: await person(n) for n in ("ann1", "ann2", "ann3")}
        org = await person(None)
        await _label_all(
            people,
            {
                "ann1": {"i1": "yes", "i2": "yes", "i3": "no"},
                "ann2": {"i1": "no", "i2": "yes", "i3": "yes"},
            },
        )
        assert (await people["ann3"].next())["done"] is True  # two per item: all full
        _, data = await org.call("GET", "/api/organiser/overview")
        rows = {a["annotator"]: a for a in data["annotators"]}
        assert {n: (r["labelled"], r["yes"], r["no"]) for n, r in rows.items()} == {
            "ann1": (3, 2, 1),
            "ann2": (3, 2, 1),
            "ann3": (0, 0, 0),  # logged in, no label yet: listed all the same
        }
        assert rows["ann1"]["last"].endswith("Z") and rows["ann1"]["available"] == 0
        assert rows["ann3"]["last"] is None and rows["ann3"]["in_progress"] == 0
        assert data["overall"] == {
            "items": 3,
            "complete": 3,
            "labels": 6,
            "target": 6,
            "per_item": 2,
        }
        # i1 and i3 split 1-1 with no place left: ties to settle; i2 agreed
        assert [d["item_id"] for d in data["disagreements"]] == ["i1", "i3"]
        assert data["disagreements"][0]["votes"] == [
            {"annotator": "ann1", "label": "yes"},
            {"annotator": "ann2", "label": "no"},
        ]
        assert data["disagreements"][1]["query"] == "Tricky <b>query</b>"  # raw text
        assert data["tie_count"] == 2 and [t["item_id"] for t in data["ties"]] == ["i1", "i3"]
        assert [(e["url"], e["file"]) for e in data["exports"]] == [
            ("/api/organiser/export/jsonl", "annotations.jsonl"),
            ("/api/organiser/export/labelstudio", "labelstudio.json"),
            ("/api/organiser/export/halueval", "general_data.json"),
            ("/api/organiser/export/halueval?allow_partial=1", "general_data_partial.json"),
        ]
        assert [e.get("partial", False) for e in data["exports"]] == [False, False, False, True]

        # settle i1: one more place; ann3 gets it and breaks the tie
        assert (await org.call("POST", "/api/organiser/extra-place", {"item_id": "nope"}))[0] == 404
        status, data = await org.call("POST", "/api/organiser/extra-place", {"item_id": "i1"})
        assert status == 200 and data == {"item_id": "i1", "cap": 3}
        _, data = await org.call("GET", "/api/organiser/overview")
        assert [t["item_id"] for t in data["ties"]] == ["i3"]
        assert data["disagreements"][0]["free_places"] == 1
        assert data["overall"]["target"] == 7 and data["overall"]["complete"] == 2
        assert (await people["ann3"].next())["id"] == "i1"
        assert (await people["ann3"].label("i1", "yes"))[0] == 200
        assert (await people["ann3"].next())["done"] is True  # i2, i3 have their two
        _, data = await org.call("GET", "/api/organiser/overview")
        i1 = data["disagreements"][0]
        assert (i1["item_id"], i1["yes"], i1["no"], i1["free_places"]) == ("i1", 2, 1, 0)
        assert data["tie_count"] == 1 and data["overall"]["complete"] == 3

    run(store, scenario, per_item=2)


def test_a_split_item_with_a_free_place_is_not_a_tie_to_settle(store: Store) -> None:
    store.writer.put(
        [
            AnnotationRow("i1", "a", "yes", "[]", None, "import"),
            AnnotationRow("i1", "b", "no", "[]", None, "import"),
        ]
    )
    store.writer.flush_blocking(10)
    data = overview(Assigner(store, per_item=3))
    assert data["disagreement_count"] == 1 and data["tie_count"] == 0
    assert data["disagreements"][0]["free_places"] == 1


def test_exports(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        people = {n: await person(n) for n in ("ann1", "ann2")}
        org = await person(None)
        at = TRICKY.index("<b>bold</b>")
        span = {"start": at, "end": at + len("<b>bold</b>"), "kind": "irrelevant"}
        for name in people:
            assert (await people[name].label("i3", "yes", [span]))[0] == 200
        assert (await people["ann1"].label("i1", "no"))[0] == 200

        async with org.session.get(server.make_url("/api/organiser/export/jsonl")) as r:
            assert r.status == 200
            assert r.headers["Content-Disposition"] == 'attachment; filename="annotations.jsonl"'
            lines = [orjson.loads(line) for line in (await r.read()).splitlines()]
        assert sorted((x["item_id"], x["annotator"], x["label"]) for x in lines) == [
            ("i1", "ann1", "no"),
            ("i3", "ann1", "yes"),
            ("i3", "ann2", "yes"),
        ]
        assert lines[-1]["spans"][0]["text"] == "<b>bold</b>"
        async with org.session.get(server.make_url("/api/organiser/export/labelstudio")) as r:
            tasks = orjson.loads(await r.read())
        assert r.status == 200 and len(tasks) == 3
        async with org.session.get(server.make_url("/api/organiser/export/halueval")) as r:
            general = [orjson.loads(line) for line in (await r.read()).splitlines()]
        # neither item has its 3 labels yet: HaluEval's layout holds resolved items only
        assert r.status == 200 and general == []
        # the organiser page's partial link, as the overview gives it
        _, data = await org.call("GET", "/api/organiser/overview")
        (link,) = [e for e in data["exports"] if e.get("partial")]
        async with org.session.get(server.make_url(link["url"])) as r:
            general = [orjson.loads(line) for line in (await r.read()).splitlines()]
            disposition = r.headers["Content-Disposition"]
        assert r.status == 200
        assert disposition == f'attachment; filename="{link["file"]}"'
        assert {(g["ID"], g["hallucination"], g["n_labels"]) for g in general} == {
            ("i1", "no", 1),
            ("i3", "yes", 2),
        }
        assert (await org.call("GET", "/api/organiser/export/csv"))[0] == 404

    run(store, scenario)


def test_overview_counts_reach_past_the_listed_rows(store: Store) -> None:
    from halugen.annotate import organiser

    add_items(store, [(f"x{i:03}", "q", "r") for i in range(5)])
    rows = []
    for i in range(5):
        rows += [
            AnnotationRow(f"x{i:03}", "a", "yes", "[]", None, "import"),
            AnnotationRow(f"x{i:03}", "b", "no", "[]", None, "import"),
        ]
    store.writer.put(rows)
    store.writer.flush_blocking(10)
    old = organiser.MAX_LISTED
    organiser.MAX_LISTED = 2
    try:
        data = overview(Assigner(store, per_item=2))
    finally:
        organiser.MAX_LISTED = old
    assert data["disagreement_count"] == 5 and len(data["disagreements"]) == 2
    assert data["tie_count"] == 5 and len(data["ties"]) == 2
