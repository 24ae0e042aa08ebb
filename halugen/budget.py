"""Money: budget parsing, price cards, and the in-memory ledger that enforces the budget.

Amounts are integers of picodollars (1e-12 USD) so sums are exact: a price of $0.0375 per
million tokens is 37,500 pUSD per token. The durable side of the ledger (reservation rows
committed before a request leaves) lives in the store; this object decides what fits.

A price card (``budgets/*.toml``) gives per model the prices of input, cached input and
output tokens, and may describe the provider's prompt caching (``[caching]``: ``CacheRules``)
and cheaper service tiers (``[models."m".tiers.flex]``: ``TierPrice``). Those two only
inform ``halugen estimate``; the budget always reserves the uncached worst case.

Reserve -> settle / release / consume:
    reserve(amount)   waits (first come, first served) until amount fits under the budget
                      counting what is spent and what is reserved by calls in flight; raises
                      BudgetExhausted when it cannot fit and nothing is in flight to free money
    leaving(r)        a queued reservation's request leaves (``reserve(..., queued=True)``):
                      from now on the provider may bill it
    settle(r, cost)   the provider reported usage: spend ``cost``, release the rest. A cost
                      above the reservation (the provider's tokenizer counts more than our
                      estimate) is spent all the same and counted as an overshoot
    release(r)        the call was not billed (e.g. 429, 5xx): give the whole amount back
    consume(r)        the outcome is unknown (timeout after sending): count it all as spent

``reserved`` is every open reservation (what a new one must fit beside); ``queued`` the part
of it whose requests have not left (waiting for a rate-limit slot), which Ctrl-C gives back
at $0 and a kill never counts, so the money at the provider is ``reserved - queued``.
"""

from __future__ import annotations

import asyncio
import re
import tomllib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TypedDict, Unpack

from .errors import BudgetExhausted, ConfigError, UsageError
from .resources import data_dir

__all__ = [
    "PUSD_PER_USD",
    "CacheRules",
    "Ledger",
    "ModelPrice",
    "PriceCard",
    "PriceDetails",
    "PromptMargin",
    "Reservation",
    "TierPrice",
    "find_price",
    "format_usd",
    "load_price_cards",
    "parse_budget",
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


class PromptMargin:
    """How much to inflate our prompt-token estimate when reserving money.

    Starts generous (``initial``, for a tokenizer like ours). Once the provider has reported
    usage it follows the largest reported/estimated ratio seen so far: times ``initial``
    while fewer than ``warmup`` reports are in (one text's ratio says little about the next
    one's), then plus a little, so the reservation stays an upper bound without tying up
    much more money than needed, whatever tokenizer the provider counts with.
    """

    def __init__(self, initial: float = 1.25, *, warmup: int = 8, floor: float = 1.02) -> None:
        self._initial = initial
        self._warmup = warmup
        self._floor = floor
        self._max_ratio = 0.0
        self._seen = 0

    def observe(self, estimated: int, reported: int) -> None:
        if estimated > 0 and reported > 0:
            self._seen += 1
            self._max_ratio = max(self._max_ratio, reported / estimated)

    @property
    def calibrated(self) -> bool:
        """Has the provider reported usage at least once (so the ratio is known)?"""
        return self._seen > 0

    @property
    def ratio(self) -> float:
        """The largest reported/estimated prompt-token ratio seen (0 before any)."""
        return self._max_ratio

    @property
    def factor(self) -> float:
        if self._seen < self._warmup:
            return max(self._initial, self._max_ratio * self._initial)
        return max(self._floor, self._max_ratio * 1.05)

    def reserve_tokens(self, estimated: int) -> int:
        return int(estimated * self.factor) + 8


@dataclass(slots=True, eq=False)
class Reservation:
    amount: int
    done: bool = False
    queued: bool = False  # its request has not left yet


class Ledger:
    """The budget in memory. ``budget`` None means unlimited (still counted)."""

    def __init__(self, budget: int | None, *, spent: int = 0) -> None:
        self.budget = budget
        self.spent = spent
        self.reserved = 0
        self.queued = 0  # the part of ``reserved`` whose requests have not left
        self.exhausted = False
        self.overshoot = 0  # spent above what was reserved, this session
        self.overshoots = 0  # settlements above their reservation, this session
        self._waiters: deque[tuple[int, bool, asyncio.Future[Reservation]]] = deque()

    @property
    def remaining(self) -> int | None:
        if self.budget is None:
            return None
        return self.budget - self.spent - self.reserved

    @property
    def at_provider(self) -> int:
        """Reserved by requests that have left: what the provider may bill."""
        return self.reserved - self.queued

    def _fits(self, amount: int) -> bool:
        return self.budget is None or self.spent + self.reserved + amount <= self.budget

    def _take(self, amount: int, queued: bool) -> Reservation:
        self.reserved += amount
        if queued:
            self.queued += amount
        return Reservation(amount, queued=queued)

    async def reserve(self, amount: int, *, queued: bool = False) -> Reservation:
        """Reserve ``amount`` (see the module docstring); ``queued``: its request has not
        left yet, ``leaving`` says when it does."""
        if not self._waiters and self._fits(amount):
            return self._take(amount, queued)
        if not self._waiters and self.reserved == 0:
            self.exhausted = True
            raise BudgetExhausted(f"a call needing {format_usd(amount)} does not fit the budget")
        fut: asyncio.Future[Reservation] = asyncio.get_running_loop().create_future()
        self._waiters.append((amount, queued, fut))
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self.release(fut.result())
            else:
                self._waiters = deque(w for w in self._waiters if w[2] is not fut)
                self._pump()
            raise

    def _pump(self) -> None:
        while self._waiters:
            amount, queued, fut = self._waiters[0]
            if fut.done():
                self._waiters.popleft()
                continue
            if self._fits(amount):
                self._waiters.popleft()
                fut.set_result(self._take(amount, queued))
            elif self.reserved == 0:
                # nothing in flight can free money: this one will never fit
                self._waiters.popleft()
                self.exhausted = True
                fut.set_exception(
                    BudgetExhausted(f"a call needing {format_usd(amount)} does not fit the budget")
                )
            else:
                return  # head of line waits for calls in flight to settle

    def leaving(self, r: Reservation) -> None:
        """The request of a queued reservation leaves: the provider may bill it from now on."""
        if r.queued and not r.done:
            r.queued = False
            self.queued -= r.amount

    def _close(self, r: Reservation, spend: int) -> None:
        if r.done:
            return
        r.done = True
        self.reserved -= r.amount
        if r.queued:
            r.queued = False
            self.queued -= r.amount
        self.spent += spend
        self._pump()

    def settle(self, r: Reservation, cost: int) -> int:
        """Spend ``cost`` for ``r``; returns by how much it exceeds the reservation (0 if not)."""
        over = max(0, cost - r.amount) if not r.done else 0
        if over:
            self.overshoot += over
            self.overshoots += 1
        self._close(r, cost)
        return over

    def release(self, r: Reservation) -> None:
        self._close(r, 0)

    def overshoot_note(self) -> str | None:
        """One line for the end of a run in which calls cost more than was reserved."""
        if not self.overshoots:
            return None
        return (
            f"{self.overshoots} call(s) cost more than was reserved ({format_usd(self.overshoot)} "
            f"over in all: the provider counts more tokens than our estimate, which later "
            f"reservations allow for; see the overshoots view)"
        )

    def consume(self, r: Reservation) -> None:
        self._close(r, r.amount)
