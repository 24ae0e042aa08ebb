"""The simulator's prompt caching: what is cached, for how long, for whom, and what it bills.

Expected figures are worked out here from the simulator's token rule (4 framing tokens per
message, then one token per 4 bytes of content, 3 at the end of the request), never read
back from the cache itself.
"""

from __future__ import annotations

import anyio
import orjson
import pytest

from halugen.errors import UsageError
from halugen.llm.batch_client import BatchClient
from halugen.simulate import CacheConfig, SimConfig, Simulator
from halugen.simulate.caching import PrefixCache, batch_caches, extended_retention, openai_caches
from tests.batch.support import BatchClock, in_process

from ._support import FakeClock, call

# 6,000 bytes: 1,500 content tokens, the same in every request
STATIC = ("Instructions that never change, with their demonstrations. " * 100)[:6000]
FRAME = 4  # tokens around each message
END = 3  # tokens at the end of a request


def request(record: str, *, model: str = "gpt-4o-mini", **extra: object) -> bytes:
    payload: dict[str, object] = {
        "model": model,
        "messages": [
            {"role": "system", "content": STATIC},
            {"role": "user", "content": record},
        ],
        "max_tokens": 16,
    }
    payload.update(extra)
    return orjson.dumps(payload)


def tokens(text: str) -> int:
    return -(-len(text.encode()) // 4)


def prompt_tokens(record: str) -> int:
    return FRAME + tokens(STATIC) + FRAME + tokens(record) + END


def expected_hit(shared: int, minimum: int = 1024, step: int = 128) -> int:
    return 0 if shared < minimum else minimum + (shared - minimum) // step * step


# two records that differ from their first byte: the opening they share is the system
# message and the user message's framing
SHARED = FRAME + 1500 + FRAME


def usage(resp) -> dict:
    assert resp.status == 200, resp.body
    return orjson.loads(resp.body)["usage"]


def cached(resp) -> int:
    return usage(resp)["prompt_tokens_details"]["cached_tokens"]


def sim_with(clock: FakeClock | None = None, **cache: object) -> Simulator:
    return Simulator(SimConfig(clock=clock or FakeClock(), cache=CacheConfig(**cache)))


def test_a_shared_opening_is_served_from_cache_in_steps_and_billed_cheaper() -> None:
    sim = sim_with()
    first = call(sim, request("Alpha record: the Serin flows through Vallona."))
    assert cached(first) == 0  # nothing to hit yet
    second = call(sim, request("Beta record: the Orla flows through Tessel."))
    assert expected_hit(SHARED) == 1408  # 1,508 shared tokens: 1,024 + 3 x 128
    assert cached(second) == 1408
    assert usage(second)["prompt_tokens"] == prompt_tokens(
        "Beta record: the Orla flows through Tessel."
    )

    stats = sim.stats(keys=False)
    assert stats["cached_tokens"] == 1408
    assert stats["cache"]["lookups"] == 2 and stats["cache"]["hits"] == 1
    # the bill: cached tokens at the cached price (default half of 0.15), the rest in full
    expected = (
        (stats["prompt_tokens"] - 1408) * 0.15 + 1408 * 0.075 + stats["completion_tokens"] * 0.60
    ) / 1e6
    assert stats["billed_usd"] == pytest.approx(expected, rel=1e-12)

    # the very same request again: its whole length, in whole steps
    again = call(sim, request("Beta record: the Orla flows through Tessel."))
    assert cached(again) == expected_hit(usage(again)["prompt_tokens"])


def test_prompts_under_the_minimum_are_never_cached_and_the_rules_are_settable() -> None:
    short = orjson.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x" * 3000}]}
    )  # 4 + 750 + 3 = 757 tokens
    sim = sim_with()
    assert [cached(call(sim, short)) for _ in range(3)] == [0, 0, 0]
    assert sim.stats(keys=False)["cache"]["lookups"] == 0

    small = sim_with(min_tokens=256, step_tokens=64)
    call(small, short)
    assert cached(call(small, short)) == expected_hit(757, 256, 64) == 704

    assert cached(call(sim_with(enabled=False), request("a"))) == 0
    with pytest.raises(UsageError):
        CacheConfig(step_tokens=0)


