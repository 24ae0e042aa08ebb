"""SQL a user types, run as given: ``halugen sql QUERY``.

The one place outside the named queries where a statement's text comes from outside
halugen. (``--where`` predicates reach the store inside the export's and audit's named
queries; a ``--map`` table's SQL inside ``seed_table_sql``.)
"""

from __future__ import annotations

from typing import Any

from .db import Store

__all__ = ["run_user_sql"]


def run_user_sql(store: Store, sql: str) -> tuple[list[str], list[tuple[Any, ...]]] | None:
    """(column names, rows) of the user's statement; None for one without a result.
    Raises ``duckdb.Error`` as it comes: the caller words it for the user."""
    cur = store.conn.execute(sql)
    if cur.description is None:
        return None
    return [d[0] for d in cur.description], cur.fetchall()
