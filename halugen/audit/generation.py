"""What only a generated run can tell: the filter's position bias and the share per pattern.

The filter judge sees two candidates in a random order (seeded per record), so a judge
without bias picks the first shown half of the time, and the one-pass and conversational
candidates half of the time each when both are usable. The patterns the models named tell
how the benchmark's hallucinations are spread over the task's patterns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from ..intervals import wilson
from ..store.db import Store
from .items import Item

__all__ = ["Share", "pattern_shares", "position_bias"]


@dataclass(frozen=True)
class Share:
    measure: str
    task: str
    pattern: str
    n: int
    value: float | None
    low: float | None
    high: float | None
    chance: float | None
    note: str = ""


def position_bias(
    store: Store, *, task: str | None = None, runs: Sequence[str] | None = None
) -> list[Share]:
    """Per task: the share of judged seeds where the filter picked the first candidate
    shown, and where it picked the one-pass candidate (index 0), each beside 50%."""
    where, params = ["method IN ('judge', 'judge_again')"], []
    if task:
        where.append("f.task = ?")
        params.append(task)
    if runs:
        where.append(f"f.run_id IN ({', '.join('?' for _ in runs)})")
        params.extend(runs)
    sql = (
        "SELECT f.task, f.shown_order, f.chosen, s.pattern FROM filter_decisions f "
        "JOIN samples s USING (run_id, task, seed_key) "
        f"WHERE {' AND '.join(where)} ORDER BY f.task"
    )
    per: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for row_task, order_json, chosen, pattern in store.iter_rows(sql, params):
        order = orjson.loads(order_json or "[]")
        if len(order) != 2 or chosen not in order:
            continue
        first, onepass = order.index(chosen) == 0, chosen == 0
        for key in ((row_task, "all"), (row_task, pattern or "unstated")):
            per.setdefault(key, []).append((first, onepass))
    out = []
    for (row_task, pattern), picks in sorted(per.items()):
        for measure, idx, note in (
            ("picks_first_shown", 0, "share of two-candidate decisions won by the first shown"),
            ("picks_onepass", 1, "share won by the one-pass instruction's candidate"),
        ):
            hits = sum(p[idx] for p in picks)
            low, high = wilson(hits, len(picks))
            out.append(
                Share(
                    measure, row_task, pattern, len(picks), hits / len(picks), low, high, 0.5, note
                )
            )
    return out


def pattern_shares(items: Sequence[Item], patterns: dict[str, tuple[str, ...]]) -> list[Share]:
    """Per task: each pattern's share of the samples, beside an even spread over the task's
    patterns ("unstated" when the model named none)."""
    by_task: dict[str, list[str]] = {}
    for item in items:
        by_task.setdefault(item.task, []).append(item.pattern or "unstated")
    out = []
    for task, named in sorted(by_task.items()):
        known = patterns.get(task, ())
        chance = 1 / len(known) if known else None
        for pattern in [*known, *sorted(set(named) - set(known))]:
            hits = sum(p == pattern for p in named)
            low, high = wilson(hits, len(named))
            value = hits / len(named)
            out.append(
                Share(
                    "pattern_share",
                    task,
                    pattern,
                    len(named),
                    value,
                    low,
                    high,
                    chance if pattern in known else None,
                    "share of the samples",
                )
            )
    return out
