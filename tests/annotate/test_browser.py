"""The annotation page in a real headless browser (Debian's chromium driven by Playwright;
``tests/browser.py`` says when it is skipped)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from halugen.annotate.serving import AnnotateServer, ServeOptions, serve
from halugen.store.db import open_store
from halugen.store.rows import AnnotationItemRow
from tests.browser import sync_api

# an astral character before the span: JS counts it as 2 units, the store as 1 code point
RESPONSE1 = (
    "Paris \U0001f5fc \u2014 the Eiffel Tower was finished in 1999 by Gustave "
    "Eiffel.\nIt is 330 m tall."
)
SPAN1 = "in 1999"
QUERY2 = "<img src=x onerror=alert(2)> Which <b>tag</b>?"
RESPONSE2 = '<script>alert(1)</script><img src=x onerror="alert(3)"> plain & text'
ITEMS = [
    ("item-1", "When was the Eiffel Tower finished?", RESPONSE1),
    ("item-2", QUERY2, RESPONSE2),
    ("item-3", "Who wrote Hamlet?", "Hamlet was written by Charles Dickens."),
    ("item-4", "What is 2 + 2?", "2 + 2 is 4."),
]


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class Served:
    server: AnnotateServer
    db: Path
    stop: Callable[[], None]  # stops the server; the store file is then free to open here


def start_server(
    db: Path, items: list[tuple[str, str, str]] = ITEMS, **serve_kwargs: Any
) -> Served:
    """The annotation server on a free port in a thread of its own, over ``items``."""
    with open_store(db) as store:
        store.writer.put([AnnotationItemRow(i, "jsonl", None, q, r, None) for i, q, r in items])
        store.writer.flush_blocking(10)

    loop = asyncio.new_event_loop()
    box: dict[str, Any] = {}
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            box["server"] = loop.run_until_complete(serve(db, ServeOptions(port=0, **serve_kwargs)))
        except BaseException as exc:
            box["error"] = exc
        finally:
            ready.set()
        if "server" in box:
            loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "annotation server did not start"
    if "error" in box:
        raise box["error"]
    server: AnnotateServer = box["server"]
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            asyncio.run_coroutine_threadsafe(server.close(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
            if not loop.is_running():
                loop.close()

    return Served(server, db, stop)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``launch(items, **serve_kwargs)``: a server; every one is stopped after the test."""
    started: list[Served] = []

    def start(items: list[tuple[str, str, str]] = ITEMS, **kwargs: Any) -> Served:
        served = start_server(tmp_path / f"web{len(started)}.duckdb", items, **kwargs)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture
def served(launch: Callable[..., Served]) -> Served:
    return launch()


