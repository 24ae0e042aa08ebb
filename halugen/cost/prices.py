"""Money units and price cards: what a token costs.

Amounts are integers of picodollars (1e-12 USD) so sums are exact: a price of $0.0375 per
million tokens is 37,500 pUSD per token.

A price card (``budgets/*.toml``) gives per model the prices of input, cached input and
output tokens, and may describe the provider's prompt caching (``[caching]``: ``CacheRules``)
and cheaper service tiers (``[models."m".tiers.flex]``: ``TierPrice``). Those two only
inform ``halugen estimate``; the budget always reserves the uncached worst case
(budget.py).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TypedDict, Unpack

from ..errors import ConfigError, UsageError
from ..resources import data_dir

__all__ = [
    "PUSD_PER_USD",
    "CacheRules",
    "ModelPrice",
    "PriceCard",
    "PriceDetails",
    "TierPrice",
    "budget_from_flag",
    "find_price",
    "format_usd",
    "load_price_cards",
    "parse_budget",
    "usd_to_pusd",
]

PUSD_PER_USD = 10**12
_BUDGET = re.compile(r"^\s*(?:\$\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*usd)\s*$", re.IGNORECASE)


def parse_budget(text: str) -> int:
    """'50usd', '$50', '12.5USD' -> picodollars. Anything else is a UsageError."""
    m = _BUDGET.match(text or "")
    if not m:
        raise UsageError(
            f"budget {text!r} is not an amount in US dollars: write it like 50usd, $50 or 12.5USD"
        )
    amount = Decimal(m.group(1) or m.group(2))
    if amount <= 0:
        raise UsageError(f"budget {text!r} must be more than zero")
    return int(amount * PUSD_PER_USD)


_BARE_AMOUNT = re.compile(r"\s*(\d*(?:\.\d+)?)\s*(usd)?\s*", re.IGNORECASE)


def budget_from_flag(text: str) -> int:
    """``--budget`` in picodollars; a value the shell mangled gets a message that says so.

    Unquoted, ``--budget $50`` reaches us as ``0``: the shell reads ``$5`` as its fifth
    positional parameter (empty) and keeps the ``0``; ``$5`` arrives as the empty string.
    """
    bare = _BARE_AMOUNT.fullmatch(text)
    if bare is not None:
        number, unit = bare.group(1), bare.group(2)
        if not number or float(number) == 0:
            got = "an empty value" if not text.strip() else repr(text)
            raise UsageError(
                f"--budget got {got}: typed without quotes, --budget $50 reaches halugen as "
                f"'0' (and $5 as nothing), because the shell replaces '$5' with an empty "
                f"variable. Write --budget 50usd or quote it: --budget '$50'"
            )
        if not unit:
            raise UsageError(
                f"--budget {text!r} has no currency: write {number}usd. (Typed without "
                f"quotes, a dollar amount loses its '$' and first digit to the shell: "
                f"$12.5 arrives as '2.5'; quote it: --budget '$12.5')"
            )
    return parse_budget(text)


def usd_to_pusd(usd: float | str | Decimal) -> int:
    try:
        return int(Decimal(str(usd)) * PUSD_PER_USD)
    except InvalidOperation:
        raise UsageError(f"{usd!r} is not a number of US dollars") from None


def format_usd(pusd: int | None) -> str:
    if pusd is None:
        return "unlimited"
    usd = pusd / PUSD_PER_USD
    if usd == 0:
        return "$0"
    if abs(usd) >= 100:
        return f"${usd:,.2f}"
    if abs(usd) >= 0.01:
        return f"${usd:.4f}"
    return f"${usd:.6f}"


def _per_token(usd_per_million: float) -> int:
    return int(Decimal(str(usd_per_million)) * PUSD_PER_USD / 1_000_000)


@dataclass(frozen=True, slots=True)
class CacheRules:
    """A provider's automatic prompt caching, as its price card describes it.

    A request whose first tokens were sent recently (by a request of the same model) gets
    them from cache, billed at the cached-input price, from ``min_tokens`` on and in whole
    steps of ``step_tokens``. A prefix stays cached ``idle_s`` after its last use and
    ``max_s`` at most (``extended_s`` when the request asks for extended retention);
    ``batch``: the Batch API gives cached input too (a model's card entry may say otherwise).
    """

    min_tokens: int = 1024
    step_tokens: int = 128
    idle_s: float = 300.0
    max_s: float = 3600.0
    extended_s: float | None = None
    batch: bool = False
    source: str = ""
    date: str = ""

    def cacheable(self, shared: int) -> int:
        """Tokens served from cache when a request's first ``shared`` tokens were cached."""
        if shared < self.min_tokens:
            return 0
        return self.min_tokens + (shared - self.min_tokens) // self.step_tokens * self.step_tokens


@dataclass(frozen=True, slots=True)
class TierPrice:
    """A cheaper service tier of a model (e.g. OpenAI's flex), in picodollars per token."""

    name: str
    input: int
    output: int
    cached_input: int

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> int:
        return _cost(self, prompt_tokens, completion_tokens, cached_tokens)


def _cost(
    price: TierPrice | ModelPrice, prompt_tokens: int, completion_tokens: int, cached_tokens: int
) -> int:
    """Picodollars for these tokens: cached prompt tokens at the cached price (never more of
    them than the prompt has), the rest of the prompt at the input price."""
    cached = min(cached_tokens, prompt_tokens)
    return (
        (prompt_tokens - cached) * price.input
        + cached * price.cached_input
        + completion_tokens * price.output
    )


class PriceDetails(TypedDict, total=False):
    """The fields of a ``ModelPrice`` besides its model and prices (``per_million``)."""

    tokenizer: str
    context_window: int
    batch_discount: float
    card: str
    date: str
    caching: CacheRules | None
    batch_caching: bool | None
    tiers: tuple[TierPrice, ...]


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """Prices of one model, in picodollars per token."""

    model: str
    input: int
    output: int
    cached_input: int
    tokenizer: str = "cl100k_base"
    context_window: int = 128_000
    batch_discount: float = 0.0
    card: str = ""  # where the price came from: card name, or "command line"
    date: str = ""  # when the card's prices were checked
    caching: CacheRules | None = None  # the provider's prompt caching (None: not described)
    batch_caching: bool | None = None  # batch lines get cached input (None: as the card says)
    tiers: tuple[TierPrice, ...] = ()  # cheaper service tiers the card lists

    @property
    def caches(self) -> bool:
        """Does the provider serve this model's repeated openings at a cheaper price?"""
        return self.caching is not None and self.cached_input < self.input

    @property
    def batch_caches(self) -> bool:
        """Do the provider's batch lines of this model get the cached-input price?"""
        if not self.caches:
            return False
        assert self.caching is not None
        return self.caching.batch if self.batch_caching is None else self.batch_caching

    @classmethod
    def per_million(
        cls,
        model: str,
        input_usd: float,
        output_usd: float,
        cached_input_usd: float | None = None,
        **kw: Unpack[PriceDetails],
    ) -> ModelPrice:
        cached = input_usd if cached_input_usd is None else cached_input_usd
        return cls(
            model=model,
            input=_per_token(input_usd),
            output=_per_token(output_usd),
            cached_input=_per_token(cached),
            **kw,
        )

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> int:
        return _cost(self, prompt_tokens, completion_tokens, cached_tokens)

    def as_record(self) -> dict[str, object]:
        per_m = 1_000_000 / PUSD_PER_USD
        return {
            "model": self.model,
            "usd_per_million_input": self.input * per_m,
            "usd_per_million_cached_input": self.cached_input * per_m,
            "usd_per_million_output": self.output * per_m,
            "tokenizer": self.tokenizer,
            "context_window": self.context_window,
            "batch_discount": self.batch_discount,
            "card": self.card,
            "date": self.date,
            # what the card says of prompt caching (the ledger prices cached tokens from usage)
            "cache_min_tokens": self.caching.min_tokens if self.caches and self.caching else None,
            "batch_caching": self.batch_caches,
        }


@dataclass(frozen=True)
class PriceCard:
    name: str
    date: str
    models: dict[str, ModelPrice]
    aliases: dict[str, str] = field(default_factory=dict)
    source: str = ""
    caching: CacheRules | None = None  # the provider's prompt caching, when the card says

    def lookup(self, model: str) -> ModelPrice | None:
        name = self.aliases.get(model, model)
        if name in self.models:
            return self.models[name]
        # dated snapshots: gpt-4o-mini-2024-07-18 -> gpt-4o-mini
        base = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", name)
        base = self.aliases.get(base, base)
        if base in self.models:
            return self.models[base]
        wildcard = self.models.get("*")
        if wildcard is not None:
            return _renamed(wildcard, model)
        return None


def _renamed(price: ModelPrice, model: str) -> ModelPrice:
    return replace(price, model=model)


def _cache_rules(path: Path, data: object) -> CacheRules | None:
    """The card's ``[caching]`` table (None when it has none)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(f"price card {path}: [caching] must be a table")
    try:
        rules = CacheRules(
            min_tokens=int(data.get("min_prefix_tokens", 1024)),
            step_tokens=int(data.get("increment_tokens", 128)),
            idle_s=float(data.get("idle_retention_s", 300.0)),
            max_s=float(data.get("max_retention_s", 3600.0)),
            extended_s=(
                float(data["extended_retention_s"]) if "extended_retention_s" in data else None
            ),
            batch=_flag(data.get("batch", False)),
            source=str(data.get("source", "")),
            date=str(data.get("date", "")),
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"price card {path}: [caching] needs whole numbers of tokens, seconds and a true/"
            f"false batch: {exc}"
        ) from None
    if rules.min_tokens < 1 or rules.step_tokens < 1:
        raise ConfigError(
            f"price card {path}: [caching] min_prefix_tokens and increment_tokens must be "
            "at least 1"
        )
    return rules


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


def _tiers(path: Path, model: str, data: object) -> tuple[TierPrice, ...]:
    """A model's ``tiers`` table: name -> input / cached_input / output USD per million."""
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise ConfigError(f"price card {path}: model {model!r}: tiers must be a table")
    tiers = []
    for name, spec in data.items():
        try:
            cached = spec.get("cached_input", spec["input"])
            tiers.append(
                TierPrice(
                    name=str(name),
                    input=_per_token(float(spec["input"])),
                    output=_per_token(float(spec["output"])),
                    cached_input=_per_token(float(cached)),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(
                f"price card {path}: model {model!r}, tier {name!r} needs numeric input and "
                f"output prices (USD per million tokens): {exc}"
            ) from None
    return tuple(tiers)


def _load_card(path: Path) -> PriceCard:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"price card {path}: {exc}") from None
    name = path.stem
    date = str(data.get("date", ""))
    if not date:
        raise ConfigError(f"price card {path} has no 'date' of its prices")
    discount = float(data.get("batch_discount", 0.0))
    caching = _cache_rules(path, data.get("caching"))
    models: dict[str, ModelPrice] = {}
    aliases: dict[str, str] = {}
    for model, spec in (data.get("models") or {}).items():
        if not isinstance(spec, dict):
            raise ConfigError(f"price card {path}: [models.{model!r}] must be a table")
        batch_caching = spec.get("batch_caching")
        if batch_caching is not None and not isinstance(batch_caching, bool):
            raise ConfigError(
                f"price card {path}: model {model!r}: batch_caching must be true or false"
            )
        tiers = _tiers(path, model, spec.get("tiers"))
        try:
            models[model] = ModelPrice.per_million(
                model,
                float(spec["input"]),
                float(spec["output"]),
                float(spec["cached_input"]) if "cached_input" in spec else None,
                tokenizer=str(spec.get("tokenizer", "cl100k_base")),
                context_window=int(spec.get("context_window", 128_000)),
                batch_discount=float(spec.get("batch_discount", discount)),
                card=name,
                date=date,
                caching=caching,
                batch_caching=batch_caching,
                tiers=tiers,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"price card {path}: model {model!r} needs numeric input and output prices "
                f"(USD per million tokens): {exc}"
            ) from None
        for alias in spec.get("aliases", []):
            aliases[str(alias)] = model
    return PriceCard(
        name=name,
        date=date,
        models=models,
        aliases=aliases,
        source=str(data.get("source", "")),
        caching=caching,
    )


def load_price_cards(extra: Iterable[Path] = ()) -> list[PriceCard]:
    """The bundled cards (``budgets/*.toml``) plus any extra card files, extra ones first."""
    cards = [_load_card(Path(p)) for p in extra]
    cards += [_load_card(p) for p in sorted(data_dir("budgets").glob("*.toml"))]
    return cards


def find_price(
    model: str,
    *,
    card: str | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    extra_cards: Iterable[Path] = (),
) -> ModelPrice | None:
    """The price of ``model``: command-line prices win, then the named card, then any card.

    ``card`` is a bundled card's name (e.g. "local") or a path to a TOML card. The
    wildcard ``local`` card is only used when asked for by name.
    """
    extra = list(extra_cards)
    if card and (card.endswith(".toml") or "/" in card):
        extra.insert(0, Path(card))
        card = Path(card).stem
    cards = load_price_cards(extra)
    found: ModelPrice | None = None
    if card:
        named = [c for c in cards if c.name == card]
        if not named:
            known = ", ".join(sorted({c.name for c in cards}))
            raise UsageError(f"price card {card!r} not found (bundled cards: {known})")
        found = named[0].lookup(model)
    else:
        for c in cards:
            if "*" in c.models:
                continue
            found = c.lookup(model)
            if found:
                break
    if price_in is not None or price_out is not None:
        if price_in is None or price_out is None:
            raise UsageError("give both --price-in and --price-out (USD per million tokens)")
        base = found
        found = ModelPrice.per_million(
            model,
            price_in,
            price_out,
            tokenizer=base.tokenizer if base else "cl100k_base",
            context_window=base.context_window if base else 128_000,
            # the provider's batch discount is not a token price: the card's still holds
            batch_discount=base.batch_discount if base else 0.0,
            card="command line",
            date="",
        )
    return found
