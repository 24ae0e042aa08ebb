"""Money with the provider's prompt cache: the ledger against the simulator's bill, to the
cent and below, interactive, batch and across a resume; and the figures a user plans with
(the cost views, ``status``, the live counters), each recomputed here from the simulator's
bill or from the store's raw tables.

The simulator caches from 64 tokens in steps of 16 here, so halugen's prompts, whatever
their length, share cacheable openings; the rules themselves are tested in
tests/simulate/test_caching.py.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import anyio
import duckdb
import orjson
import pytest
from rich.console import Console

from halugen.cli import main
from halugen.config import BatchOptions, RetryPolicy
from halugen.cost.prices import PUSD_PER_USD, format_usd
from halugen.engine import generate
from halugen.simulate import CacheConfig
from tests.batch.support import in_process, seeds_file
from tests.e2e.test_generate import config
from tests.simulate._support import FakeClock

CACHE = CacheConfig(min_tokens=64, step_tokens=16)
# the openai card's gpt-4o-mini: the simulator bills what the card says
PRICE_IN, PRICE_CACHED = 0.15, 0.075


def query(db: Path, sql: str, params: list[Any] | None = None) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql, params or []).fetchall()


def spent_usd(db: Path) -> float:
    (pusd,) = query(db, "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')")[
        0
    ]
    return (pusd or 0) / PUSD_PER_USD


def billed_cached(db: Path, where: str = "TRUE") -> list[int]:
    """cached_tokens of the calls the provider billed, in the order they were made."""
    rows = query(
        db,
        f"SELECT cached_tokens FROM calls WHERE status IN ('ok', 'content_filter') AND {where}"
        " ORDER BY call_id",
    )
    return [r[0] or 0 for r in rows]


def check_views(db: Path, cached_tokens: int, saved_usd: float) -> None:
    """cost_per_sample adds up to the ledger and to the simulator's cache figures."""
    (tokens, saved, cost) = query(
        db, "SELECT sum(cached_tokens), sum(saved_usd), sum(cost_usd) FROM cost_per_sample"
    )[0]
    assert tokens == cached_tokens
    assert saved == pytest.approx(saved_usd, rel=1e-9)
    assert cost == pytest.approx(spent_usd(db), rel=1e-9, abs=1e-12)
    rows = query(
        db,
        "SELECT c.task, c.accepted, c.cost_usd, c.cost_per_sample_usd,"
        " (SELECT count(*) FROM samples s WHERE s.run_id = c.run_id AND s.task = c.task)"
        " FROM cost_per_sample c",
    )
    assert rows
    for _task, accepted, stage_cost, per_sample, samples in rows:
        assert accepted == samples > 0
        assert per_sample == pytest.approx(stage_cost / samples, rel=1e-9)


@pytest.mark.parametrize("tokenizer", ["bytes", "cl100k_base"])
def test_interactive_caching_agrees_with_the_bill_in_the_ledger_views_and_live_view(
    simulator, hotpot_file, tmp_path, tokenizer
):
    # the provider counts with its byte rule, or with a BPE encoding (where cached prefixes
    # end in other places): the ledger follows its usage either way
    sim = simulator(cache=CACHE, tokenizer=tokenizer)
    db = tmp_path / "h.duckdb"
    outcome = anyio.run(lambda: generate(config(sim.base_url, hotpot_file(16), db)))
    assert outcome.status == "done", outcome.message
    bill = sim.stats(keys=False)
    assert bill["cached_tokens"] > 0  # halugen's openings are cached from the second request
    assert sum(billed_cached(db)) == bill["cached_tokens"]
    assert spent_usd(db) == pytest.approx(bill["billed_usd"], rel=1e-9)
    assert abs(spent_usd(db) - bill["billed_usd"]) < 0.005  # to the cent (and far below)
    # what the cache saved: the cached tokens at the input price less the cached price
    saved = bill["cached_tokens"] * (PRICE_IN - PRICE_CACHED) / 1e6
    check_views(db, bill["cached_tokens"], saved)
    # the live counters say the same
    totals = outcome.stats.totals()
    assert totals.cached_input_tokens == bill["cached_tokens"]
    assert totals.prompt_tokens == bill["prompt_tokens"]
    assert totals.cache_saved_pusd == pytest.approx(saved * PUSD_PER_USD, abs=totals.done)


