"""The price a run accounts with, settled once before its session opens."""

from __future__ import annotations

import pytest

from halugen.config import RunConfig
from halugen.cost.prices import find_price
from halugen.cost.run_price import RunPrice, resolve_price
from halugen.errors import UsageError


def test_a_model_on_the_card_is_priced_by_it_and_nothing_is_said():
    price = find_price("gpt-4o-mini")
    assert resolve_price(RunConfig(model="gpt-4o-mini")) == RunPrice(price, ())


def test_an_unpriced_model_counts_zero_and_says_so():
    run_price = resolve_price(RunConfig(model="my-own-model"))
    assert run_price.price.card == "unpriced"
    assert run_price.price.cost(1000, 1000) == 0
    assert run_price.notes and "no price is known" in run_price.notes[0]


def test_an_unpriced_model_with_a_budget_is_refused():
    with pytest.raises(UsageError, match="cannot be enforced"):
        resolve_price(RunConfig(model="my-own-model", budget_usd=1.0))