def select_with_mouse(page: Any, start: int, end: int) -> None:
    """Drag the mouse over response characters [start, end) (UTF-16 units)."""
    box = page.evaluate(
        """([s, e]) => {
            const node = document.getElementById("response").firstChild;
            const r = document.createRange();
            r.setStart(node, s); r.setEnd(node, s + 1);
            const a = r.getBoundingClientRect();
            r.setStart(node, e - 1); r.setEnd(node, e);
            const b = r.getBoundingClientRect();
            return {x1: a.left + 1, y1: a.top + a.height / 2,
                    x2: b.right - 1, y2: b.top + b.height / 2};
        }""",
        [start, end],
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move(box["x2"], box["y2"], steps=8)
    page.mouse.up()


def test_label_with_mouse_reload_escaping_and_majority(served: Served, browser: Any) -> None:
    server, db = served.server, served.db
    p, context = browser
    expect = sync_api.expect
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url)

    # a name with markup is refused and echoed as text, not as an element
    page.fill("#login-name", "<b>bold</b>")
    page.click("#login-submit")
    expect(page.locator("#login-error")).to_contain_text("“<b>bold</b>”")
    assert page.locator("#login-error *").count() == 0
    assert page.locator("b").count() == 0

    page.fill("#login-name", "ann1")
    page.click("#login-submit")
    expect(page.locator("#annotator-name")).to_have_text("ann1")
    expect(page.locator("#position")).to_have_text("1 of 4")
    expect(page.locator("#query")).to_have_text(ITEMS[0][1])
    assert page.locator("#response").text_content() == RESPONSE1
    # a newcomer gets the guidelines open; g closes them (and brings the item into view)
    expect(page.locator("#guidelines")).to_have_attribute("open", "")
    page.keyboard.press("g")
    expect(page.locator("#guidelines")).not_to_have_attribute("open", "")

    # select "in 1999" with the mouse, tag it non-factual (key 2)
    at = RESPONSE1.index(SPAN1)
    u16 = utf16_len(RESPONSE1[:at])
    assert u16 == at + 1  # the tower emoji: the two coordinate systems differ here
    select_with_mouse(page, u16, u16 + len(SPAN1))
    assert page.evaluate("window.getSelection().toString()") == SPAN1
    page.keyboard.press("2")
    mark = page.locator("#response mark")
    expect(mark).to_have_count(1)
    expect(mark).to_have_text(SPAN1)
    expect(mark).to_have_class("span kind-non-factual")
    expect(page.locator("#spans li")).to_have_count(1)
    page.keyboard.press("y")
    expect(page.locator("#label-yes")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#status")).to_have_class("saved")

    # "n" with a span present asks first; "k" keeps yes
    page.keyboard.press("n")
    expect(page.locator("#confirm-no")).to_be_visible()
    page.keyboard.press("k")
    expect(page.locator("#confirm-no")).to_be_hidden()
    expect(page.locator("#label-yes")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#spans li")).to_have_count(1)

    # reload: the label and the span come back from the store
    page.reload()
    expect(page.locator("#response mark")).to_have_text(SPAN1)
    expect(page.locator("#response mark")).to_have_class("span kind-non-factual")
    expect(page.locator("#label-yes")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#status")).to_have_class("saved")
    assert page.locator("#response").text_content() == RESPONSE1

    # Enter: save & next -> the item with markup in its query and response
    page.keyboard.press("Enter")
    expect(page.locator("#position")).to_have_text("2 of 4")
    assert page.locator("#response").text_content() == RESPONSE2
    assert page.locator("#query").text_content() == QUERY2
    assert page.locator("#response *").count() == 0
    assert page.locator("#query *").count() == 0
    assert page.locator("script").count() == 2  # api.js and app.js only: no markup ran
    assert page.locator("img").count() == 0
    page.keyboard.press("n")
    expect(page.locator("#status")).to_have_class("saved")
    expect(page.locator("#progress-text")).to_contain_text("You: 2 labelled, 2 to go")

    # ← goes back to the first item with its label
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#position")).to_have_text("1 of 4")
    expect(page.locator("#response mark")).to_have_text(SPAN1)

    # Backspace removes the last span (and saves); y and a new mouse selection bring it back
    page.keyboard.press("Backspace")
    expect(page.locator("#response mark")).to_have_count(0)
    expect(page.locator("#status")).to_have_class("saved")
    select_with_mouse(page, u16, u16 + len(SPAN1))
    page.locator("button.tag.kind-non-factual").click()  # the button instead of the key
    expect(page.locator("#response mark")).to_have_text(SPAN1)
    expect(page.locator("#status")).to_have_class("saved")
    assert dialogs == []
    assert errors == []

    # three annotators on the same items: ann1's remaining ones and ann2, ann3 via the API
    votes = {  # item: (ann1, ann2, ann3)
        "item-1": ("yes", "yes", "no"),
        "item-2": ("no", "no", "no"),
        "item-3": ("yes", "yes", "yes"),
        "item-4": ("no", "no", "no"),
    }
    year = RESPONSE1.index("1999")
    hdr = {"X-Halugen": "1"}
    r = page.request.post(
        server.url + "api/label",
        headers=hdr,
        data={"item_id": "item-3", "label": "yes", "spans": []},
    )
    assert r.ok, r.text()
    r = page.request.post(
        server.url + "api/label",
        headers=hdr,
        data={"item_id": "item-4", "label": "no", "spans": []},
    )
    assert r.ok, r.text()
    for k, name in ((1, "ann2"), (2, "ann3")):
        api = p.request.new_context(base_url=server.url, extra_http_headers=hdr)
        try:
            assert api.post("api/login", data={"annotator": name}).ok
            assert api.get("api/next").json()["id"] == "item-1"
            for item_id, labels in votes.items():
                spans = []
                if labels[k] == "yes" and item_id == "item-1":
                    spans = [{"start": year, "end": year + 4, "kind": "non-factual"}]
                r = api.post(
                    "api/label", data={"item_id": item_id, "label": labels[k], "spans": spans}
                )
                assert r.ok, r.text()
            assert api.get("api/next").json() == {"done": True, "prev": "item-4"}
        finally:
            api.dispose()
    # a fourth annotator finds nothing left
    api = p.request.new_context(base_url=server.url, extra_http_headers=hdr)
    try:
        assert api.post("api/login", data={"annotator": "ann4"}).ok
        assert api.get("api/next").json() == {"done": True, "prev": None}
    finally:
        api.dispose()
    page.close()

    from halugen.annotate.resolve import resolve_all

    served.stop()
    with open_store(db) as store:
        rows = store.query(
            "SELECT spans_json FROM annotations_latest "
            "WHERE item_id = 'item-1' AND annotator = 'ann1'"
        )
        # offsets in the store's coordinates (code points), not the browser's UTF-16
        assert orjson.loads(rows[0][0]) == [
            {"start": at, "end": at + len(SPAN1), "text": SPAN1, "kind": "non-factual"}
        ]
        report = resolve_all(store)
        resolved = {
            r[0]: r[1:]
            for r in store.query(
                "SELECT item_id, label, spans_json, n_labels, method FROM annotation_resolved"
            )
        }
    assert {k: v[0] for k, v in resolved.items()} == {
        "item-1": "yes",
        "item-2": "no",
        "item-3": "yes",
        "item-4": "no",
    }
    assert all(v[2:] == (3, "majority") for v in resolved.values())
    # item-1: union of ann1's "in 1999" and ann2's "1999" (ann3 said no)
    assert orjson.loads(resolved["item-1"][1]) == [
        {"start": at, "end": at + len(SPAN1), "text": SPAN1, "kind": "non-factual"}
    ]
    # Fleiss by hand, columns (yes, no): [2,1] [0,3] [3,0] [0,3]
    # P-bar = (1/3 + 1 + 1 + 1) / 4 = 5/6; p_yes = 5/12, p_no = 7/12 -> P_e = 74/144
    # kappa = (5/6 - 74/144) / (1 - 74/144) = 46/70 = 23/35
    assert report.fleiss_kappa == pytest.approx(23 / 35)
    assert report.raters_per_item == {3: 4}


def select_range(page: Any, start: int, end: int, *, mouse: bool = True) -> None:
    """Select response characters [start, end) (UTF-16 units of the whole response text,
    across marks): with a mouse drag, or set directly as a keyboard user would."""
    script = """([s, e, useMouse]) => {
        const el = document.getElementById("response");
        const at = (u) => {
            const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
            let seen = 0, n;
            while ((n = w.nextNode())) {
                if (u < seen + n.nodeValue.length) return [n, u - seen];
                seen += n.nodeValue.length;
            }
            throw new Error("offset past the text");
        };
        const [n1, o1] = at(s), [n2, o2] = at(e - 1);
        if (!useMouse) {
            window.getSelection().setBaseAndExtent(n1, o1, n2, o2 + 1);
            return null;
        }
        const r = document.createRange();
        r.setStart(n1, o1); r.setEnd(n1, o1 + 1);
        const a = r.getBoundingClientRect();
        r.setStart(n2, o2); r.setEnd(n2, o2 + 1);
        const b = r.getBoundingClientRect();
        return {x1: a.left + 1, y1: a.top + a.height / 2,
                x2: b.right - 1, y2: b.top + b.height / 2};
    }"""
    box = page.evaluate(script, [start, end, mouse])
    if mouse:
        page.mouse.move(box["x1"], box["y1"])
        page.mouse.down()
        page.mouse.move(box["x2"], box["y2"], steps=8)
        page.mouse.up()


def wait_for_selection(page: Any, text: str) -> None:
    """Until the page's selection reads ``text`` (polled: the page's CSP forbids the string
    predicates ``wait_for_function`` would evaluate)."""
    got = None
    for _ in range(200):
        got = page.evaluate("window.getSelection().toString()")
        if got == text:
            return
        page.wait_for_timeout(25)
    raise AssertionError(f"selection is {got!r}, expected {text!r}")


def login(page: Any, name: str, token: str | None = None) -> None:
    page.fill("#login-name", name)
    if token is not None:
        page.fill("#login-token", token)
    page.click("#login-submit")
    sync_api.expect(page.locator("#annotator-name")).to_have_text(name)


WORDY = "Paris \U0001f5fc is famous for the tower; naïve visitors don't mind the café-goers."


def test_a_selection_snaps_to_whole_words(launch: Callable[..., Served], browser: Any) -> None:
    served = launch([("w1", "Tell me about Paris.", WORDY)])
    _, context = browser
    expect = sync_api.expect
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(served.server.url)
    login(page, "ann1")
    expect(page.locator("#position")).to_have_text("1 of 1")
    page.keyboard.press("g")  # close the newcomer's guidelines
    expect(page.locator("#guidelines")).not_to_have_attribute("open", "")

    def u16(cp: int) -> int:
        return utf16_len(WORDY[:cp])

    # "fo" inside "for": the selection on the screen grows to "for" as the mouse is let go
    at = WORDY.index("for")
    select_range(page, u16(at), u16(at + 2))
    wait_for_selection(page, "for")
    page.keyboard.press("1")
    expect(page.locator("#response mark")).to_have_text("for")
    expect(page.locator("#status")).to_have_class("saved")

    # from inside "tower" to inside "naïve": both edges move out to their words
    a, b = WORDY.index("ower"), WORDY.index("naï") + 3
    select_range(page, u16(a), u16(b))
    wait_for_selection(page, "tower; naïve")
    page.keyboard.press("2")
    expect(page.locator("#response mark")).to_have_count(2)
    expect(page.locator("#response mark").nth(1)).to_have_text("tower; naïve")

    # a selection made without the mouse snaps when it is tagged: "on" of "don't"
    at = WORDY.index("on't")
    select_range(page, u16(at), u16(at + 2), mouse=False)
    assert page.evaluate("window.getSelection().toString()") == "on"
    page.keyboard.press("3")
    expect(page.locator("#response mark")).to_have_count(3)
    expect(page.locator("#response mark").nth(2)).to_have_text("don't")
    # whole words already: nothing moves ("café" stops at the hyphen)
    at = WORDY.index("café")
    select_range(page, u16(at), u16(at + 4))
    page.keyboard.press("3")
    expect(page.locator("#response mark")).to_have_count(4)
    expect(page.locator("#response mark").nth(3)).to_have_text("café")
    expect(page.locator("#status")).to_have_class("saved")
    assert errors == []
    page.close()

    served.stop()
    with open_store(served.db) as store:
        (spans,) = store.query("SELECT spans_json FROM annotations_latest")[0]
    got = [(s["start"], s["end"], s["text"], s["kind"]) for s in orjson.loads(spans)]
    want = []
    for text, kind in (
        ("for", "unverifiable"),
        ("tower; naïve", "non-factual"),
        ("don't", "irrelevant"),
        ("café", "irrelevant"),
    ):
        at = WORDY.index(text)  # code points: the store's offsets
        want.append((at, at + len(text), text, kind))
    assert got == want


GUIDE = (
    "# Our rules\n\n"
    "- Mark <b>only</b> the wrong words\n  and nothing else\n"
    "- Ask Sam when unsure\n\n"
    "A paragraph with <script>alert(1)</script>\nover two lines.\n"
)


def test_guidelines_on_the_page(
    launch: Callable[..., Served], browser: Any, tmp_path: Path
) -> None:
    from halugen.annotate.guidelines import load_guidelines

    f = tmp_path / "team-guide.md"
    f.write_text(GUIDE)
    served = launch(guidelines=load_guidelines(f))
    _, context = browser
    expect = sync_api.expect
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(served.server.url)
    login(page, "ann1")
    expect(page.locator("#item")).to_be_visible()  # the keys below act on the shown item
    guide = page.locator("#guidelines")
    text = page.locator("#guidelines-text")
    expect(guide).to_have_attribute("open", "")  # a newcomer reads them first
    expect(text.locator("h3")).to_have_text("Our rules")
    expect(text.locator("li")).to_have_text(
        ["Mark <b>only</b> the wrong words and nothing else", "Ask Sam when unsure"]
    )
    expect(text.locator("p")).to_have_text(
        "A paragraph with <script>alert(1)</script> over two lines."
    )
    assert text.locator("b, script, img").count() == 0  # shown as text, never as HTML
    expect(page.locator("#guidelines-source")).to_have_text("From team-guide.md")
    page.keyboard.press("g")
    expect(guide).not_to_have_attribute("open", "")
    page.keyboard.press("g")
    expect(guide).to_have_attribute("open", "")

    # once they have labelled something, the guidelines start closed (the summary opens them)
    page.keyboard.press("n")
    expect(page.locator("#status")).to_have_class("saved")
    page.reload()
    expect(page.locator("#position")).to_have_text("1 of 4")
    expect(page.locator("#guidelines-source")).to_have_text("From team-guide.md")
    expect(guide).not_to_have_attribute("open", "")
    page.click("#guidelines summary")
    expect(guide).to_have_attribute("open", "")
    assert dialogs == []


def test_the_default_guidelines_on_the_page(served: Served, browser: Any) -> None:
    _, context = browser
    page = context.new_page()
    page.goto(served.server.url)
    login(page, "ann1")
    text = page.locator("#guidelines-text")
    sync_api.expect(page.locator("#guidelines-source")).to_have_text("halugen's default guidelines")
    body = text.text_content() or ""
    for kind in ("Unverifiable", "Non-factual", "Irrelevant"):
        assert kind in body
    assert body.count("Example:") == 3


def test_the_organiser_view(launch: Callable[..., Served], browser: Any) -> None:
    tokens = {"ann1": "token-1", "ann2": "token-2", "@organiser": "org-token"}
    items = [
        ("w1", "<b>Which</b> year?", "It was 1999."),
        ("w2", "Who?", "Gustave Eiffel."),
        ("w3", "Where?", "Paris."),
    ]
    served = launch(items, tokens=tokens, per_item=2)
    url = served.server.url
    p, context = browser
    expect = sync_api.expect
    hdr = {"X-Halugen": "1"}
    for name, votes in (("ann1", {"w1": "yes", "w2": "yes"}), ("ann2", {"w1": "no", "w2": "yes"})):
        api = p.request.new_context(base_url=url, extra_http_headers=hdr)
        try:
            assert api.post("api/login", data={"annotator": name, "token": tokens[name]}).ok
            for item_id, label in votes.items():
                r = api.post("api/label", data={"item_id": item_id, "label": label, "spans": []})
                assert r.ok, r.text()
        finally:
            api.dispose()

    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url + "organiser")
    expect(page.locator("#org-login")).to_be_visible()
    page.fill("#org-token", "token-1")  # an annotator's token is not the organiser's
    page.click("#org-login-submit")
    expect(page.locator("#org-login-error")).to_contain_text("wrong organiser token")
    page.fill("#org-token", "org-token")
    page.click("#org-login-submit")
    expect(page.locator("#org-view")).to_be_visible()

    rows = page.locator("#org-annotators tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td")).to_have_text(
        ["ann1", "2", "2", "0", "0", "1", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$")]
    )
    expect(page.locator("#org-overall")).to_contain_text("2 of 3 items complete")
    expect(page.locator("#org-tie-count")).to_have_text("1")
    tie = page.locator("#org-ties tbody tr")
    expect(tie).to_have_count(1)
    expect(tie.locator("td").nth(1)).to_have_text("<b>Which</b> year?")  # as text
    assert page.locator("#org-view b").count() == 0
    expect(tie.locator("td").nth(2)).to_have_text("ann1: yes, ann2: no")
    expect(page.locator("#org-disagreement-count")).to_have_text("1")

    # settle the tie: one more place, the tie list empties, the item waits for a third vote
    tie.locator("button.extra-place").click()
    expect(page.locator("#org-tie-count")).to_have_text("0")
    expect(page.locator("#org-no-ties")).to_be_visible()
    expect(page.locator("#org-disagreements tbody tr td").nth(5)).to_have_text("1")
    expect(page.locator("#org-overall")).to_contain_text("4 of 7 labels")

    # the export links download the store's labels
    link = page.locator("#org-exports a[data-format=jsonl]")
    expect(link).to_have_attribute("href", "/api/organiser/export/jsonl")
    with page.expect_download() as info:
        link.click()
    download = info.value
    assert download.suggested_filename == "annotations.jsonl"
    lines = Path(download.path()).read_bytes().splitlines()
    assert sorted((orjson.loads(x)["item_id"], orjson.loads(x)["label"]) for x in lines) == [
        ("w1", "no"),
        ("w1", "yes"),
        ("w2", "yes"),
        ("w2", "yes"),
    ]
    # the partial download has its own link, with what partial means beside it
    partial = page.locator("#org-exports a[data-partial='1']")
    expect(partial).to_have_attribute("href", "/api/organiser/export/halueval?allow_partial=1")
    expect(partial).to_contain_text("partly labelled")
    expect(partial.locator("xpath=..")).to_contain_text("fewer than 2 labels")
    with page.expect_download() as info:
        partial.click()
    assert info.value.suggested_filename == "general_data_partial.json"
    # logging out closes the view
    page.click("#org-logout")
    expect(page.locator("#org-login")).to_be_visible()
    r = page.request.get(url + "api/organiser/overview")
    assert r.status == 401
    assert errors == []


def test_the_organiser_lists_everyone_and_no_request_is_a_404(
    launch: Callable[..., Served], browser: Any
) -> None:
    """On loopback without tokens: an annotator who logged in but labelled nothing yet is
    listed; neither page asks for anything the server does not have (the favicon too)."""
    served = launch([("w1", "Which year?", "It was 1999."), ("w2", "Who?", "Eiffel.")])
    url = served.server.url
    p, context = browser
    expect = sync_api.expect
    missing: list[str] = []
    context.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    context.on("requestfailed", lambda r: missing.append(r.url))

    page = context.new_page()
    page.goto(url)
    page.fill("#login-name", "newcomer")
    page.click("#login-submit")
    expect(page.locator("#annotator-name")).to_have_text("newcomer")
    expect(page.locator("#position")).to_have_text("1 of 2")  # holds its first item
    api = p.request.new_context(base_url=url, extra_http_headers={"X-Halugen": "1"})
    try:  # someone else labels one item
        assert api.post("api/login", data={"annotator": "early"}).ok
        r = api.post("api/label", data={"item_id": "w1", "label": "yes", "spans": []})
        assert r.ok, r.text()
    finally:
        api.dispose()

    org = context.new_page()
    org.goto(url + "organiser")
    rows = org.locator("#org-annotators tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td").nth(0)).to_have_text("early")
    expect(rows.nth(1).locator("td")).to_have_text(["newcomer", "0", "0", "0", "1", "2", "—"])
    # the icon the pages link, and the one browsers ask for by themselves
    for path in ("favicon.ico", "static/favicon.svg"):
        r = org.request.get(url + path)
        assert r.status == 200 and r.headers["content-type"].startswith("image/svg+xml"), path
    page.reload()
    org.reload()
    expect(org.locator("#org-annotators tbody tr")).to_have_count(2)
    assert missing == []