def test_a_resumed_run_is_cached_as_the_provider_still_holds_its_prefixes(
    simulator, hotpot_file, tmp_path
):
    clock = FakeClock()
    sim = simulator(cache=CACHE, clock=clock)
    db = tmp_path / "h.duckdb"
    seeds = hotpot_file(12)

    def session(limit: int) -> tuple[Any, int]:
        before = query(db, "SELECT max(call_id) FROM call_log")[0][0] if db.exists() else 0
        out = anyio.run(lambda: generate(config(sim.base_url, seeds, db, limit=limit)))
        assert out.status == "done", out.message
        return out, before

    first, _ = session(4)
    clock.advance(CACHE.idle_s - 60)  # the provider still holds the openings
    second, before = session(8)
    assert second.run_id == first.run_id
    # the filter's short opening is never cached; every sampling call of the resumed session hits
    warm = billed_cached(db, f"call_id > {before} AND stage = 'sample'")
    assert warm and all(c > 0 for c in warm)

    clock.advance(CACHE.idle_s + 1)  # long enough for the provider to forget them
    third, before = session(12)
    assert third.run_id == first.run_id
    cold = billed_cached(db, f"call_id > {before} AND stage = 'sample'")
    templates = query(
        db,
        "SELECT count(DISTINCT template_hash) FROM candidates WHERE run_id = ?",
        [first.run_id],
    )[0][0]
    # each distinct sampling opening (one per template) misses once, then hits
    assert 1 <= sum(c == 0 for c in cold) <= templates
    assert sum(c > 0 for c in cold) > 0

    bill = sim.stats(keys=False)
    assert sum(billed_cached(db)) == bill["cached_tokens"]
    assert spent_usd(db) == pytest.approx(bill["billed_usd"], rel=1e-9)
    check_views(db, bill["cached_tokens"], bill["cached_tokens"] * (PRICE_IN - PRICE_CACHED) / 1e6)


@pytest.mark.parametrize("model", ["gpt-5-mini", "gpt-4o-mini"])
def test_batch_lines_are_cached_and_billed_as_the_provider_does(tmp_path, model):
    # the card's prices for the model: the Batch API caches gpt-5-mini, not gpt-4o-mini
    prices = {
        "gpt-5-mini": {"price_in": 0.25, "price_out": 2.0, "price_cached": 0.025},
        "gpt-4o-mini": {"price_in": 0.15, "price_out": 0.60, "price_cached": 0.075},
    }[model]
    env = in_process(sim={**prices, "cache": CACHE})
    db = tmp_path / "b.duckdb"
    cfg = config(
        "http://sim/v1",
        seeds_file(tmp_path, 12),
        db,
        model=model,
        budget_usd=1.0,
        batch=BatchOptions(poll_seconds=0),
        progress=True,
    )
    view = StringIO()  # not a terminal: the view prints plain lines, the last at the end
    console = Console(file=view, width=400)
    out = anyio.run(lambda: generate(cfg, transport=env.transport, console=console))
    assert out.status == "done", out.message
    stats = env.stats()
    batch = stats["batch"]
    # all of it in batches, but the one structured-output probe the endpoint answers first
    assert stats["requests"] == 1 and batch["billed_requests"] > 0
    if model == "gpt-5-mini":
        assert batch["cached_tokens"] > 0
    else:
        assert batch["cached_tokens"] == 0  # OpenAI gives no cached input in batches here
    assert sum(billed_cached(db)) == batch["cached_tokens"]
    assert spent_usd(db) == pytest.approx(stats["billed_usd"], rel=1e-6)
    assert abs(spent_usd(db) - stats["billed_usd"]) < 0.005
    # saved at the batch price: half of (input - cached input) per cached token
    saved = batch["cached_tokens"] * (prices["price_in"] - prices["price_cached"]) / 1e6 / 2
    check_views(db, batch["cached_tokens"], saved)
    # the live view of the batches' lines: the cache's share of their input, what it saved
    last = [line for line in view.getvalue().splitlines() if line.startswith("[halugen]")][-1]
    if batch["cached_tokens"]:
        share = 100 * batch["cached_tokens"] / batch["prompt_tokens"]
        saved_text = format_usd(round(saved * PUSD_PER_USD))
        assert f"cache {share:.1f}% of input, saved {saved_text}" in last, last
    else:
        assert "cache " not in last


def _status_json(db: Path, capsys) -> dict[str, list[dict[str, Any]]]:
    capsys.readouterr()
    assert main(["status", "--db", str(db), "--format", "json"]) == 0
    return orjson.loads(capsys.readouterr().out)


