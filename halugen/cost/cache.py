"""The cache rules at work: the fixed opening, the cache plan, and how an opening fits.

The cache plan decides whether a run sends each template's ``=== if cached`` blocks.

A provider that caches prompt prefixes bills the opening every request of a template repeats
at the cached-input price, but only once that opening is long enough (OpenAI: 1,024 tokens,
then steps of 128; the price card's ``[caching]`` rules). A template's ``=== if cached``
blocks (more demonstrations) lengthen its opening past that minimum. A run sends them when
that costs less per call than it saves, at the model's prices, in the way the run pays
(interactive calls, or Batch API lines, which get cached input only where the card says so):

    cost(n) = cached(n) x cached price + (n - cached(n)) x input price

for an opening of n tokens, where cached(n) is what the card's rules serve from cache (0 below
the minimum, or when the model or the mode gets no caching). Every request of the template but
the first is taken to hit: a run sends the same opening many times a minute, which keeps it
warm; the first request's miss is the same either way. So the blocks are sent when the padded
opening's cost is the lower one. A model without a cheaper cached price, a local server at
price 0 and batch lines without caching never get them: longer for nothing.

Only the fixed opening is compared: what follows it (the record, the reply format) is the same
in both variants. The variant sent has its own template hash, so a sample tells which it was;
a run's identity keeps the file's hash, so a run resumed in the other mode goes on as itself.

How an opening fits (``opening_fits``, ``fit_lines``): ``halugen task check PATH --model M``
prints, for the sampling and filter templates, the fixed opening every request of a template
starts with, in tokens, with and without its ``=== if cached`` blocks; which variant the cache
plan sends interactively and in batch lines; and what a warm call then gets from the cache.
Someone writing their own task learns before paying whether its openings will be cached, and by
how much they clear the minimum.

The count is only as good as the tokenizer at hand. Offline, tiktoken may lack the card's
encoding and count with a close relative (``TokenCounter.exact`` is False). Measured on the
built-in openings, cl100k_base counts 1-2% more tokens than o200k_base, the encoding of OpenAI's
current models, so an opening that clears the minimum by less than ``APPROX_MARGIN`` of it
under an approximate count may fall short at the provider, which would then cache nothing:
such an opening is flagged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..prompts import PER_MESSAGE_TOKENS, Template
from ..tokens import TokenCounter
from .prices import ModelPrice

__all__ = [
    "APPROX_MARGIN",
    "OpeningFit",
    "cached_part",
    "fit_lines",
    "fixed_opening",
    "opening_cost",
    "opening_fits",
    "pads",
    "planned",
]

APPROX_MARGIN = 0.02  # of the caching minimum: how far two BPE tokenizers' counts drift apart


def fixed_opening(template: Template, counter: TokenCounter) -> int:
    """Tokens every request of ``template`` starts with: its messages up to the first field."""
    total = 0
    for _, segs in template.parts:
        total += PER_MESSAGE_TOKENS
        for seg in segs:
            if isinstance(seg, tuple):
                return max(0, total - 1)  # the static text's last token may join the field's
            total += counter.count_static(seg)
    return total


def cached_part(price: ModelPrice, tokens: int, *, batch: bool = False) -> int:
    """Tokens of an opening of ``tokens`` a warm call gets from the cache at ``price``: the
    card's rules, or 0 where the model (or, with ``batch``, its batch lines) gets no caching."""
    caches = price.batch_caches if batch else price.caches
    return price.caching.cacheable(tokens) if caches and price.caching is not None else 0


def opening_cost(price: ModelPrice, tokens: int, *, batch: bool) -> int:
    """Picodollars a call pays for an opening of ``tokens`` once it is cached (when it can be),
    before any batch discount (the same factor on both sides of every comparison)."""
    return price.cost(tokens, 0, cached_part(price, tokens, batch=batch))


def pads(template: Template, price: ModelPrice, counter: TokenCounter, *, batch: bool) -> bool:
    """Does sending ``template``'s cached-only blocks cost less than leaving them out?"""
    if template.padded is None:
        return False
    short = opening_cost(price, fixed_opening(template, counter), batch=batch)
    long = opening_cost(price, fixed_opening(template.padded, counter), batch=batch)
    return long < short


