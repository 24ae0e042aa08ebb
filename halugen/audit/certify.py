"""What an audit's figures can claim: the size an interval needs, and the probes' verdict.

A 95% interval on an accuracy near 50% over ``n`` items is about ±0.98/sqrt(n): ±5 points
takes 385 items, and 13 items give ±27. ``--balance`` refuses a hard split smaller than
``SIZE_FLOOR`` unless told ``--min-items``, and says in one line what its size can and
cannot show. The probes' verdict (``certify_lines``) says "within 5 points of chance" only
for a probe whose whole interval lies in 45-55%.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..intervals import CHANCE_BAND
from .probes import PROBES
from .report import AuditRow

__all__ = ["certify_lines"]


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
