"""Unwrapping anyio's exception groups where the caller handles one exception at a time."""

from __future__ import annotations

from .errors import AuthError, BudgetExhausted, EndpointUnreachable, StoreError

__all__ = ["most_serious"]

_RANK = (KeyboardInterrupt, SystemExit, StoreError, AuthError, EndpointUnreachable, BudgetExhausted)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in _leaves(e)]
    return [exc]


def most_serious(exc: BaseException) -> BaseException:
    """The single exception a group stands for: systemic ones first, else the first leaf."""
    leaves = _leaves(exc)
    for kind in _RANK:
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return leaves[0]
