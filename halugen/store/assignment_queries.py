"""Named reads behind the annotation server's hand-out (``annotate/assign.py``) and its
restored logins and leases (``annotate/sessions.py``).

An item goes to at most ``cap`` distinct annotators: the server's per-item number plus the
extra places an organiser opened on it; a saved label holds a place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from .db import Store

__all__ = [
    "ItemLoad",
    "ItemProgress",
    "MyPosition",
    "StoredSession",
    "extra_places",
    "has_labelled",
    "item_exists",
    "item_progress",
    "last_labelled",
    "my_position",
    "open_items",
    "open_items_among",
    "open_leases",
    "open_sessions",
    "others_labelled",
]

# One row per distinct item id, with how many distinct annotators labelled it, whether
# the asking annotator is one of them, and how many annotators it may have.
_ITEM_COUNTS = """
SELECT i.item_id, COALESCE(c.n, 0) AS n, COALESCE(c.mine, false) AS mine,
       $cap + COALESCE(x.extra, 0) AS cap
FROM (SELECT DISTINCT item_id FROM annotation_items) i
LEFT JOIN (
    SELECT item_id, count(DISTINCT annotator) AS n, bool_or(annotator = $me) AS mine
    FROM annotations GROUP BY item_id
) c USING (item_id)
LEFT JOIN (
    SELECT item_id, count(*) AS extra FROM annotation_extra_places GROUP BY item_id
) x USING (item_id)
"""


class ItemLoad(NamedTuple):
    item_id: str
    n: int  # distinct annotators who labelled it
    cap: int  # how many it may have


def item_exists(store: Store, item_id: str) -> bool:
    return bool(store.query("SELECT 1 FROM annotation_items WHERE item_id = ? LIMIT 1", [item_id]))


def has_labelled(store: Store, item_id: str, annotator: str) -> bool:
    rows = store.query(
        "SELECT 1 FROM annotations WHERE item_id = ? AND annotator = ? LIMIT 1",
        [item_id, annotator],
    )
    return bool(rows)


def others_labelled(store: Store, item_id: str, annotator: str) -> int:
    """Distinct annotators other than ``annotator`` who labelled ``item_id``."""
    ((n,),) = store.query(
        "SELECT count(DISTINCT annotator) FROM annotations WHERE item_id = ? AND annotator <> ?",
        [item_id, annotator],
    )
    return int(n)


def extra_places(store: Store, item_id: str) -> int:
    """Extra places an organiser opened on ``item_id``."""
    ((extra,),) = store.query(
        "SELECT count(*) FROM annotation_extra_places WHERE item_id = ?", [item_id]
    )
    return int(extra)


def last_labelled(store: Store, annotator: str) -> str | None:
    """The highest item id ``annotator`` labelled, or None."""
    ((last,),) = store.query(
        "SELECT max(item_id) FROM annotations WHERE annotator = ?", [annotator]
    )
    return last


@contextlib.contextmanager
def open_items(store: Store, annotator: str, per_item: int) -> Iterator[Iterator[ItemLoad]]:
    """The items ``annotator`` has not labelled and whose labels leave a place free, in
    ``item_id`` order, read in batches on a cursor of their own (closed on leaving)."""
    cur = store.conn.cursor()
    try:
        cur.execute(
            f"SELECT item_id, n, cap FROM ({_ITEM_COUNTS}) WHERE NOT mine AND n < cap "
            "ORDER BY item_id",
            {"me": annotator, "cap": per_item},
        )

        def rows() -> Iterator[ItemLoad]:
            while batch := cur.fetchmany(256):
                for item_id, n, cap in batch:
                    yield ItemLoad(item_id, n, cap)

        yield rows()
    finally:
        cur.close()


def open_items_among(store: Store, annotator: str, per_item: int, ids: list[str]) -> list[ItemLoad]:
    """As ``open_items``, of ``ids`` only, all at once."""
    return [
        ItemLoad(*r)
        for r in store.conn.execute(
            f"SELECT item_id, n, cap FROM ({_ITEM_COUNTS}) "
            "WHERE NOT mine AND n < cap AND list_contains($ids, item_id)",
            {"me": annotator, "cap": per_item, "ids": ids},
        ).fetchall()
    ]


class MyPosition(NamedTuple):
    before: int  # the annotator's labelled items before ``item_id``
    prev: str | None  # the one just before (item_id order)
    next: str | None  # the one just after


def my_position(store: Store, item_id: str, annotator: str) -> MyPosition:
    ((before, prev, nxt),) = store.conn.execute(
        """
        SELECT count(*) FILTER (WHERE item_id < $id),
               max(item_id) FILTER (WHERE item_id < $id),
               min(item_id) FILTER (WHERE item_id > $id)
        FROM (SELECT DISTINCT item_id FROM annotations WHERE annotator = $me)
        """,
        {"id": item_id, "me": annotator},
    ).fetchall()
    return MyPosition(int(before), prev, nxt)


class ItemProgress(NamedTuple):
    items: int
    complete: int  # items with their cap of labels or more
    labels: int
    mine: int  # items the annotator labelled
    open_to_me: int  # items the annotator could be given, by the labels alone
    target: int  # the sum of the caps


def item_progress(store: Store, annotator: str, per_item: int) -> ItemProgress:
    ((items, complete, labels, mine, open_to_me, target),) = store.conn.execute(
        f"""
        SELECT count(*), count(*) FILTER (WHERE n >= cap), COALESCE(sum(n), 0),
               count(*) FILTER (WHERE mine),
               count(*) FILTER (WHERE NOT mine AND n < cap),
               COALESCE(sum(cap), 0)
        FROM ({_ITEM_COUNTS})
        """,
        {"me": annotator, "cap": per_item},
    ).fetchall()
    return ItemProgress(
        int(items), int(complete), int(labels), int(mine), int(open_to_me), int(target)
    )


# -- logins and leases of the server ------------------------------------------------------
class StoredSession(NamedTuple):
    session_hash: str
    role: str
    annotator: str | None
    token_hash: str | None


def open_sessions(store: Store) -> list[StoredSession]:
    """Sessions whose latest event is a login, oldest first."""
    return [
        StoredSession(*r)
        for r in store.query(
            """
            SELECT session_hash, role, annotator, token_hash FROM (
                SELECT *, row_number() OVER (
                    PARTITION BY session_hash ORDER BY created_at DESC) AS k
                FROM annotation_sessions)
            WHERE k = 1 AND event = 'login'
            ORDER BY created_at
            """
        )
    ]


def open_leases(store: Store, now: float) -> list[tuple[Any, Any, Any]]:
    """(annotator, item id, expires at) of the leases running at ``now`` whose item the
    annotator has not labelled since, the soonest to expire first."""
    return [
        (r[0], r[1], r[2])
        for r in store.query(
            """
            SELECT l.annotator, l.item_id, l.expires_at FROM (
                SELECT *, row_number() OVER (
                    PARTITION BY annotator, item_id ORDER BY created_at DESC, seq DESC) AS k
                FROM annotation_leases) l
            WHERE l.k = 1 AND l.expires_at > ?
              AND NOT EXISTS (SELECT 1 FROM annotations a
                              WHERE a.item_id = l.item_id AND a.annotator = l.annotator)
            ORDER BY l.expires_at
            """,
            [now],
        )
    ]
