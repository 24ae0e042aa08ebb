"""The price a run accounts with, settled once before its session opens.

``resolve_price`` finds the run's model on its card (or the prices given on the command
line); ``check_judge_price`` refuses a verify judge that price would count wrong. The caller
that opens a session settles both first and hands the session the finished ``RunPrice``.
"""

from __future__ import annotations

from typing import NamedTuple

from ..config import RunConfig
from ..errors import UsageError
from .prices import ModelPrice, find_price

__all__ = ["RunPrice", "check_judge_price", "resolve_price"]


class RunPrice(NamedTuple):
    """The price to account with, and what the user is told about it."""

    price: ModelPrice
    notes: tuple[str, ...]


def resolve_price(cfg: RunConfig) -> RunPrice:
    """The price to account with, and notes for the user. Unknown + budget is an error."""
    price = find_price(
        cfg.model, card=cfg.price_card, price_in=cfg.price_in, price_out=cfg.price_out
    )
    if price is not None:
        return RunPrice(price, ())
    if cfg.budget_usd is not None:
        raise UsageError(
            f"no price card lists model {cfg.model!r}, so a budget cannot be enforced; give "
            f"--price-in and --price-out (USD per million tokens), or --price-card local for "
            f"a self-hosted server"
        )
    return RunPrice(
        ModelPrice.per_million(cfg.model, 0.0, 0.0, card="unpriced"),
        (
            f"no price is known for model {cfg.model!r}: costs are counted as $0 "
            f"(give --price-in/--price-out to count them)",
        ),
    )


def check_judge_price(cfg: RunConfig, price: ModelPrice) -> None:
    """Refuse a ``--verify-model`` the run's price would count wrong.

    A session accounts every call at one price (the run's model's); a judge model priced
    otherwise would make the budget count its calls at the wrong price. Prices given on the
    command line apply to both models, and a local card prices both at 0.
    """
    judge = cfg.judge_model
    if not cfg.verify or judge == cfg.model:
        return
    found = find_price(judge, card=cfg.price_card, price_in=cfg.price_in, price_out=cfg.price_out)
    same = found is not None and (found.input, found.output, found.cached_input) == (
        price.input,
        price.output,
        price.cached_input,
    )
    if not same:
        raise UsageError(
            f"--verify-model {judge} is priced differently from the run's model {cfg.model} "
            f"(or has no price), and a run counts its calls at one price: verify with the "
            f"run's model, with a model of the same price, or give --price-in/--price-out"
        )