def planned(
    template: Template, price: ModelPrice, counter: TokenCounter, *, batch: bool
) -> Template:
    """The variant of ``template`` the run sends."""
    return template.variant(padded=pads(template, price, counter, batch=batch))


@dataclass(frozen=True, kw_only=True)
class OpeningFit:
    """One template's opening at one model's prices."""

    stem: str
    short: int  # tokens of the opening without the cached-only blocks
    padded: int | None  # with them; None: the template has none
    interactive_pads: bool  # the plan sends the padded variant to interactive calls
    batch_pads: bool  # ... and in batch lines
    cached: int  # tokens a warm interactive call gets from the cache
    near: bool  # approximate count, and within APPROX_MARGIN past the minimum

    @property
    def sent(self) -> int:
        """Tokens of the opening interactive calls send."""
        return self.padded if self.interactive_pads and self.padded is not None else self.short


def _fit(stem: str, template: Template, price: ModelPrice, counter: TokenCounter) -> OpeningFit:
    short = fixed_opening(template, counter)
    padded = fixed_opening(template.padded, counter) if template.padded is not None else None
    inter = pads(template, price, counter, batch=False)
    sent = padded if inter and padded is not None else short
    rules = price.caching
    cached = cached_part(price, sent)
    near = (
        not counter.exact
        and cached > 0
        and rules is not None
        and sent - rules.min_tokens < APPROX_MARGIN * rules.min_tokens
    )
    return OpeningFit(
        stem=stem,
        short=short,
        padded=padded,
        interactive_pads=inter,
        batch_pads=pads(template, price, counter, batch=True),
        cached=cached,
        near=near,
    )


def opening_fits(
    templates: Sequence[tuple[str, Template]], price: ModelPrice, counter: TokenCounter
) -> list[OpeningFit]:
    """The openings of ``templates`` ((stem, template) pairs: a task's sampling and filter
    templates, the ones a run's cache plan covers; none for a task that only judges)."""
    return [_fit(stem, template, price, counter) for stem, template in templates]


def fit_lines(fits: list[OpeningFit], price: ModelPrice, counter: TokenCounter) -> list[str]:
    """What ``task check --model`` prints: a heading, one line per template, then warnings."""
    rules = price.caching
    how = "" if counter.exact else f", counted approximately with {counter.name}"
    if not price.caches or rules is None:
        head = f"openings at {price.model} prices{how} (the card gives it no cached input):"
    else:
        head = (
            f"openings at {price.model} prices{how} (cached from {rules.min_tokens:,} tokens, "
            f"in steps of {rules.step_tokens}):"
        )
    lines = [head]
    for fit in fits:
        parts = [f"  {fit.stem}: {fit.short:,} tokens"]
        if fit.padded is not None:
            parts.append(f"{fit.padded:,} with its cached-only blocks")
        if fit.padded is None:
            sent = ""
        elif fit.interactive_pads:
            sent = "calls send the longer one" + (
                "" if fit.batch_pads else ", batch lines the shorter"
            )
        elif price.caches:
            sent = "calls send the shorter one (caching the longer costs more than it saves)"
        else:
            sent = "calls send the shorter one"
        if sent:
            parts.append(sent)
        if fit.cached:
            parts.append(f"a warm call gets {fit.cached:,} from the cache")
        elif rules is not None and price.caches:
            parts.append(f"not cached (under {rules.min_tokens:,})")
        lines.append("; ".join(parts))
    for fit in fits:
        if fit.near and rules is not None:
            lines.append(
                f"note: {fit.stem}'s opening clears the {rules.min_tokens:,}-token minimum by "
                f"{fit.sent - rules.min_tokens} tokens, counted with {counter.name} instead of "
                f"{price.tokenizer}; the provider may count it under the minimum and cache "
                f"nothing: lengthen its '=== if cached' blocks by a few lines, or check it with "
                f"{price.tokenizer}"
            )
    return lines