def test_status_shows_cost_per_sample_and_the_money_of_seeds_without_a_sample(
    simulator, hotpot_file, tmp_path, capsys
):
    # replies that ignore the format and calls that fail: seeds end without a sample
    sim = simulator(cache=CACHE, garbage_rate=0.3, fail_rate=0.15, faults=("500",))
    db = tmp_path / "h.duckdb"
    cfg = config(sim.base_url, hotpot_file(40), db, retry=RetryPolicy(max_attempts=1))
    outcome = anyio.run(lambda: generate(cfg))
    assert outcome.status in ("done", "incomplete"), outcome.message
    assert spent_usd(db) == pytest.approx(sim.stats(keys=False)["billed_usd"], rel=1e-9)

    tables = _status_json(db, capsys)
    per_stage = tables["cost_per_sample"]
    # the structured-output probe is a stage of its own, with its money
    assert {r["stage"] for r in per_stage} == {"sample", "filter", "probe"}
    assert sum(r["cost_usd"] for r in per_stage) == pytest.approx(spent_usd(db), abs=1e-6)
    (samples,) = query(db, "SELECT count(*) FROM samples")[0]
    for r in per_stage:
        assert r["accepted"] == samples
        assert r["per_sample_usd"] == pytest.approx(r["cost_usd"] / samples, abs=1e-8)

    # the waste, recomputed from the raw tables: the ledger's money per seed, for the seeds
    # whose latest outcome is not a sample
    ledger = dict(
        query(
            db,
            "SELECT seed_key, sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')"
            " GROUP BY 1",
        )
    )
    outcomes = query(
        db,
        "SELECT seed_key, outcome, reason FROM seed_outcomes"
        " QUALIFY row_number() OVER (PARTITION BY seed_key ORDER BY created_at DESC) = 1",
    )
    unsampled = [(k, reason) for k, outcome_, reason in outcomes if outcome_ != "sampled"]
    assert unsampled, "the faults should leave some seeds without a sample"
    waste = tables["seed_waste"]
    assert sum(r["seeds"] for r in waste) == len(unsampled)
    expected = sum(ledger.get(k, 0) for k, _ in unsampled) / PUSD_PER_USD
    assert sum(r["cost_usd"] for r in waste) == pytest.approx(expected, abs=1e-6)
    assert expected > 0
    by_reason: dict[str, int] = {}
    for _, reason in unsampled:
        by_reason[reason] = by_reason.get(reason, 0) + 1
    got: dict[str, int] = {}
    for r in waste:
        got[r["reason"]] = got.get(r["reason"], 0) + r["seeds"]
    assert got == by_reason
    causes = {r["cause"] for r in waste}
    assert causes <= {"guards", "unreadable replies", "call failures", "content filter"}
    assert "call failures" in causes  # the 500s
    call_failed = sum(r["seeds"] for r in waste if r["cause"] == "call failures")
    assert call_failed == by_reason.get("call_failed", 0)

    # the same views through `halugen sql`
    assert main(["sql", "SELECT sum(seeds) AS n FROM seed_waste", "--db", str(db)]) == 0
    assert str(len(unsampled)) in capsys.readouterr().out


def test_openai_gets_one_prompt_cache_key_per_template_and_other_servers_none(
    hotpot_file, tmp_path
):
    # through the in-process simulator: the base URL names OpenAI's API or another server
    seeds = hotpot_file(6)
    keys_of: dict[str, set[tuple[str, str | None]]] = {}
    for name, base_url in (("openai", "https://api.openai.com/v1"), ("other", "http://sim/v1")):
        env = in_process(sim={"cache": CACHE})
        db = tmp_path / f"{name}.duckdb"
        cfg = config(base_url, seeds, db, model="gpt-4o-mini", batch=None)
        out = anyio.run(lambda: generate(cfg, transport=env.transport))  # noqa: B023
        assert out.status == "done", out.message
        rows = query(
            db,
            "SELECT stage, json_extract_string(request_json, '$.prompt_cache_key') FROM calls"
            " WHERE stage IN ('sample', 'filter')",
        )
        keys_of[name] = set(rows)
        assert spent_usd(db) == pytest.approx(env.stats()["billed_usd"], rel=1e-9)
    # one key per template (two sampling templates, one filter), named after it
    sent = {key for _, key in keys_of["openai"]}
    assert len(sent) == 3 and all(k and k.startswith("halugen/qa/") for k in sent), sent
    assert {key for stage, key in keys_of["openai"] if stage == "filter"} == {"halugen/qa/filter"}
    assert {key for _, key in keys_of["other"]} == {None}