def test_a_prefix_lives_idle_s_after_its_last_use_and_max_s_at_most() -> None:
    clock = FakeClock()
    sim = sim_with(clock, idle_s=300.0, max_s=3600.0)
    call(sim, request("record 0"))
    clock.advance(299.0)
    assert cached(call(sim, request("record 1"))) == 1408  # used again: idle time restarts
    clock.advance(299.0)
    assert cached(call(sim, request("record 2"))) == 1408
    clock.advance(300.0)
    assert cached(call(sim, request("record 3"))) == 0  # idle too long: gone, cached afresh
    # kept busy, a prefix still goes an hour after it was cached, and is cached again
    for _ in range(12):
        clock.advance(290.0)  # 12 x 290 = 3,480 s since "record 3" cached it
        assert cached(call(sim, request("busy"))) > 0
    clock.advance(150.0)  # 3,630 s
    assert cached(call(sim, request("record 4"))) == 0
    assert cached(call(sim, request("record 5"))) == 1408


def test_extended_retention_keeps_a_prefix_a_day_for_the_models_that_have_it() -> None:
    clock = FakeClock()
    sim = sim_with(clock)
    call(sim, request("r0", model="gpt-5", prompt_cache_retention="24h"))
    clock.advance(7200.0)  # two hours without use
    assert cached(call(sim, request("r1", model="gpt-5"))) == 1408
    clock.advance(86_400.0)
    assert cached(call(sim, request("r2", model="gpt-5"))) == 0
    # a model without extended retention keeps it in memory, whatever it asks
    call(sim, request("r0", model="gpt-4o-mini", prompt_cache_retention="24h"))
    clock.advance(7200.0)
    assert cached(call(sim, request("r1", model="gpt-4o-mini"))) == 0
    bad = call(sim, request("r", prompt_cache_retention="forever"))
    assert bad.status == 400
    assert orjson.loads(bad.body)["error"]["param"] == "prompt_cache_retention"
    assert call(sim, request("r", prompt_cache_key=7)).status == 400


def test_caches_are_per_model_key_and_schema() -> None:
    sim = sim_with()
    call(sim, request("r0"))
    assert cached(call(sim, request("r1", model="gpt-4.1-mini"))) == 0  # another model
    # prompt_cache_key routes to another machine: its own cache
    assert cached(call(sim, request("r2", prompt_cache_key="qa-sample"))) == 0
    assert cached(call(sim, request("r3", prompt_cache_key="qa-sample"))) == 1408
    assert cached(call(sim, request("r4", prompt_cache_key="qa-filter"))) == 0
    # a reply schema goes before the messages: another schema, another prefix
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    assert cached(call(sim, request("r5", response_format=schema))) == 0
    assert cached(call(sim, request("r6", response_format=schema))) == 1408
    assert cached(call(sim, request("r7"))) == 1408  # the first one's is still there


