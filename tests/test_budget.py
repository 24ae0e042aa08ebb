"""Budget parsing, price cards and the ledger (on a virtual clock: no real waiting)."""

from __future__ import annotations

import asyncio

import pytest

from halugen.budget import Ledger, PromptMargin
from halugen.cost.prices import (
    PUSD_PER_USD,
    ModelPrice,
    find_price,
    format_usd,
    load_price_cards,
    parse_budget,
)
from halugen.errors import BudgetExhausted, UsageError
from tests.virtual_time import run_virtual


@pytest.mark.parametrize(
    ("text", "usd"),
    [
        ("50usd", 50),
        ("$50", 50),
        ("12.5USD", 12.5),
        ("$ 0.25", 0.25),
        ("7 usd", 7),
        (" 3Usd ", 3),
    ],
)
def test_budget_forms(text, usd):
    assert parse_budget(text) == int(usd * PUSD_PER_USD)


@pytest.mark.parametrize(
    "text", ["50", "fifty", "-3usd", "50eur", "$", "", "usd", "$-1", "1e3usd", "0usd", "$0"]
)
def test_bad_budget_forms_name_the_accepted_ones(text):
    with pytest.raises(UsageError) as info:
        parse_budget(text)
    assert "50usd" in str(info.value) or "more than zero" in str(info.value)


def test_bundled_cards_have_dates_and_the_required_models():
    cards = {c.name: c for c in load_price_cards()}
    assert {"openai", "local"} <= set(cards)
    openai = cards["openai"]
    assert openai.date
    for model in (
        "gpt-4o-mini",
        "gpt-4o",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-3.5-turbo",
    ):
        price = openai.lookup(model)
        assert price is not None and price.input > 0 and price.output > 0, model
        assert price.context_window > 0 and price.tokenizer


def test_price_lookup_snapshot_names_local_card_and_overrides():
    mini = find_price("gpt-4o-mini-2024-07-18")
    assert mini is not None and mini.model == "gpt-4o-mini"
    # $0.15 / $0.60 per million tokens
    assert mini.cost(1_000_000, 0) == int(0.15 * PUSD_PER_USD)
    assert mini.cost(0, 1_000_000) == int(0.60 * PUSD_PER_USD)
    assert mini.cost(1000, 0, cached_tokens=1000) == 1000 * mini.cached_input
    assert find_price("llama-3-8b") is None  # never priced at $0 silently
    local = find_price("llama-3-8b", card="local")
    assert local is not None and local.cost(10**6, 10**6) == 0
    given = find_price("llama-3-8b", price_in=1.0, price_out=2.0)
    assert given is not None and given.cost(10**6, 10**6) == 3 * PUSD_PER_USD
    with pytest.raises(UsageError):
        find_price("x", price_in=1.0)
    with pytest.raises(UsageError):
        find_price("x", card="no-such-card")


def test_own_card_file(tmp_path):
    card = tmp_path / "mine.toml"
    card.write_text('date = "2026-01-01"\n[models."m1"]\ninput = 1.0\noutput = 4.0\n')
    price = find_price("m1", card=str(card))
    assert price is not None and price.cost(10**6, 0) == PUSD_PER_USD


def test_format_usd():
    assert format_usd(None) == "unlimited"
    assert format_usd(0) == "$0"
    assert format_usd(parse_budget("$12.5")) == "$12.5000"
    assert format_usd(int(0.000123 * PUSD_PER_USD)) == "$0.000123"


def test_ledger_reserves_settles_and_exhausts():
    async def main() -> None:
        ledger = Ledger(100)
        a = await ledger.reserve(60)
        assert ledger.remaining == 40
        ledger.settle(a, 30)  # reported usage below the worst case: the rest comes back
        assert (ledger.spent, ledger.reserved) == (30, 0)
        b = await ledger.reserve(70)
        ledger.release(b)
        assert ledger.spent == 30
        c = await ledger.reserve(70)
        ledger.consume(c)  # outcome unknown: counted as spent
        assert ledger.spent == 100 and ledger.remaining == 0
        with pytest.raises(BudgetExhausted):
            await ledger.reserve(1)
        assert ledger.exhausted

    run_virtual(main())


