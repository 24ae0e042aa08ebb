"""Named read queries behind ``halugen view``: the seeds of generation runs (sampled or
turned down), what may filter them, and one seed's whole story (record, sample, candidates,
the filter's decision, its calls).

Every query only reads, so it runs on a store opened read-only, on the file or through the
process that holds it (``live.py``). A seed's cost is the money of its calls as the ``calls``
view counts it (the ledger's), so the page agrees with ``status``.

The verify flag is read from the verify stage's ``label_checks`` view (``VERIFY_RELATION``:
the latest check of each sample, ``outcome`` passed | flagged | call_failed, and its
``reason``); a check whose calls failed says nothing. A store from before the verify stage
has no such view: ``verify_available`` says so and the queries leave the flag out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .db import Store

__all__ = [
    "VERIFY_RELATION",
    "SeedFilter",
    "verify_available",
    "view_facets",
    "view_seed",
    "view_seeds",
]

# The hook of the verify stage: the relation (table or view) it writes its verdicts to.
VERIFY_RELATION = "label_checks"
_VERIFY_COLUMNS = frozenset({"run_id", "task", "seed_key", "outcome", "reason"})

# One row per seed of a generation run: its latest outcome and, when sampled, its sample.
# A resumed run may list a seed again; the first listing stands for it.
_SEEDS = """
WITH seed AS (
    SELECT * FROM seeds
    QUALIFY row_number() OVER (PARTITION BY run_id, task, seed_key ORDER BY created_at) = 1
),
outcome AS (
    SELECT * FROM seed_outcomes
    QUALIFY row_number() OVER (PARTITION BY run_id, task, seed_key ORDER BY created_at DESC) = 1
),
sample AS (
    SELECT * FROM sample_rows
    QUALIFY row_number() OVER (PARTITION BY run_id, task, seed_key ORDER BY created_at DESC) = 1
),
candidate AS (
    SELECT * FROM candidates
    QUALIFY row_number() OVER (
        PARTITION BY run_id, task, seed_key, idx ORDER BY created_at DESC) = 1
),
turned_down AS (
    SELECT run_id, task, seed_key, list_sort(list_distinct(list(status))) AS guards
    FROM candidate WHERE status <> 'ok' GROUP BY ALL
),
money AS (
    -- the calls view's figures, from its two sources without its request bodies: a call is
    -- a call_log row or a ledger reservation, its money the ledger's
    SELECT run_id, task, seed_key, count(DISTINCT call_id) AS calls,
           COALESCE(sum(pusd), 0) / 1e12 AS cost_usd
    FROM (
        SELECT run_id, task, seed_key, call_id, cost_pusd AS pusd FROM call_money
        UNION ALL
        SELECT run_id, task, seed_key, call_id, 0 FROM call_log
    )
    WHERE seed_key IS NOT NULL AND seed_key <> ''
    GROUP BY ALL
){verify_cte}
SELECT s.run_id, s.task, s.seed_key, s.seed_id,
       COALESCE(o.outcome, 'pending') AS outcome, o.stage, o.reason,
       p.pattern, p.selected_by,
       COALESCE(t.guards, []) AS guards,
       COALESCE(m.calls, 0) AS calls, COALESCE(m.cost_usd, 0) AS cost_usd,
       {verify_columns},
       left(COALESCE(json_extract_string(s.fields_json, '$.question'),
                     json_extract_string(s.fields_json, '$.dialogue_history'),
                     json_extract_string(s.fields_json, '$.document'),
                     s.fields_json), 240) AS preview,
       s.source_file, s.source_line, s.created_at
