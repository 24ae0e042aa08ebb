"""How a task's openings fit a provider's prompt cache at one model's prices.

``halugen task check PATH --model M`` prints this for the sampling and filter templates: the
fixed opening every request of a template starts with, in tokens, with and without its
``=== if cached`` blocks; which variant the cache plan (``cacheplan``) sends interactively and
in batch lines; and what a warm call then gets from the cache. Someone writing their own task
learns before paying whether its openings will be cached, and by how much they clear the
minimum.

The count is only as good as the tokenizer at hand. Offline, tiktoken may lack the card's
encoding and count with a close relative (``TokenCounter.exact`` is False). Measured on the
built-in openings, cl100k_base counts 1-2% more tokens than o200k_base, the encoding of OpenAI's
current models, so an opening that clears the minimum by less than ``APPROX_MARGIN`` of it
under an approximate count may fall short at the provider, which would then cache nothing:
such an opening is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cacheplan import pads
from .estimate import fixed_opening
from .prices import ModelPrice
from .prompts import Template
from .tasks.base import TaskSpec
from .tasks.templates import task_template
from .tokens import TokenCounter

__all__ = ["APPROX_MARGIN", "OpeningFit", "fit_lines", "opening_fits"]

APPROX_MARGIN = 0.02  # of the caching minimum: how far two BPE tokenizers' counts drift apart


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
    cached = rules.cacheable(sent) if price.caches and rules is not None else 0
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


def opening_fits(spec: TaskSpec, price: ModelPrice, counter: TokenCounter) -> list[OpeningFit]:
    """The sampling and filter templates' openings (the templates a run's cache plan covers);
    none for a task that only judges."""
    if not spec.generated:
        return []
    stems = (*spec.sample_templates, spec.filter_template)
    return [_fit(stem, task_template(spec, stem), price, counter) for stem in stems]


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
