"""Fitting a record into the context window: a huge field is cut (or skipped) without being
encoded whole, and what is sent fits the window by an exact count."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest

from halugen.engine import load_tasks
from halugen.records import Seed
from halugen.stages.fit import fit_to_context
from halugen.tokens import EXACT_LIMIT, TokenCounter, get_counter
from tests.task_specs import task_spec
from tests.test_tokens import SpyEncoding


@pytest.fixture(scope="module")
def encoding() -> Any:
    counter = get_counter("cl100k_base")
    if counter._encoding is None:
        pytest.skip("no tiktoken encoding file here")
    return counter._encoding


def huge(n: int = 50 << 20) -> str:
    rng = random.Random(1)
    block = "".join(rng.choices(string.ascii_letters, k=1 << 16))
    return (block * (n // len(block) + 1))[:n]


@pytest.mark.parametrize(
    ("task", "fields", "long_field"),
    [
        ("summarization", {"document": None, "right_summary": "It rained."}, "document"),
        ("qa", {"knowledge": None, "question": "Who?", "right_answer": "Ann"}, "knowledge"),
    ],
)
def test_a_50_mb_field_is_cut_to_fit(
    encoding: Any, task: str, fields: dict[str, Any], long_field: str
) -> None:
    loaded = load_tasks([task_spec(task)])[task]
    spy = SpyEncoding(encoding)
    counter = TokenCounter("cl100k_base", spy, exact=True)
    seed = Seed(task=task, fields={**fields, long_field: huge()}, seed_id="big")
    window, reply = 32_768, 256
    fit = fit_to_context(
        seed, loaded, counter, context_window=window, max_tokens=reply, policy="truncate"
    )
    assert fit.seed is not None, fit.bad
    assert spy.longest <= EXACT_LIMIT  # never the whole field
    cut = fit.seed.fields[long_field]
    assert seed.fields[long_field].startswith(cut) and len(cut) > 10_000
    # what is sent fits by an exact count of every prompt
    exact = TokenCounter("cl100k_base", encoding, exact=True)
    values = dict(fit.seed.fields)
    for template in loaded.sample_templates:
        assert template.estimate_tokens(values, exact) + reply <= window
    assert fit.seed.truncated_tokens >= len(huge()) // 2  # an upper bound of what was cut
    assert fit.seed.key == seed.key  # still the seed it was read as


def test_a_50_mb_field_that_is_not_the_long_one_is_skipped(encoding: Any) -> None:
    loaded = load_tasks([task_spec("qa")])["qa"]
    spy = SpyEncoding(encoding)
    counter = TokenCounter("cl100k_base", spy, exact=True)
    seed = Seed(
        task="qa",
        fields={"knowledge": "Some facts.", "question": huge(), "right_answer": "Ann"},
        seed_id="big",
        source_file="f.json",
        source_line=3,
    )
    fit = fit_to_context(
        seed, loaded, counter, context_window=32_768, max_tokens=256, policy="truncate"
    )
    assert fit.seed is None and fit.bad is not None
    assert (fit.bad.source_file, fit.bad.source_line) == ("f.json", 3)
    assert fit.bad.reason.startswith("too long for the model")
    assert spy.longest <= EXACT_LIMIT


def test_ordinary_truncation_still_keeps_nearly_all_it_can(encoding: Any) -> None:
    loaded = load_tasks([task_spec("summarization")])["summarization"]
    counter = TokenCounter("cl100k_base", encoding, exact=True)
    doc = "The council met again on Tuesday to discuss the bridge. " * 2_000  # ~24k tokens
    seed = Seed(
        task="summarization", fields={"document": doc, "right_summary": "A bridge."}, seed_id="s"
    )
    fit = fit_to_context(
        seed, loaded, counter, context_window=8_192, max_tokens=256, policy="truncate"
    )
    assert fit.seed is not None
    sizes = [t.estimate_tokens(fit.seed.fields, counter) for t in loaded.sample_templates]
    assert 8_192 * 0.95 - 256 - 200 <= max(sizes) <= 8_192 * 0.95 - 256