FROM seed s
LEFT JOIN outcome o USING (run_id, task, seed_key)
LEFT JOIN sample p USING (run_id, task, seed_key)
LEFT JOIN turned_down t USING (run_id, task, seed_key)
LEFT JOIN money m USING (run_id, task, seed_key){verify_join}
"""
_VERIFY_CTE = f""",
verify AS (
    SELECT run_id, task, seed_key, bool_or(outcome = 'flagged') AS flagged,
           string_agg(DISTINCT reason, '; ') FILTER (WHERE outcome = 'flagged') AS reason
    FROM {VERIFY_RELATION} WHERE outcome IN ('passed', 'flagged') GROUP BY ALL
)"""
_VERIFY_JOIN = "\nLEFT JOIN verify v USING (run_id, task, seed_key)"
_VERIFY_ON = (
    "CASE WHEN v.flagged IS NULL THEN NULL WHEN v.flagged THEN 'flagged' ELSE 'passed' END "
    "AS verify, v.reason AS verify_reason"
)
_VERIFY_OFF = "NULL::VARCHAR AS verify, NULL::VARCHAR AS verify_reason"

_OUTCOMES = ("sampled", "rejected", "failed", "pending")
_VERIFY_STATES = ("flagged", "passed", "unchecked")


@dataclass(frozen=True, slots=True, kw_only=True)
class SeedFilter:
    """What the list shows: every field None (or empty) lets everything through.

    ``guard``: a reason a guard or the filter gave (a candidate's status, or the seed's own
    reason, e.g. ``contains_right_answer``, ``no_valid_candidate``); ``verify``: flagged,
    passed or unchecked; ``text``: words anywhere in the seed's record (case ignored).
    """

    run_id: str | None = None
    task: str | None = None
    pattern: str | None = None
    outcome: str | None = None
    guard: str | None = None
    verify: str | None = None
    cost_min: float | None = None
    cost_max: float | None = None
    text: str | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The WHERE clause over ``_SEEDS``'s columns, and its parameters."""
        parts: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("run_id", self.run_id),
            ("task", self.task),
            ("pattern", self.pattern),
            ("outcome", self.outcome),
        ):
            if value:
                parts.append(f"{column} = ?")
                params.append(value)
        if self.guard:
            parts.append("(reason = ? OR list_contains(guards, ?))")
            params += [self.guard, self.guard]
        if self.verify:
            parts.append("COALESCE(verify, 'unchecked') = ?")
            params.append(self.verify)
        if self.cost_min is not None:
            parts.append("cost_usd >= ?")
            params.append(self.cost_min)
        if self.cost_max is not None:
            parts.append("cost_usd <= ?")
            params.append(self.cost_max)
        if self.text:
            parts.append(
                "(run_id, task, seed_key) IN (SELECT (run_id, task, seed_key) FROM seeds "
                "WHERE fields_json ILIKE ? ESCAPE '\\' UNION SELECT (run_id, task, seed_key) "
                "FROM candidates WHERE text ILIKE ? ESCAPE '\\')"
            )
            words = "%" + _escape_like(self.text) + "%"
            params += [words, words]
        return (" WHERE " + " AND ".join(parts)) if parts else "", params