def test_ledger_waits_for_in_flight_calls_then_serves_in_order():
    async def main() -> list[str]:
        ledger = Ledger(100)
        first = await ledger.reserve(80)
        order: list[str] = []

        async def want(name: str, amount: int) -> None:
            try:
                r = await ledger.reserve(amount)
            except BudgetExhausted:
                order.append(f"{name}:exhausted")
                return
            order.append(name)
            await asyncio.sleep(1)
            ledger.settle(r, amount)

        tasks = [asyncio.create_task(want("big", 50)), asyncio.create_task(want("small", 10))]
        await asyncio.sleep(0.1)
        assert order == []  # the big one waits at the head; the small one may not overtake
        ledger.settle(first, 40)  # 60 left
        await asyncio.gather(*tasks)
        return order

    order = run_virtual(main())
    assert order == ["big", "small"]


def test_ledger_fails_a_waiter_that_can_never_fit():
    async def main() -> None:
        ledger = Ledger(100)
        first = await ledger.reserve(90)
        waiter = asyncio.create_task(ledger.reserve(50))
        await asyncio.sleep(0)
        ledger.settle(first, 90)  # nothing in flight any more and 50 does not fit
        with pytest.raises(BudgetExhausted):
            await waiter

    run_virtual(main())


def test_cancelled_waiter_gives_its_place_back():
    async def main() -> None:
        ledger = Ledger(100)
        first = await ledger.reserve(90)
        waiter = asyncio.create_task(ledger.reserve(50))
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.sleep(0)
        ledger.settle(first, 10)
        r = await ledger.reserve(80)
        assert ledger.reserved == 80
        ledger.release(r)

    run_virtual(main())


def test_a_cancelled_head_waiter_lets_the_one_behind_it_in_at_once():
    # FIFO: a small request waits behind a big one; when the big one is cancelled the small
    # one fits now and must not wait for some unrelated settle to pump the queue
    async def main() -> None:
        ledger = Ledger(100)
        first = await ledger.reserve(90)
        big = asyncio.create_task(ledger.reserve(50))
        await asyncio.sleep(0)
        small = asyncio.create_task(ledger.reserve(5))
        await asyncio.sleep(0)
        assert not small.done()  # behind the big one
        big.cancel()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert small.done() and ledger.reserved == 95
        ledger.release(small.result())
        ledger.release(first)

    run_virtual(main())


def test_unlimited_ledger_counts():
    async def main() -> None:
        ledger = Ledger(None)
        r = await ledger.reserve(10**15)
        ledger.settle(r, 5)
        assert ledger.spent == 5 and ledger.remaining is None

    run_virtual(main())


def test_prompt_margin_follows_reported_over_estimated():
    m = PromptMargin(initial=1.25, warmup=3)
    assert m.reserve_tokens(1000) == 1258
    for _ in range(3):
        m.observe(1000, 1100)
    assert m.factor == pytest.approx(1.1 * 1.05)
    assert m.reserve_tokens(1000) >= 1100
    m.observe(1000, 800)  # lower ratios never lower the bound below the worst seen
    assert m.factor == pytest.approx(1.1 * 1.05)


def test_model_price_record_round_trip():
    p = ModelPrice.per_million("m", 2.5, 10.0, 1.25)
    rec = p.as_record()
    assert rec["usd_per_million_input"] == pytest.approx(2.5)
    assert rec["usd_per_million_output"] == pytest.approx(10.0)


def test_ledger_counts_queued_money_apart_until_its_request_leaves():
    async def main() -> None:
        ledger = Ledger(100)
        a = await ledger.reserve(30, queued=True)
        b = await ledger.reserve(20, queued=True)
        assert (ledger.reserved, ledger.queued, ledger.at_provider) == (50, 50, 0)
        ledger.leaving(a)
        assert (ledger.queued, ledger.at_provider) == (20, 30)
        ledger.release(b)  # released before it left (Ctrl-C): nothing spent
        assert (ledger.reserved, ledger.queued, ledger.spent) == (30, 0, 0)
        ledger.settle(a, 25)
        assert (ledger.reserved, ledger.queued, ledger.spent) == (0, 0, 25)
        c = await ledger.reserve(75)  # not queued: at the provider at once (batch mode)
        assert ledger.at_provider == 75
        ledger.consume(c)

    run_virtual(main())


