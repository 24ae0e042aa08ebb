"""The cache plan: whether a run sends each template's ``=== if cached`` blocks.

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
"""

from __future__ import annotations

import dataclasses

from .estimate import fixed_opening
from .prices import ModelPrice
from .prompts import Template
from .stages.context import LoadedTask
from .tokens import TokenCounter

__all__ = ["opening_cost", "pads", "plan_task", "planned"]


def opening_cost(price: ModelPrice, tokens: int, *, batch: bool) -> int:
    """Picodollars a call pays for an opening of ``tokens`` once it is cached (when it can be),
    before any batch discount (the same factor on both sides of every comparison)."""
    caches = price.batch_caches if batch else price.caches
    cached = price.caching.cacheable(tokens) if caches and price.caching is not None else 0
    return price.cost(tokens, 0, cached)


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


def plan_task(
    task: LoadedTask, price: ModelPrice, counter: TokenCounter, *, batch: bool
) -> LoadedTask:
    """``task`` with the variant of each of its templates the run sends."""
    return dataclasses.replace(
        task,
        sample_templates=tuple(
            planned(t, price, counter, batch=batch) for t in task.sample_templates
        ),
        filter_template=planned(task.filter_template, price, counter, batch=batch),
    )