def _escape_like(text: str) -> str:
    # the words are searched for as typed: LIKE's wildcards in them match themselves
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _dicts(store: Store, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    cur = store.conn.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def verify_available(store: Store) -> bool:
    """Does the store hold any verdict of the verify stage (``VERIFY_RELATION``)?"""
    rows = store.query(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ?",
        [VERIFY_RELATION],
    )
    if not {r[0] for r in rows} >= _VERIFY_COLUMNS:
        return False
    # a store whose runs were never verified has the view but no check in it
    ((checked,),) = store.query(
        f"SELECT EXISTS (SELECT 1 FROM {VERIFY_RELATION} WHERE outcome IN ('passed', 'flagged'))"
    )
    return bool(checked)


def _seeds_sql(verify: bool) -> str:
    return _SEEDS.format(
        verify_cte=_VERIFY_CTE if verify else "",
        verify_columns=_VERIFY_ON if verify else _VERIFY_OFF,
        verify_join=_VERIFY_JOIN if verify else "",
    )


def view_seeds(
    store: Store, where: SeedFilter, *, limit: int = 200, offset: int = 0
) -> tuple[int, list[dict[str, Any]]]:
    """(how many seeds match, the page of them from ``offset``): newest run first, then
    by task and in the order of the seed files. The verify filter matches nothing on a store
    without verdicts, except ``unchecked``."""
    verify = verify_available(store)
    clause, params = where.where()
    base = f"SELECT * FROM ({_seeds_sql(verify)}){clause}"
    # one pass: the page and, on each of its rows, how many matched
    rows = _dicts(
        store,
        f"""
        SELECT run_id, task, seed_key, seed_id, outcome, stage, reason, pattern, selected_by,
               guards, calls, cost_usd, verify, verify_reason, preview,
               count(*) OVER () AS matched
        FROM ({base}) q
        ORDER BY (SELECT created_at FROM runs r WHERE r.run_id = q.run_id) DESC,
                 task, source_file, source_line, seed_key
        LIMIT ? OFFSET ?
        """,
        [*params, limit, offset],
    )
    if rows:
        total = rows[0]["matched"]
    else:  # an empty page: past the end, or nothing matched
        (total,) = store.query(f"SELECT count(*) FROM ({base})", params)[0]
    for row in rows:
        del row["matched"]
    return int(total), rows


def view_facets(store: Store) -> dict[str, Any]:
    """What the filters offer: the generation runs, tasks, patterns, reasons (with counts),
    outcomes, whether verify flags exist, and the range of a seed's cost."""
    verify = verify_available(store)
    runs = _dicts(
        store,
        """
        SELECT r.run_id, r.model, r.status, r.tasks, strftime(r.created_at, '%Y-%m-%d %H:%M')
               AS created, s.spent_usd
        FROM runs r LEFT JOIN run_spend s USING (run_id)
        WHERE r.kind = 'generate'
        ORDER BY r.created_at DESC
        """,
    )
    counts = store.query(
        f"""
        WITH s AS MATERIALIZED ({_seeds_sql(verify)})
        SELECT 'task' AS facet, task AS name, count(*)::DOUBLE AS n FROM s GROUP BY task
        UNION ALL
        SELECT 'pattern', pattern, count(*) FROM s WHERE pattern IS NOT NULL GROUP BY pattern
        UNION ALL
        SELECT 'outcome', outcome, count(*) FROM s GROUP BY outcome
        UNION ALL
        SELECT 'guard', reason, count(*) FROM (
            SELECT run_id, task, seed_key, reason FROM s WHERE reason IS NOT NULL
            UNION
            SELECT run_id, task, seed_key, unnest(guards) FROM s
        ) GROUP BY reason
        UNION ALL
        SELECT 'cost_min', NULL, min(cost_usd) FROM s
        UNION ALL
        SELECT 'cost_max', NULL, max(cost_usd) FROM s
        """
    )
    by: dict[str, list[tuple[Any, float]]] = {}
    for facet, name, n in counts:
        by.setdefault(facet, []).append((name, n))

    def named(facet: str, order: Sequence[str] | None = None) -> list[dict[str, Any]]:
        items = [(name, int(n)) for name, n in by.get(facet, [])]
        if order is not None:
            rank = {o: i for i, o in enumerate(order)}
            items.sort(key=lambda item: rank.get(item[0], len(rank)))
        elif facet == "guard":
            items.sort(key=lambda item: (-item[1], item[0]))
        else:
            items.sort()
        return [{"name": name, "n": n} for name, n in items]

    low = by["cost_min"][0][1] if by.get("cost_min") else None
    high = by["cost_max"][0][1] if by.get("cost_max") else None
    return {
        "runs": runs,
        "tasks": named("task"),
        "patterns": named("pattern"),
        "outcomes": named("outcome", _OUTCOMES),
        "guards": named("guard"),
        "verify": list(_VERIFY_STATES) if verify else None,
        "cost": {"min": low or 0.0, "max": high or 0.0},
    }


def view_seed(store: Store, run_id: str, task: str, seed_key: str) -> dict[str, Any] | None:
    """One seed's story, or None when the store has no such seed: ``seed`` (its record,
    where it came from, its outcome), ``sample`` (the row of ``samples`` or None),
    ``candidates`` (the latest of each, with status and detail), ``decision`` (the filter's
    latest, or None), ``calls`` (every call made for it, oldest first), ``verify``."""
    key = [run_id, task, seed_key]
    records = _dicts(
        store,
        """
        SELECT seed_id, dataset, source_file, source_line, fields_json, truncated_tokens
        FROM seeds WHERE run_id = ? AND task = ? AND seed_key = ?
        ORDER BY created_at LIMIT 1
        """,
        key,
    )
    if not records:
        return None
    outcome = _dicts(
        store,
        """
        SELECT outcome, stage, reason, detail FROM seed_outcomes
        WHERE run_id = ? AND task = ? AND seed_key = ? ORDER BY created_at DESC LIMIT 1
        """,
        key,
    )
    sample = _dicts(
        store,
        """
        SELECT * EXCLUDE (run_id, task, seed_key, created_at) FROM samples
        WHERE run_id = ? AND task = ? AND seed_key = ? ORDER BY created_at DESC LIMIT 1
        """,
        key,
    )
    candidates = _dicts(
        store,
        """
        SELECT idx, template, text, pattern, status, detail FROM candidates
        WHERE run_id = ? AND task = ? AND seed_key = ?
        QUALIFY row_number() OVER (PARTITION BY idx ORDER BY created_at DESC) = 1
        ORDER BY idx
        """,
        key,
    )
    decision = _dicts(
        store,
        """
        SELECT shown_order, chosen, method, raw, detail FROM filter_decisions
        WHERE run_id = ? AND task = ? AND seed_key = ? ORDER BY created_at DESC LIMIT 1
        """,
        key,
    )
    calls = _dicts(
        store,
        """
        SELECT stage, status, model, prompt_tokens, completion_tokens, cached_tokens,
               cost_usd, latency_ms, attempts, error, strftime(created_at, '%H:%M:%S') AS at
        FROM calls WHERE run_id = ? AND task = ? AND seed_key = ?
        ORDER BY created_at, call_id
        """,
        key,
    )
    verify = None
    if verify_available(store):
        (flagged, reason), *_ = store.query(
            f"SELECT bool_or(outcome = 'flagged'), string_agg(DISTINCT reason, '; ') "
            f"FILTER (WHERE outcome = 'flagged') FROM {VERIFY_RELATION} "
            f"WHERE run_id = ? AND task = ? AND seed_key = ? AND outcome IN ('passed', 'flagged')",
            key,
        )
        state = None if flagged is None else "flagged" if flagged else "passed"
        verify = {"state": state, "reason": reason}
    return {
        "seed": {
            **records[0],
            "run_id": run_id,
            "task": task,
            "seed_key": seed_key,
            **(outcome[0] if outcome else {"outcome": "pending"}),
        },
        "sample": sample[0] if sample else None,
        "candidates": candidates,
        "decision": decision[0] if decision else None,
        "calls": calls,
        "verify": verify,
    }