def test_settling_more_than_reserved_is_spent_and_counted_as_an_overshoot():
    async def main() -> None:
        ledger = Ledger(100)
        r = await ledger.reserve(60)
        assert ledger.settle(r, 70) == 10  # the provider counted more tokens than we did
        assert (ledger.spent, ledger.reserved) == (70, 0)
        assert (ledger.overshoot, ledger.overshoots) == (10, 1)
        ok = await ledger.reserve(20)
        assert ledger.settle(ok, 5) == 0
        assert ledger.overshoots == 1
        assert ledger.settle(ok, 50) == 0  # closing twice changes nothing
        assert ledger.spent == 75

    run_virtual(main())


def test_prompt_margin_keeps_its_initial_headroom_over_the_ratio_while_warming_up():
    m = PromptMargin(initial=1.25, warmup=3)
    assert not m.calibrated
    m.observe(1000, 1600)  # a tokenizer counting 1.6x ours
    assert m.calibrated and m.ratio == pytest.approx(1.6)
    assert m.factor == pytest.approx(1.6 * 1.25)  # one text's ratio says little of the next
    m.observe(1000, 1700)
    m.observe(1000, 1650)
    assert m.factor == pytest.approx(1.7 * 1.05)


def test_the_first_call_alone_waits_the_others_until_it_is_answered():
    from halugen.llm.calibration import FirstCallAlone

    async def main() -> list[str]:
        margin = PromptMargin()
        gate = FirstCallAlone(margin)
        order: list[str] = []

        async def call(name: str, answered: bool) -> None:
            alone = await gate.turn()
            order.append(f"{name}:{'alone' if alone else 'with others'}")
            await asyncio.sleep(1)
            if answered:
                margin.observe(100, 160)
            gate.done(alone, answered)

        await asyncio.gather(call("a", False), call("b", True), call("c", True))
        return order

    # a fails (no usage learned), so b calibrates alone; c goes once b is answered
    assert run_virtual(main()) == ["a:alone", "b:alone", "c:with others"]


def test_cards_describe_prompt_caching_batch_caching_and_service_tiers(tmp_path):
    card = tmp_path / "prov.toml"
    card.write_text(
        'date = "2026-12-02"\nbatch_discount = 0.5\n'
        "[caching]\nmin_prefix_tokens = 512\nincrement_tokens = 64\nidle_retention_s = 600\n"
        'batch = false\nsource = "https://example.org/caching"\ndate = "2026-12-01"\n'
        '[models."a"]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\nbatch_caching = true\n'
        '[models."a".tiers.flex]\ninput = 0.5\ncached_input = 0.05\noutput = 2.0\n'
        '[models."b"]\ninput = 1.0\ncached_input = 0.5\noutput = 4.0\n'
        '[models."c"]\ninput = 1.0\noutput = 4.0\n'
    )
    a = find_price("a", card=str(card))
    b = find_price("b", card=str(card))
    c = find_price("c", card=str(card))
    assert a is not None and b is not None and c is not None
    rules = a.caching
    assert rules is not None and (rules.min_tokens, rules.step_tokens, rules.idle_s) == (
        512,
        64,
        600.0,
    )
    assert rules.source == "https://example.org/caching" and rules.date == "2026-12-01"
    # hits start at the minimum and grow in whole steps
    assert [rules.cacheable(n) for n in (511, 512, 575, 576, 700)] == [0, 512, 512, 576, 640]
    assert a.caches and a.batch_caches  # the model says its batch lines are cached
    assert b.caches and not b.batch_caches  # the card's default: not in batches
    assert not c.caches and not c.batch_caches  # no cached price: no discount to expect
    (flex,) = a.tiers
    assert flex.name == "flex"
    assert flex.cost(10**6, 10**6, 10**6) == (5 + 200) * PUSD_PER_USD // 100  # $0.05 + $2
    assert a.as_record()["batch_caching"] is True and a.as_record()["cache_min_tokens"] == 512


