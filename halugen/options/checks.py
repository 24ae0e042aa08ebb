"""What a setting's declaration names as its ``check`` (what is wrong with a value, naming
the flag; None when nothing is: ``settings/build.py`` refuses it as a usage error) and its
``convert`` (the value as the run object holds it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "blank_none",
    "comma_list",
    "megabytes",
    "not_negative",
    "number_above_zero",
    "number_from_zero",
    "one_or_more",
    "path_or_none",
    "positive",
    "share",
]


def positive(flag: str, value: Any) -> str | None:
    if value is not None and value <= 0:
        return f"{flag} must be more than zero (got {value:g})"
    return None


def not_negative(flag: str, value: Any) -> str | None:
    if value < 0:
        return f"{flag} must not be negative (got {value:g})"
    return None


def share(flag: str, value: Any) -> str | None:
    """A share of the budget left: above 0, at most 1 (``--in-flight-share``)."""
    if not 0 < float(value) <= 1:
        return (
            f"{flag} must be above 0 and at most 1 (got {float(value):g}): "
            f"the share of the budget left that calls in flight may hold"
        )
    return None


def _number(flag: str, value: Any, *, zero: bool) -> str | None:
    low = isinstance(value, int | float) and (value < 0 if zero else value <= 0)
    if not isinstance(value, int | float) or isinstance(value, bool) or low:
        least = "0 or more" if zero else "more than zero"
        return f"{flag} must be a number {least} (got {value!r})"
    return None


def number_from_zero(flag: str, value: Any) -> str | None:
    return _number(flag, value, zero=True)


def number_above_zero(flag: str, value: Any) -> str | None:
    return _number(flag, value, zero=False)


def comma_list(value: Any) -> Any:
    """``qa,dialogue`` (a flag or the file's string) as a list; the file's list as it is."""
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    return value


def one_or_more(value: Any) -> Any:
    """One value as a list of it (the file's ``seeds = "a.json"``)."""
    return [value] if isinstance(value, str) else value


def blank_none(value: Any) -> Any:
    return value or None


def path_or_none(value: Any) -> Path | None:
    return Path(value) if value else None


def megabytes(value: Any) -> int:
    """Megabytes as bytes."""
    return int(value * 2**20)
