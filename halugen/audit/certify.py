"""What an audit's figures can claim: the size an interval needs, and the probes' verdict.

A 95% interval on an accuracy near 50% over ``n`` items is about ±0.98/sqrt(n): ±5 points
takes 385 items, and 13 items give ±27. ``--balance`` refuses a hard split smaller than
``SIZE_FLOOR`` unless told ``--min-items``, and says in one line what its size can and
cannot show. The probes' verdict (``certify_lines``) says "within 5 points of chance" only
for a probe whose whole interval lies in 45-55%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .probes import CHANCE_BAND, PROBES
from .report import AuditRow

__all__ = ["SIZE_FLOOR", "certify_lines", "half_width", "size_line"]

Z95 = 1.959964


def half_width(n: int) -> float:
    """The half-width of a 95% interval on a proportion near 50% over ``n`` items."""
    return Z95 * 0.5 / math.sqrt(max(1, n))


# the fewest items whose interval is ±5 points or narrower: 385
SIZE_FLOOR = math.ceil((Z95 * 0.5 / CHANCE_BAND) ** 2)


def size_line(n: int) -> str:
    """One line: what ``n`` items can and cannot show about an accuracy beside 50%."""
    half = half_width(n) * 100
    points = f"±{half:.1f}" if half < 10 else f"±{half:.0f}"
    band = CHANCE_BAND * 100
    if half <= band:
        return (
            f"n={n}: a 95% interval of {points} points; can tell {50 + band:g}% from chance "
            f"and certify a figure within {band:g} points of it"
        )
    return (
        f"n={n}: a 95% interval of {points} points; cannot tell {50 + band:g}% from chance "
        f"(only {math.ceil(50 + half)}% or more), nor certify any figure within {band:g} "
        f"points of it"
    )


def certify_lines(rows: Sequence[AuditRow]) -> list[str]:
    """Per source and task: every probe within 5 points of chance, or the ones that are
    not (a probe whose interval crosses 45% or 55% is not claimed either way)."""
    by: dict[tuple[str, str], list[AuditRow]] = {}
    for r in rows:
        if r.measure in PROBES and r.pattern == "all":
            by.setdefault((r.source, r.task), []).append(r)
    out = []
    for (source, task), probes in by.items():
        low, high = 0.5 - CHANCE_BAND, 0.5 + CHANCE_BAND
        outside = [
            r
            for r in probes
            if r.low is None or r.high is None or r.low < low - 1e-12 or r.high > high + 1e-12
        ]
        n = probes[0].n
        if not outside:
            out.append(
                f"{source} [{task}]: certified: every probe ({len(probes)}) within "
                f"{CHANCE_BAND * 100:g} points of chance (whole 95% interval in "
                f"{low * 100:g}-{high * 100:g}%, n={n})"
            )
            continue
        named = ", ".join(
            f"{r.measure} {_pct(r.value)}% [{_pct(r.low)}, {_pct(r.high)}]" for r in outside
        )
        out.append(
            f"{source} [{task}]: NOT certified within {CHANCE_BAND * 100:g} points of chance "
            f"(n={n}): {named}"
        )
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}"