def test_cards_without_caching_still_load_and_expect_no_cache(tmp_path):
    card = tmp_path / "old.toml"
    card.write_text(
        'date = "2025-01-01"\n[models."m"]\ninput = 1.0\ncached_input = 0.5\noutput = 2\n'
    )
    price = find_price("m", card=str(card))
    assert price is not None and price.caching is None and not price.caches and not price.tiers
    openai = {c.name: c for c in load_price_cards()}["openai"]
    assert openai.caching is not None and openai.caching.min_tokens == 1024
    assert openai.caching.step_tokens == 128 and openai.caching.date and openai.caching.source
    for model in ("gpt-5", "gpt-5-mini", "gpt-5-nano"):  # the Batch API caches GPT-5 models
        price = openai.lookup(model)
        assert price is not None and price.batch_caches, model
        (flex,) = price.tiers  # flex: Batch API rates, cached input included
        assert flex.input * 2 == price.input and flex.cached_input * 2 == price.cached_input
    for model in ("gpt-4o-mini", "gpt-4.1-mini"):
        price = openai.lookup(model)
        assert price is not None and price.caches and not price.batch_caches, model


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[caching]\nmin_prefix_tokens = 0\n", "at least 1"),
        ('[caching]\nincrement_tokens = "many"\n', "[caching]"),
        ('[caching]\nbatch = "yes"\n', "[caching]"),
        ("caching = 3\n", "must be a table"),
        ('[models."m"]\ninput = 1\noutput = 2\nbatch_caching = 1\n', "batch_caching"),
        ('[models."m"]\ninput = 1\noutput = 2\n[models."m".tiers.flex]\ninput = 1\n', "tier"),
    ],
)
def test_bad_caching_entries_are_one_line_errors_naming_the_card(tmp_path, text, says):
    from halugen.errors import ConfigError

    card = tmp_path / "bad.toml"
    card.write_text('date = "2026-01-01"\n' + text)
    with pytest.raises(ConfigError) as info:
        find_price("m", card=str(card))
    message = str(info.value)
    assert str(card) in message and says in message and "\n" not in message


def test_prices_from_the_command_line_keep_the_cards_batch_discount():
    card = find_price("gpt-4o-mini")
    given = find_price("gpt-4o-mini", price_in=1.0, price_out=2.0)
    assert card is not None and given is not None and card.batch_discount > 0
    assert given.batch_discount == card.batch_discount and given.card == "command line"
    unknown = find_price("my-local-model", price_in=1.0, price_out=2.0)
    assert unknown is not None and unknown.batch_discount == 0


def test_open_reservations_hold_at_most_the_share_of_the_budget_left():
    async def main() -> None:
        # $1,000 budget, 250 of it spent: a quarter of the 750 left is 187
        ledger = Ledger(1000, spent=250, in_flight_share=0.25)
        assert ledger.in_flight_cap == 187
        held = [await ledger.reserve(60) for _ in range(3)]  # 180: a fourth would be 240
        fourth = asyncio.create_task(ledger.reserve(60))
        await asyncio.sleep(1)
        assert not fourth.done()  # the budget has room (it would be 490 of 750): the share not
        assert ledger.reserved == 180 <= ledger.in_flight_cap
        ledger.settle(held[0], 10)  # spent 260, a quarter of 740 = 185; 120 held + 60 fits
        r = await asyncio.wait_for(fourth, 1)
        assert ledger.reserved == 180 and ledger.in_flight_cap == 185
        # the bound follows what is left: settling more shrinks it
        for x in (*held[1:], r):
            ledger.settle(x, 60)
        assert (ledger.spent, ledger.in_flight_cap) == (440, 140)

    run_virtual(main())


def test_a_reservation_above_the_share_goes_alone():
    async def main() -> None:
        ledger = Ledger(100, in_flight_share=0.25)  # 25 at most at once
        big = await ledger.reserve(40)  # above the share, but nothing else is open
        small = asyncio.create_task(ledger.reserve(5))
        await asyncio.sleep(1)
        assert not small.done()  # 45 would be held: it waits for the big one
        ledger.settle(big, 40)  # 60 left: 15 at most at once
        assert (await asyncio.wait_for(small, 1)).amount == 5
        # what never fits the budget still ends the run, share or not
        with pytest.raises(BudgetExhausted):
            await Ledger(100, spent=90, in_flight_share=0.25).reserve(11)

    run_virtual(main())


def test_without_a_share_or_a_budget_reservations_are_only_bounded_by_the_budget():
    async def main() -> None:
        ledger = Ledger(100)
        assert ledger.in_flight_cap is None
        assert sum([(await ledger.reserve(20)).amount for _ in range(5)]) == 100
        unlimited = Ledger(None, in_flight_share=0.25)
        assert unlimited.in_flight_cap is None
        await unlimited.reserve(10**15)

    run_virtual(main())
