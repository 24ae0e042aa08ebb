"""The Batch API's price: a card's batch discount applied to what a call costs interactively."""

from __future__ import annotations

import math
from fractions import Fraction

from .prices import ModelPrice

__all__ = ["batch_cost"]


def batch_cost(price: ModelPrice, cost: int) -> int:
    """``cost`` at the card's batch price (rounded up: a reservation must not fall short)."""
    if not price.batch_discount:
        return cost
    return math.ceil(Fraction(cost) * (1 - Fraction(str(price.batch_discount))))
