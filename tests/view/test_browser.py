"""The view page in a real headless browser (Debian's chromium driven by Playwright;
``tests/browser.py`` says when it is skipped): filters, keys, a seed's story with its
marked words and cost, markup shown as text, and nothing wider than a phone."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

from halugen.view.serving import ViewServer, serve
from halugen.view.worddiff import word_diff
from tests.browser import sync_api

from .simstore import ARTIFACT_SEEDS, SEEDS, TRICKY_QUESTION, TRICKY_SEED, SimStore

PHONE = {"width": 375, "height": 740}


@pytest.fixture
def view(sim_store: SimStore) -> Iterator[ViewServer]:
    """The view of the simulated run's store, served from a thread of its own."""
    loop = asyncio.new_event_loop()
    box: dict[str, Any] = {}
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            box["server"] = loop.run_until_complete(serve(sim_store.db, port=0))
        except BaseException as exc:
            box["error"] = exc
        finally:
            ready.set()
        if "server" in box:
            loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "view server did not start"
    if "error" in box:
        raise box["error"]
    server: ViewServer = box["server"]
    yield server
    asyncio.run_coroutine_threadsafe(server.close(), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(30)
    loop.close()


@pytest.fixture(scope="module")
def facts(sim_store: SimStore) -> dict[str, dict[str, Any]]:
    """What the store says of each seed (its texts, the money of its calls), by seed id;
    read before the view serves it (in this process the view's open file would be in the
    way of another connection)."""
    with duckdb.connect(str(sim_store.db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT s.seed_id, p.right_answer, p.hallucinated_answer, p.seed_key IS NOT NULL, "
            "(SELECT sum(cost_usd) FROM calls c WHERE c.seed_key = s.seed_key) "
            "FROM seeds s LEFT JOIN sample_rows p USING (run_id, task, seed_key)"
        ).fetchall()
    return {
        seed_id: {"right": right, "hallucinated": hallucinated, "sampled": sampled, "cost": cost}
        for seed_id, right, hallucinated, sampled, cost in rows
    }


def money(usd: float) -> str:
    return f"${usd:.6f}" if usd < 0.01 else f"${usd:.4f}"


def open_page(
    context: Any, server: ViewServer, viewport: dict[str, int] | None = None
) -> tuple[Any, list[str]]:
    page = context.new_page()
    if viewport is not None:
        page.set_viewport_size(viewport)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"error: {exc}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(server.url)
    assert page.url == server.base_url  # the token went into a cookie, out of the address
    sync_api.expect(page.locator("#count")).to_have_text(f"{SEEDS} seeds")
    return page, problems


def selected_id(page: Any) -> str:
    return str(page.locator("#list li[aria-selected='true'] .preview").text_content())


def test_filter_keys_and_a_seeds_story(
    facts: dict[str, dict[str, Any]], view: ViewServer, browser: Any
) -> None:
    expect = sync_api.expect
    _, context = browser
    page, problems = open_page(context, view)
    items = page.locator("#list li.seed")
    expect(items).to_have_count(SEEDS)
    expect(page.locator("#source")).to_have_text("store file")
    assert page.locator("#f-verify-label").is_hidden()  # no verify stage wrote to this store

    # "/" searches; Esc leaves the box for the list, the filter stays
    page.locator("body").press("/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.type("Brun5 was")
    expect(items).to_have_count(1)
    expect(page.locator("#count")).to_have_text("1 seed")
    page.keyboard.press("Escape")
    expect(page.locator("#list")).to_be_focused()
    page.locator("#q").fill("")
    expect(items).to_have_count(SEEDS)

    # the guard and outcome filters: the seeds the guards turned down
    page.select_option("#f-guard", "contains_right_answer")
    expect(items).to_have_count(len(ARTIFACT_SEEDS))
    page.select_option("#f-outcome", "sampled")
    expect(page.locator("#list li.empty")).to_have_text("No seed matches these filters.")
    page.select_option("#f-guard", "")
    expect(items).to_have_count(SEEDS - len(ARTIFACT_SEEDS))
    # the cost range: between the two dearest sampled seeds' costs, only the dearest is left
    costs = sorted(f["cost"] for f in facts.values() if f["sampled"])
    top = sorted(set(costs))[-2:]
    page.fill("#f-cost-min", repr(sum(top) / 2))
    expect(items).to_have_count(costs.count(top[-1]))
    page.fill("#f-cost-max", repr(top[-1] * 2))
    expect(items).to_have_count(costs.count(top[-1]))
    page.fill("#f-cost-max", repr(sum(top) / 4))
    expect(page.locator("#list li.empty")).to_be_visible()
    page.fill("#f-cost-max", "")
    page.fill("#f-cost-min", "")
    expect(items).to_have_count(SEEDS - len(ARTIFACT_SEEDS))

    # keys: j, j, k -> the second seed; Enter opens it
    page.locator("#list").focus()
    first = selected_id(page)
    page.keyboard.press("j")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("k")
    second = selected_id(page)
    assert second != first
    assert page.locator("#list li.seed").nth(1).get_attribute("aria-selected") == "true"
    page.keyboard.press("Enter")
    expect(page.locator("#detail-view")).to_be_visible()
    expect(page.locator("#list-view")).to_be_hidden()
    seed_id = page.locator("#d-title").text_content()
    assert seed_id and seed_id.startswith("rec")
    row = facts[seed_id]

    # right vs hallucinated, the changed words marked, the texts whole
    expect(page.locator("#d-right")).to_have_text(row["right"])
    expect(page.locator("#d-hallucinated")).to_have_text(row["hallucinated"])
    left, other = word_diff(row["right"], row["hallucinated"])
    assert page.locator("#d-right mark.changed").all_text_contents() == [t for t, c in left if c]
    assert page.locator("#d-hallucinated mark.changed").all_text_contents() == [
        t for t, c in other if c
    ]
    assert page.locator("#d-hallucinated mark.changed").count() >= 1
    # the calls it took and their cost, as the store's calls count them
    calls = page.locator("#d-calls tbody tr")
    assert calls.count() >= 2
    expect(page.locator("#d-cost")).to_contain_text(money(row["cost"]))
    expect(page.locator("#d-meta .cost")).to_have_text(f"cost {money(row['cost'])}")
    expect(page.locator("#d-candidates .verdict.kept")).to_have_count(1)

    # j opens the next seed, Esc goes back to the list with it selected
    page.keyboard.press("j")
    expect(page.locator("#d-title")).not_to_have_text(seed_id)
    third = page.locator("#d-title").text_content()
    page.keyboard.press("Escape")
    expect(page.locator("#list-view")).to_be_visible()
    assert page.locator("#list li.seed").nth(2).get_attribute("aria-selected") == "true"
    page.keyboard.press("Enter")
    expect(page.locator("#d-title")).to_have_text(str(third))
    assert problems == []


def test_a_seed_the_guards_turned_down(view: ViewServer, browser: Any) -> None:
    expect = sync_api.expect
    _, context = browser
    page, problems = open_page(context, view)
    page.select_option("#f-outcome", "rejected")
    expect(page.locator("#list li.seed")).to_have_count(len(ARTIFACT_SEEDS))
    expect(page.locator("#list li.seed").first.locator(".tag.reason")).to_have_text(
        "no_valid_candidate"
    )
    page.locator("#list li.seed").first.click()
    expect(page.locator("#detail-view")).to_be_visible()
    assert page.locator("#d-hallucinated-side").is_hidden()  # no sample: no pair
    expect(page.locator("#d-right")).not_to_be_empty()
    whys = page.locator("#d-candidates .why").all_text_contents()
    assert whys[0].startswith("turned down by the guard contains_right_answer")
    assert whys[1].startswith("turned down by the guard length_class")
    expect(page.locator("#d-meta")).to_contain_text("reason no_valid_candidate")
    page.locator("#back").click()
    expect(page.locator("#list-view")).to_be_visible()
    assert problems == []


def overflow(page: Any) -> list[str]:
    """What sticks out to the right of the window (none of it may)."""
    return page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            const out = [];
            if (document.documentElement.scrollWidth > width) out.push("document");
            for (const node of document.querySelectorAll("body *")) {
                const r = node.getBoundingClientRect();
                if (r.width && r.right > width + 0.5) out.push(node.tagName + "#" + node.id);
            }
            return out;
        }"""
    )


def test_at_phone_width_nothing_overflows_and_markup_is_text(
    view: ViewServer, browser: Any
) -> None:
    expect = sync_api.expect
    _, context = browser
    page, problems = open_page(context, view, viewport=PHONE)
    assert page.evaluate("document.documentElement.clientWidth") == PHONE["width"]
    assert overflow(page) == []
    # the record with markup and a long word: shown as typed, wrapped
    page.locator("body").press("/")
    page.keyboard.type("onerror")
    expect(page.locator("#list li.seed")).to_have_count(1)
    expect(page.locator("#list li.seed .preview")).to_have_text(TRICKY_QUESTION)
    assert page.locator("#list img, #list b").count() == 0
    assert overflow(page) == []
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    expect(page.locator("#detail-view")).to_be_visible()
    expect(page.locator("#d-title")).to_have_text(f"rec{TRICKY_SEED:05d}")
    assert page.locator("#detail-view img, #detail-view b").count() == 0
    assert overflow(page) == []
    # the two texts stack at this width
    right = page.locator("#d-right").bounding_box()
    other = page.locator("#d-hallucinated").bounding_box()
    if other is not None:
        assert other["y"] > right["y"] + right["height"] - 1
    page.keyboard.press("Escape")
    page.locator("#q").fill("")
    expect(page.locator("#list li.seed")).to_have_count(SEEDS)
    assert overflow(page) == []
    assert problems == []