def test_which_models_cache_follows_openai() -> None:
    for model in ("gpt-4o-mini", "gpt-4o", "gpt-4.1-nano", "gpt-5", "o3", "halugen-sim"):
        assert openai_caches(model), model
    for model in ("gpt-3.5-turbo", "gpt-4", "gpt-4-turbo", "gpt-4-0613", "gpt-4o-2024-05-13"):
        assert not openai_caches(model), model
    assert [batch_caches(m) for m in ("gpt-5", "gpt-5-mini", "gpt-6", "gpt-4.1", "o3")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert extended_retention("gpt-5") and extended_retention("gpt-5.1")
    assert extended_retention("gpt-4.1-2025-04-14") and not extended_retention("gpt-4o-mini")
    sim = sim_with()
    call(sim, request("r0", model="gpt-3.5-turbo"))
    assert cached(call(sim, request("r1", model="gpt-3.5-turbo"))) == 0
    only = sim_with(models=("local-",))
    call(only, request("r0", model="local-llama"))
    assert cached(call(only, request("r1", model="local-llama"))) == 1408


def test_overflow_past_the_routing_rate_misses_once_per_machine() -> None:
    clock = FakeClock(start=6000.0)  # the start of a minute
    sim = sim_with(clock, route_rpm=15)
    hits = [cached(call(sim, request(f"r{i}"))) for i in range(40)]
    # machine 0 takes 15 requests, machine 1 the next 15, machine 2 the rest: one miss each
    assert [i for i, h in enumerate(hits) if h == 0] == [0, 15, 30]
    clock.advance(60.0)  # a new minute: machine 0 again, still warm
    assert cached(call(sim, request("next minute"))) == 1408


def test_the_cache_forgets_what_expired_and_keeps_within_max_entries() -> None:
    clock = FakeClock()
    cache = PrefixCache(CacheConfig(idle_s=10.0, max_entries=50))
    for i in range(30):
        body = orjson.loads(request(f"record {i} " + "z" * 2000))
        contents = [m["content"] for m in body["messages"]]
        cache.serve("gpt-4o-mini", body, contents, prompt_tokens(contents[1]), clock())
    assert cache.stats()["entries"] <= 50 and cache.stats()["evicted"] > 0
    clock.advance(11.0)
    body = orjson.loads(request("late"))
    contents = [m["content"] for m in body["messages"]]
    assert cache.serve("gpt-4o-mini", body, contents, prompt_tokens("late"), clock()) == 0
    assert cache.stats()["entries"] == len(range(1024, prompt_tokens("late") + 1, 128))


def _batch_run(env, bodies: list[dict]) -> list[dict]:
    async def main() -> list[dict]:
        c = BatchClient(base_url="http://sim/v1", api_key="k", transport=env.transport)
        data = b"".join(
            orjson.dumps(
                {
                    "custom_id": f"req-{i}",
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": b,
                }
            )
            + b"\n"
            for i, b in enumerate(bodies)
        )
        info = await c.create(await c.upload(data))
        while not (info := await c.get(info.id)).final:
            pass
        assert info.output_file_id is not None
        out = [orjson.loads(x) for x in (await c.content(info.output_file_id)).splitlines()]
        return sorted(out, key=lambda line: int(line["custom_id"].split("-")[1]))

    return anyio.run(main)


@pytest.mark.parametrize(("model", "batch_cache"), [("gpt-4o-mini", False), ("gpt-5-mini", True)])
def test_batch_lines_are_cached_only_where_the_provider_does_it(
    model: str, batch_cache: bool
) -> None:
    prices = {"price_in": 0.25, "price_out": 2.0, "price_cached": 0.025}
    env = in_process(BatchClock(step=1.0), duration_s=2.0, sim=prices)
    bodies = [orjson.loads(request(f"line {i}", model=model)) for i in range(4)]
    out = _batch_run(env, bodies)
    got = [
        line["response"]["body"]["usage"]["prompt_tokens_details"]["cached_tokens"] for line in out
    ]
    assert got == ([0, 1408, 1408, 1408] if batch_cache else [0, 0, 0, 0])
    batch = env.stats()["batch"]
    assert batch["cached_tokens"] == sum(got)
    full = (
        (batch["prompt_tokens"] - sum(got)) * 0.25
        + sum(got) * 0.025
        + batch["completion_tokens"] * 2.0
    ) / 1e6
    assert batch["billed_usd"] == pytest.approx(full / 2, rel=1e-12)  # half price, cache too


def test_simulate_command_flags_set_the_cache(monkeypatch) -> None:
    import halugen.simulate
    from halugen.cli import main

    seen: list[SimConfig] = []
    monkeypatch.setattr(halugen.simulate, "run_server", lambda config, *a, **k: seen.append(config))
    flags = ["--cache-min-tokens", "256", "--cache-step-tokens", "32", "--cache-idle-s", "600"]
    flags += ["--cache-max-s", "1800", "--cache-extended-s", "7200", "--cache-batch", "yes"]
    assert main(["simulate", *flags, "--cache-route-rpm", "15", "--price-cached", "0.02"]) == 0
    assert main(["simulate", "--no-cache"]) == 0
    on, off = seen
    assert on.cache == CacheConfig(
        min_tokens=256,
        step_tokens=32,
        idle_s=600.0,
        max_s=1800.0,
        extended_s=7200.0,
        batch=True,
        route_rpm=15.0,
    )
    assert on.cached_price == 0.02
    assert not off.cache.enabled and off.cached_price == off.price_in / 2
    assert main(["simulate", "--cache-idle-s", "0"]) == 2  # a usage error, one line


def test_a_provider_counting_more_tokens_caches_only_what_the_text_spans() -> None:
    # usage_scale: the reported prompt_tokens exceed the text's own span; the lengths past
    # the text have no prefix to hash and are never hits (this used to raise)
    cache = PrefixCache(CacheConfig())
    body = orjson.loads(request("record one"))
    contents = [m["content"] for m in body["messages"]]
    scaled = int(prompt_tokens("record one") * 1.6)
    assert cache.serve("gpt-4o-mini", body, contents, scaled, 0.0) == 0
    again = cache.serve("gpt-4o-mini", body, contents, scaled, 1.0)
    assert 1024 <= again <= prompt_tokens("record one")
