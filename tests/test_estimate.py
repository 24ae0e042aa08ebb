"""``halugen estimate``: the expected cost with and without prompt caching, in batches and
the card's cheaper tiers, per 1,000 accepted samples; the budget's worst case beside it.

Expected figures are recomputed here from the templates, the token counter and the price
card (or, for the cache share, measured on the simulator), never written down as numbers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from halugen.cli import main
from halugen.config import RateLimit, RetryPolicy, RunConfig
from halugen.cost.batch_prices import batch_cost
from halugen.cost.cache import fixed_opening
from halugen.cost.estimate import expected_cached
from halugen.cost.prices import find_price, format_usd
from halugen.engine import generate, load_tasks
from halugen.prompts import PER_MESSAGE_TOKENS, parse_template
from halugen.simulate import CacheConfig
from halugen.stages.estimate import estimate_task, estimate_ways
from halugen.tokens import get_counter
from tests.task_specs import task_spec

# a fixed opening long enough for OpenAI's 1,024-token minimum
LONG = " ".join(f"Rule {i}: keep the wrong answer as short as the right one." for i in range(150))


def long_prompts(tmp_path: Path, task: str = "qa") -> Path:
    """The bundled templates of ``task``, each opened by the same long system message."""
    out = tmp_path / "prompts"
    (out / task).mkdir(parents=True)
    folder = task_spec(task).folder
    assert folder is not None
    for path in (folder / "prompts").glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        at = text.index("\n=== ") + 1  # the first message (the header's prose may quote one)
        (out / task / path.name).write_text(
            text[:at] + f"=== system\n{LONG}\n\n" + text[at:], encoding="utf-8"
        )
    return out


def cfg_for(seeds: Path, **kw: object) -> RunConfig:
    return RunConfig(tasks=("qa",), seeds=(str(seeds),), model="gpt-4o-mini", **kw)  # type: ignore[arg-type]


def test_fixed_opening_counts_the_messages_up_to_the_first_field() -> None:
    counter = get_counter("cl100k_base")
    tpl = parse_template(
        "t", "=== system\nBe brief.\n=== user\nKnowledge: {{knowledge}}\nQ: {{question}}\n"
    )
    head = counter.count_static("Be brief.") + counter.count_static("Knowledge: ")
    # two messages' framing, their static text, less the token the field may join
    assert fixed_opening(tpl, counter) == 2 * PER_MESSAGE_TOKENS + head - 1
    static = parse_template("s", "=== user\nAlways the same.\n")
    assert fixed_opening(static, counter) == PER_MESSAGE_TOKENS + counter.count_static(
        "Always the same."
    )


def test_expected_cache_follows_the_cards_rules(hotpot_file, tmp_path) -> None:
    seeds = hotpot_file(25)
    cfg = cfg_for(seeds, prompts_dir=long_prompts(tmp_path))
    task = load_tasks([task_spec("qa")], cfg.prompts_dir)["qa"]
    price = find_price("gpt-4o-mini")
    assert price is not None and price.caching is not None
    e = estimate_task(cfg, task, price)
    counter = get_counter(price.tokenizer)
    templates = (*task.sample_templates, task.filter_template)
    openings = [fixed_opening(t, counter) for t in templates]
    assert min(openings) >= 1024  # the long system message made every opening cacheable
    rules = price.caching
    # every request of a template but its first gets the opening's cacheable part
    assert e.cached_tokens == sum(24 * rules.cacheable(n) for n in openings) > 0
    assert 0 < e.cache_share < 1

    ways = {m.name: m for m in e.modes}
    out_tokens = e.output_tokens_typical
    assert ways["interactive"].cost_pusd == price.cost(e.prompt_tokens, out_tokens)
    cached_cost = price.cost(e.prompt_tokens, out_tokens, e.cached_tokens)
    assert ways["interactive, cached"].cost_pusd == cached_cost < ways["interactive"].cost_pusd
    # OpenAI's Batch API caches nothing of gpt-4o-mini: half the uncached price
    assert "batch, cached" not in ways
    full = price.cost(e.prompt_tokens, out_tokens)
    assert ways["batch"].cost_pusd == batch_cost(price, full)
    # the budget still reserves the worst case: every call at max_tokens, nothing cached
    assert e.cost_max_pusd == price.cost(e.prompt_tokens, e.output_tokens_max)
    assert e.cost_max_pusd > ways["interactive"].cost_pusd

    # gpt-5-mini: cached batch lines, and the flex tier (batch rates, cache included)
    mini = find_price("gpt-5-mini")
    assert mini is not None
    e5 = estimate_task(cfg, task, mini)
    ways5 = {m.name: m for m in e5.modes}
    (flex,) = mini.tiers
    cost5 = mini.cost(e5.prompt_tokens, e5.output_tokens_typical, e5.cached_tokens)
    assert ways5["batch, cached"].cost_pusd == batch_cost(mini, cost5)
    assert ways5["flex, cached"].cost_pusd == flex.cost(
        e5.prompt_tokens, e5.output_tokens_typical, e5.cached_tokens
    )
    assert ways5["flex, cached"].cost_pusd < ways5["interactive, cached"].cost_pusd


def test_no_cache_without_caching_rules_or_a_cached_price(hotpot_file, tmp_path) -> None:
    cfg = cfg_for(hotpot_file(5), prompts_dir=long_prompts(tmp_path))
    task = load_tasks([task_spec("qa")], cfg.prompts_dir)["qa"]
    for price in (find_price("gpt-3.5-turbo"), find_price("any", card="local")):
        assert price is not None
        e = estimate_task(cfg, task, price)
        assert e.cached_tokens == 0
        assert [m.name for m in e.modes if "cached" in m.name] == []
    # a card's price given on the command line has no cached price: nothing saved
    priced = find_price("gpt-4o-mini", price_in=1.0, price_out=2.0)
    assert priced is not None and not priced.caches
    assert expected_cached(priced, {"t": (10, 5000)}) == 0


def test_the_expected_share_is_close_to_what_the_simulator_caches(
    simulator, hotpot_file, tmp_path
) -> None:
    """The estimate's cache share against a run: the simulator counts tokens by its own
    rule (4 bytes), so the two agree within a few points, not to the token."""
    seeds = hotpot_file(30)
    prompts = long_prompts(tmp_path)
    sim = simulator(cache=CacheConfig())  # OpenAI's rules: 1,024 tokens, steps of 128
    cfg = cfg_for(
        seeds,
        prompts_dir=prompts,
        base_url=sim.base_url,
        api_key="k",
        db=tmp_path / "h.duckdb",
        rate=RateLimit(concurrency=1),  # one request after another, as a cache sees them
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02),
        progress=False,
    )
    outcome = anyio.run(lambda: generate(cfg))
    assert outcome.status == "done", outcome.message
    bill = sim.stats(keys=False)
    achieved = bill["cached_tokens"] / bill["prompt_tokens"]
    price = find_price("gpt-4o-mini")
    assert price is not None
    e = estimate_task(cfg, load_tasks([task_spec("qa")], prompts)["qa"], price)
    assert achieved > 0.3
    assert e.cache_share == pytest.approx(achieved, abs=0.1)


def _json_tables(capsys) -> dict[str, list[dict[str, object]]]:
    return orjson.loads(capsys.readouterr().out)


def test_estimate_command_gives_each_way_to_pay_per_1000_accepted(
    hotpot_file, tmp_path, capsys
) -> None:
    seeds = hotpot_file(20)
    prompts = long_prompts(tmp_path)
    args = ["estimate", "--seeds", str(seeds), "--prompts", str(prompts), "--format", "json"]
    assert main([*args, "--model", "gpt-5-mini", "--acceptance", "0.8"]) == 0
    tables = _json_tables(capsys)
    ways = {r["way"]: r for r in tables["ways"]}
    assert list(ways) == [
        "interactive",
        "interactive, cached",
        "batch, cached",
        "flex, cached",
        "most it can cost",
    ]
    price = find_price("gpt-5-mini")
    assert price is not None
    cfg = dataclasses.replace(cfg_for(seeds, prompts_dir=prompts), model="gpt-5-mini")
    e = estimate_ways(cfg, load_tasks([task_spec("qa")], prompts)["qa"], price)
    accepted = e.seeds * 0.8
    for mode in e.modes:
        row = ways[mode.name]
        assert row["whole run"] == format_usd(mode.cost_pusd)
        assert row["per 1,000 accepted"] == format_usd(round(mode.cost_pusd * 1000 / accepted))
    assert ways["most it can cost"]["whole run"] == format_usd(e.cost_max_pusd)
    (overview,) = tables["estimate"]
    assert overview["from cache"] == f"{100 * e.cache_share:.0f}%"

    assert main([*args, "--acceptance", "1.5"]) == 2  # a share, or a usage error


def test_acceptance_is_learned_from_earlier_runs_in_the_store(
    simulator, hotpot_file, tmp_path, capsys
) -> None:
    seeds = hotpot_file(8)
    db = tmp_path / "h.duckdb"
    sim = simulator(garbage_rate=0.4)  # some seeds end without a sample
    run_args = ["run", "--seeds", str(seeds), "--db", str(db), "--base-url", sim.base_url]
    assert main([*run_args, "--api-key", "k", "--model", "gpt-4o-mini", "--no-progress"]) in (0, 1)
    import duckdb

    with duckdb.connect(str(db), read_only=True) as conn:
        (sampled, finished) = conn.execute(
            "SELECT count(*) FILTER (WHERE outcome = 'sampled'), count(*) FROM seed_progress"
            " WHERE outcome IN ('sampled', 'rejected')"
        ).fetchone()
    capsys.readouterr()
    est = ["estimate", "--seeds", str(seeds), "--db", str(db), "--format", "json"]
    assert main([*est, "--model", "gpt-4o-mini"]) == 0
    caption_rows = _json_tables(capsys)["ways"]
    per_1000 = {r["way"]: r["per 1,000 accepted"] for r in caption_rows}
    whole = {r["way"]: r["whole run"] for r in caption_rows}
    assert 0 < sampled <= finished
    price = find_price("gpt-4o-mini")
    assert price is not None
    e = estimate_task(cfg_for(seeds), load_tasks([task_spec("qa")])["qa"], price)
    assert whole["interactive"] == format_usd(e.modes[0].cost_pusd)
    expected = round(e.modes[0].cost_pusd * 1000 / (e.seeds * sampled / finished))
    assert per_1000["interactive"] == format_usd(expected)


def test_each_way_of_paying_is_priced_on_the_templates_it_sends(hotpot_file) -> None:
    # gpt-4o-mini: interactive calls send the cached-only blocks (cached at half price),
    # batch lines do not (no cached input in batches), and the uncached row sends none either
    from halugen.tasks.loaded import plan_task
    from halugen.tokens import get_counter

    price = find_price("gpt-4o-mini")
    assert price is not None and price.caches and not price.batch_caches
    cfg = cfg_for(hotpot_file(4))
    task = load_tasks([task_spec("qa")], None)["qa"]
    counter = get_counter(price.tokenizer)
    interactive = estimate_task(cfg, plan_task(task, price, counter, batch=False), price)
    plain = estimate_task(cfg, task, price)
    assert interactive.prompt_tokens > plain.prompt_tokens  # the plan pads some templates
    ways = {m.name: m for m in estimate_ways(cfg, task, price).modes}
    assert ways["interactive"].cost_pusd == plain.modes[0].cost_pusd
    assert ways["batch"].cost_pusd == batch_cost(price, plain.modes[0].cost_pusd)
    cached = interactive.modes[1]
    assert cached.name == "interactive, cached" and ways[cached.name] == cached


def test_the_seeds_are_read_once_for_every_way_of_paying(
    hotpot_file, monkeypatch: pytest.MonkeyPatch
) -> None:
    import halugen.stages.estimate

    price = find_price("gpt-4o-mini")
    assert price is not None
    cfg = cfg_for(hotpot_file(5))
    task = load_tasks([task_spec("qa")], None)["qa"]
    alone = estimate_task(cfg, task, price)
    reads: list[object] = []
    real = halugen.stages.estimate.read_seeds

    def counting(*args: Any, **kwargs: Any) -> Any:
        reads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(halugen.stages.estimate, "read_seeds", counting)
    e = estimate_ways(cfg, task, price)
    assert len(reads) == 1
    assert (e.seeds, e.bad_records) == (alone.seeds, alone.bad_records) == (5, 0)
    assert next(m for m in e.modes if m.name == "interactive") == alone.modes[0]
