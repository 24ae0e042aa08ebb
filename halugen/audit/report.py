"""An audit as rows (task, pattern, measure, value with interval, chance), rendered and stored.

``audit_items`` runs the classifiers of ``classifiers`` on a benchmark's items, per task and
per pattern (a pattern with fewer than ``min_pairs`` items is left out: its figure would be
noise), and, for a generated run, the filter's position bias and the pattern shares.
``audit_tables`` and ``csv_table`` lay the rows out for the one table renderer
(``tables.py``); ``save`` appends them to ``audit_results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from ..records import fingerprint
from ..store.db import Store
from ..store.rows import AuditResultRow
from ..tables import TableData
from .classifiers import MEASURES, examples_of
from .generation import Share
from .items import Item

__all__ = [
    "AuditRow",
    "audit_id",
    "audit_items",
    "audit_tables",
    "csv_table",
    "rows_from_shares",
    "save",
]

MIN_PAIRS = 20
_DASH = "—"


@dataclass(frozen=True)
class AuditRow:
    source: str  # a file, or "run:<id>" / "store"
    task: str
    pattern: str  # "all" or one pattern
    measure: str
    n: int  # items (pairs, or general-track responses)
    value: float | None
    low: float | None
    high: float | None
    chance: float | None
    note: str = ""


def audit_items(
    items: Sequence[Item],
    *,
    source: str,
    measures: Sequence[str] = tuple(MEASURES),
    min_pairs: int = MIN_PAIRS,
    probes: Sequence[str] = (),
) -> list[AuditRow]:
    """The classifiers' cross-validated figures, per task and per pattern, then the
    certifying ``probes``' (``probes.PROBES``) per task."""
    from .probes import PROBES, within_chance

    rows: list[AuditRow] = []
    by_task: dict[str, list[Item]] = {}
    for item in items:
        by_task.setdefault(item.task, []).append(item)
    for task, task_items in sorted(by_task.items()):
        groups = [("all", task_items)]
        patterns = sorted({i.pattern for i in task_items if i.pattern})
        if len(patterns) > 1:
            for pattern in patterns:
                subset = [i for i in task_items if i.pattern == pattern]
                if len(subset) >= min_pairs:
                    groups.append((pattern, subset))
        for pattern, subset in groups:
            examples = examples_of(subset)
            for measure in measures:
                what, classify = MEASURES[measure]
                s = classify(examples)
                note = what + (" (balanced accuracy)" if s.balanced else "")
                rows.append(
                    AuditRow(
                        source,
                        task,
                        pattern,
                        measure,
                        len(subset),
                        s.value,
                        s.low,
                        s.high,
                        0.5,
                        note,
                    )
                )
        examples = examples_of(task_items)
        for probe in probes:
            what, run_probe = PROBES[probe]
            s = run_probe(examples)
            verdict = "within" if within_chance(s) else "NOT within"
            rows.append(
                AuditRow(
                    source,
                    task,
                    "all",
                    probe,
                    len(task_items),
                    s.value,
                    s.low,
                    s.high,
                    0.5,
                    f"certifying probe: {what}; {verdict} 5 points of chance",
                )
            )
    return rows


def rows_from_shares(shares: Sequence[Share], source: str) -> list[AuditRow]:
    return [
        AuditRow(
            source, s.task, s.pattern, s.measure, s.n, s.value, s.low, s.high, s.chance, s.note
        )
        for s in shares
    ]


def audit_id(source: str) -> str:
    return f"audit-{datetime.now(UTC):%Y%m%d-%H%M%S}-{fingerprint(source, size=6)}"


def save(store: Store, rows: Sequence[AuditRow], identity: str) -> None:
    """Append ``rows`` to ``audit_results`` under ``identity`` (one commit)."""
    store.writer.put(
        [
            AuditResultRow(
                audit_id=identity,
                source=r.source,
                task=r.task,
                pattern=r.pattern,
                measure=r.measure,
                n=r.n,
                value=r.value,
                ci_low=r.low,
                ci_high=r.high,
                chance=r.chance,
                detail_json=orjson.dumps({"note": r.note}).decode(),
            )
            for r in rows
        ]
    )
    store.writer.flush_blocking()


# -- rendering -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return _DASH if value is None else f"{value * 100:.1f}"


def _cells(r: AuditRow) -> list[str]:
    interval = _DASH if r.low is None else f"[{_pct(r.low)}, {_pct(r.high)}]"
    above = _DASH
    if r.value is not None and r.chance is not None:
        above = f"{(r.value - r.chance) * 100:+.1f}"
    return [r.task, r.pattern, r.measure, str(r.n), _pct(r.value), interval, _pct(r.chance), above]


_HEADERS = ("Task", "Pattern", "Measure", "n", "Value %", "95% CI", "Chance %", "vs chance")
NOTE = (
    "Value: cross-validated accuracy of a classifier that never sees the knowledge (general "
    "track: balanced accuracy), or a share; chance: what a benchmark without artifacts gives. "
    "Intervals treat the two texts of an item (and the items of one dialogue) as one cluster."
)


_CSV = ("source", "task", "pattern", "measure", "n", "value", "ci_low", "ci_high", "chance", "note")


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def csv_table(rows: Sequence[AuditRow]) -> TableData:
    """Every row with its source and note, figures as fractions (``audit --format csv``)."""
    lines = []
    for r in rows:
        lines.append(
            [
                r.source,
                r.task,
                r.pattern,
                r.measure,
                r.n,
                _num(r.value),
                _num(r.low),
                _num(r.high),
                _num(r.chance),
                r.note,
            ]
        )
    return TableData(None, _CSV, lines, name="audit")


def audit_tables(rows: Sequence[AuditRow]) -> list[TableData]:
    """One table per source, for halugen/tables.py (table, json, latex)."""
    return [
        TableData(
            f"Audit: {source}",
            _HEADERS,
            [_cells(r) for r in rows if r.source == source],
            name=f"audit {source}",
            caption=NOTE,
            align=("l", "l", "l", "r", "r", "r", "r", "r"),
        )
        for source in dict.fromkeys(r.source for r in rows)
    ]
