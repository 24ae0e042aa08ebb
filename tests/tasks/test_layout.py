"""Templates are laid out to be cached: what never changes first, the record last, and the
opening long enough for the provider's cache where the cache plan says that pays.

Every template of every task folder (the built-in tasks, the examples, the test folder), in
each of its variants, is rendered for two records that share no text; the requests' common
prefix must hold all of the template's fixed text but the record's own labels and the reply
format after it, and where the plan (``cost.cache``) sends the cached-only blocks at the
card's gpt-4o-mini or gpt-4.1-mini prices, that prefix reaches the card's caching minimum.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from halugen.cost.cache import opening_cost, pads, planned
from halugen.cost.prices import ModelPrice, find_price
from halugen.errors import ConfigError
from halugen.prompts import PER_MESSAGE_TOKENS, Template, parse_template
from halugen.tasks import BUILTIN_TASKS, TASK_NAMES
from halugen.tasks.base import TaskSpec
from halugen.tasks.templates import task_template
from halugen.tokens import get_counter
from tests.task_specs import task_spec

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = [
    *BUILTIN_TASKS,
    str(ROOT / "examples" / "tasks" / "rag"),
    str(ROOT / "examples" / "tasks" / "science_qa"),
    str(Path(__file__).with_name("folders") / "glossary"),
]
# After the record's first field only its own labels ("Question: ") and the reply format
# ("Reply format:" and one line per reply field) may follow: a model reads the shape of its
# answer last, and so does the simulator.
MAX_FIXED_AFTER_RECORD = 80
# The built-in tasks' sampling and filter templates keep the reply format in the opening too
# (it is cached with the rest): only the record's own labels follow its first field.
MAX_FIXED_AFTER_RECORD_BUILTIN = 12
MODELS = ("gpt-4o-mini", "gpt-4.1-mini")


def _price(model: str) -> ModelPrice:
    price = find_price(model)
    assert price is not None and price.caching is not None, model
    return price


def _templates() -> list[tuple[str, TaskSpec, str]]:
    out = []
    for folder in FOLDERS:
        spec = task_spec(folder)
        stems = sorted(
            {stem for stem, _ in spec.templates}
            | {path[len("prompts/") : -len(".txt")] for path, _ in spec.sources
               if path.startswith("prompts/") and path.endswith(".txt")}
        )  # fmt: skip
        out += [(f"{spec.name}/{stem}", spec, stem) for stem in stems]
    return out


TEMPLATES = _templates()


def _record(template: Template, which: int) -> dict[str, str]:
    """Values for every field; the two records share no character at their start."""
    word = ("Alder", "Birch")[which]
    return {name: f"{word} {name} {which} {word.lower()}" for name in template.fields}


def _flat(messages: tuple[dict[str, str], ...]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


def _common_prefix(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for (role_a, text_a), (role_b, text_b) in zip(a, b, strict=False):
        if (role_a, text_a) == (role_b, text_b):
            out.append((role_a, text_a))
            continue
        if role_a == role_b:
            n = 0
            while n < min(len(text_a), len(text_b)) and text_a[n] == text_b[n]:
                n += 1
            out.append((role_a, text_a[:n]))
        break
    return out


def _variants(template: Template) -> list[Template]:
    return [template] if template.padded is None else [template, template.padded]


@pytest.mark.parametrize(("name", "spec", "stem"), TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_fixed_text_comes_before_the_record(name: str, spec: TaskSpec, stem: str) -> None:
    counter = get_counter("o200k_base")
    for template in _variants(task_template(spec, stem)):
        first = _flat(template.render(_record(template, 0)))
        second = _flat(template.render(_record(template, 1)))
        prefix = _common_prefix(first, second)
        static_before = []
        static_after = []
        seen_field = False
        for role, segs in template.parts:
            for seg in segs:
                if isinstance(seg, tuple):
                    seen_field = True
                elif seen_field:
                    static_after.append(seg)
                else:
                    static_before.append((role, seg))
        # every fixed piece before the first field is in the common prefix, in order
        joined = "\x00".join(text for _, text in prefix)
        pos = 0
        for _, text in static_before:
            at = joined.find(text.strip(), pos)
            assert at >= 0, f"{name}: fixed text not in the shared opening: {text[:60]!r}"
            pos = at
        after = sum(counter.count(text) for text in static_after)
        laid_out = stem in (*spec.sample_templates, spec.filter_template)
        most = (
            MAX_FIXED_AFTER_RECORD_BUILTIN if spec.builtin and laid_out else MAX_FIXED_AFTER_RECORD
        )
        assert after <= most, (
            f"{name}: {after} tokens of fixed text follow the record; put instructions and "
            "demonstrations before it"
        )


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("name", "spec", "stem"), TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_padded_opening_reaches_the_cache_minimum(
    model: str, name: str, spec: TaskSpec, stem: str
) -> None:
    price = _price(model)
    assert price.caching is not None
    counter = get_counter(price.tokenizer)
    template = task_template(spec, stem)
    sent = planned(template, price, counter, batch=False)
    if sent is template:
        return
    first = _flat(sent.render(_record(sent, 0)))
    second = _flat(sent.render(_record(sent, 1)))
    prefix = _common_prefix(first, second)
    tokens = sum(PER_MESSAGE_TOKENS + counter.count(text) for _, text in prefix)
    assert tokens >= price.caching.min_tokens, (
        f"{name}: the plan sends the cached-only blocks at {model} prices but the shared "
        f"opening is {tokens} tokens, under the card's minimum of {price.caching.min_tokens}"
    )
    assert price.caching.cacheable(tokens) > 0


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("task", TASK_NAMES)
def test_the_plan_pads_sampling_openings_where_caching_pays(model: str, task: str) -> None:
    """At both models' prices the sampling openings are worth lengthening interactively (the
    card's cached price is half or a quarter of the input price); in batch mode the card
    gives these models no cached input, so the short variant is sent."""
    price = _price(model)
    counter = get_counter(price.tokenizer)
    spec = task_spec(task)
    for stem in spec.sample_templates:
        template = task_template(spec, stem)
        assert template.padded is not None, f"{task}/{stem} has no '=== if cached' block"
        assert pads(template, price, counter, batch=False), f"{task}/{stem} at {model}"
        assert not price.batch_caches
        assert not pads(template, price, counter, batch=True), f"{task}/{stem} in batch"
        assert planned(template, price, counter, batch=True) is template


def test_the_plan_compares_costs_from_the_card() -> None:
    price = _price("gpt-4o-mini")
    assert price.caching is not None
    minimum = price.caching.min_tokens
    # below the minimum nothing is cached; at it the cached price applies
    assert opening_cost(price, minimum - 1, batch=False) == (minimum - 1) * price.input
    assert opening_cost(price, minimum, batch=False) == minimum * price.cached_input
    # a model without a cheaper cached price, or batch lines without caching: never padded
    flat = ModelPrice.per_million("m", 0.15, 0.6, 0.15, caching=price.caching)
    assert opening_cost(flat, 2000, batch=False) == 2000 * flat.input
    assert opening_cost(price, 2000, batch=True) == 2000 * price.input
    local = ModelPrice.per_million("local", 0, 0, 0, caching=price.caching)
    template = task_template(task_spec("qa"), "sample_onepass")
    assert not pads(template, local, get_counter(local.tokenizer), batch=False)


def test_padding_that_does_not_pay_is_left_out() -> None:
    """An opening of ~400 tokens padded to ~1,100: at gpt-4o-mini (cached input at half
    price) 1,024 cached tokens cost more than 400 uncached ones, so the blocks stay out; at
    gpt-4.1-mini (a quarter of the price) the same padding pays."""
    text = (
        f"=== system\n{'word ' * 400}\n\n=== if cached\n{'more ' * 700}\n=== end if\n"
        "=== user\n{{x}}\n"
    )
    template = parse_template("t/padding", text)
    assert template.padded is not None
    mini = _price("gpt-4o-mini")
    assert not pads(template, mini, get_counter(mini.tokenizer), batch=False)
    gpt41 = _price("gpt-4.1-mini")
    assert pads(template, gpt41, get_counter(gpt41.tokenizer), batch=False)


# -- the template syntax -------------------------------------------------------------------


def test_cached_blocks_make_a_second_variant_with_its_own_hash() -> None:
    text = (
        "comment\n=== system\nIntro.\n\n=== if cached\nMore examples.\n\n=== end if\nRules.\n"
        "=== if cached\n=== user\nA taught turn.\n=== assistant\nUnderstood.\n=== end if\n"
        "=== user\n{{record}}\n"
    )
    template = parse_template("t/x", text)
    assert template.render({"record": "R"}) == (
        {"role": "system", "content": "Intro.\n\nRules."},
        {"role": "user", "content": "R"},
    )
    padded = template.variant(padded=True)
    assert padded.render({"record": "R"}) == (
        {"role": "system", "content": "Intro.\n\nMore examples.\n\nRules."},
        {"role": "user", "content": "A taught turn."},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": "R"},
    )
    assert template.variant(padded=False) is template
    assert padded.name == template.name and padded.hash != template.hash
    # the short variant keeps the file's hash (what names a run)
    plain = parse_template("t/x", text.replace("=== if cached", "").replace("=== end if", ""))
    assert plain.hash != template.hash and template.padded is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("=== user\n=== if cached\nA\n{{x}}\n", "no '=== end if'"),
        ("=== user\nA\n=== end if\n{{x}}\n", "without '=== if cached'"),
        ("=== user\n=== if cached\n=== if cached\nA\n=== end if\n{{x}}\n", "inside another"),
        ("=== user\n=== if cached\n{{y}}\n=== end if\n{{x}}\n", "cannot hold"),
    ],
)
def test_cached_block_mistakes_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_template("t/bad", text)
