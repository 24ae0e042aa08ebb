"""Named reads of the annotation tables, behind ``halugen annotate``: its items, labels,
resolutions, what the organiser view and the item page show (the server's hand-out,
logins and leases: ``assignment_queries``).

An item imported twice keeps its first row (saved offsets refer to its text): "first row"
below. Rows come back as named tuples.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from .db import Store

__all__ = [
    "AnnotationVote",
    "AnnotatorCounts",
    "ExportItem",
    "HaluevalExportItem",
    "LatestLabel",
    "OwnLabel",
    "RankedQuery",
    "ResolvedLabel",
    "StoredLabel",
    "StoredResolution",
    "annotator_label_counts",
    "annotator_names",
    "disagreeing_votes",
    "export_items",
    "extra_place_counts",
    "first_item_texts",
    "first_items",
    "first_queries",
    "first_response",
    "first_responses",
    "halueval_items",
    "item_ids",
    "item_ids_of_run",
    "item_queries",
    "item_texts",
    "latest_labels",
    "latest_preselect_responses",
    "own_label",
    "ranked_queries",
    "resolved_labels",
    "stored_labels",
    "stored_resolutions",
]


# -- items -------------------------------------------------------------------------------
def item_ids(store: Store) -> list[str]:
    """Every distinct item id in the store."""
    return [r[0] for r in store.query("SELECT DISTINCT item_id FROM annotation_items")]


def item_texts(store: Store) -> list[tuple[str, str, str]]:
    """(item id, query, response) of every item row, in the store's order."""
    return [
        (r[0], r[1], r[2])
        for r in store.query("SELECT item_id, query, response FROM annotation_items")
    ]


def item_ids_of_run(store: Store, run_id: str, source: str) -> list[str]:
    return [
        r[0]
        for r in store.query(
            "SELECT DISTINCT item_id FROM annotation_items WHERE run_id = ? AND source = ?",
            [run_id, source],
        )
    ]


def halueval_items(store: Store) -> list[tuple[str, str, str]]:
    """(item id, query, response) of the HaluEval items, the first row of an id."""
    return [
        (r[0], r[1], r[2])
        for r in store.query(
            "SELECT item_id, query, response FROM annotation_items "
            "WHERE item_id LIKE 'halueval:%' "
            "QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1"
        )
    ]


def first_responses(store: Store) -> list[tuple[str, str]]:
    """(item id, response) of the first row of every item id."""
    return [
        (r[0], r[1])
        for r in store.query(
            "SELECT item_id, response FROM annotation_items "
            "QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1"
        )
    ]


def first_item_texts(store: Store, item_id: str) -> tuple[str, str] | None:
    """(query, response) of an item's first row, or None when there is no such item."""
    rows = store.query(
        "SELECT query, response FROM annotation_items WHERE item_id = ? "
        "ORDER BY created_at LIMIT 1",
        [item_id],
    )
    return (rows[0][0], rows[0][1]) if rows else None


def first_response(store: Store, item_id: str) -> str | None:
    """The response of an item's first row, or None when there is no such item."""
    rows = store.query(
        "SELECT response FROM annotation_items WHERE item_id = ? ORDER BY created_at LIMIT 1",
        [item_id],
    )
    return rows[0][0] if rows else None


class ExportItem(NamedTuple):
    item_id: str
    query: str
    response: str
    meta_json: str | None


def first_items(store: Store) -> list[ExportItem]:
    """The first row of every item, in the order they came."""
    return [
        ExportItem(*r)
        for r in store.query(
            "SELECT item_id, query, response, meta_json FROM annotation_items "
            "QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1 "
            "ORDER BY created_at, item_id"
        )
    ]


class HaluevalExportItem(NamedTuple):
    item_id: str
    query: str
    response: str
    meta_json: str | None
    halueval_label: str | None
    halueval_spans_json: str | None


def export_items(store: Store) -> list[HaluevalExportItem]:
    """The first row of every item with HaluEval's own latest label on it (if any)."""
    return [
        HaluevalExportItem(*r)
        for r in store.query(
            """
            SELECT i.item_id, i.query, i.response, i.meta_json, h.label, h.spans_json
            FROM (SELECT * FROM annotation_items
                  QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1) i
            LEFT JOIN annotations_latest h ON h.item_id = i.item_id AND h.annotator = 'halueval'
            ORDER BY i.created_at, i.item_id
            """
        )
    ]


def first_queries(store: Store, ids: list[str]) -> dict[str, str]:
    """item id -> the query of its first row, for ``ids``."""
    return dict(
        store.conn.execute(
            "SELECT item_id, query FROM annotation_items WHERE list_contains($ids, item_id) "
            "QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1",
            {"ids": ids},
        ).fetchall()
    )


# -- pre-selection, the source of items ---------------------------------------------------
class RankedQuery(NamedTuple):
    query_key: str
    query_id: str | None
    query: str
    score: float
    rank: int
    scorer: str


def ranked_queries(store: Store, run_id: str, k: int) -> list[RankedQuery]:
    """The ``k`` best-ranked scored queries of a pre-selection run, each at its best rank;
    NaN scores are left out."""
    return [
        RankedQuery(*r)
        for r in store.query(
            """
            SELECT query_key, query_id, query, score, rank, scorer FROM preselect_ranked
            WHERE run_id = ? AND NOT isnan(score)
            QUALIFY row_number() OVER (PARTITION BY query_key ORDER BY rank) = 1
            ORDER BY rank LIMIT ?
            """,
            [run_id, k],
        )
    ]


def latest_preselect_responses(store: Store, run_id: str) -> list[tuple[str, int, str]]:
    """(query key, idx, response) of a pre-selection run, the latest row of each."""
    return [
        (r[0], r[1], r[2])
        for r in store.query(
            """
            SELECT query_key, idx, response FROM preselect_responses WHERE run_id = ?
            QUALIFY row_number() OVER (PARTITION BY query_key, idx ORDER BY created_at DESC) = 1
            ORDER BY query_key, idx
            """,
            [run_id],
        )
    ]


# -- labels ------------------------------------------------------------------------------
class StoredLabel(NamedTuple):
    item_id: str
    annotator: str
    label: str
    spans_json: str


def stored_labels(store: Store) -> list[StoredLabel]:
    """Every annotation row ever stored."""
    return [
        StoredLabel(*r)
        for r in store.query("SELECT item_id, annotator, label, spans_json FROM annotations")
    ]


class LatestLabel(NamedTuple):
    item_id: str
    annotator: str
    label: str
    spans_json: str
    note: str | None


def latest_labels(store: Store) -> list[LatestLabel]:
    """The latest label per (item, annotator), by item, oldest first."""
    return [
        LatestLabel(*r)
        for r in store.query(
            "SELECT item_id, annotator, label, spans_json, note FROM annotations_latest "
            "ORDER BY item_id, created_at, annotator"
        )
    ]


class OwnLabel(NamedTuple):
    label: str
    spans_json: str
    note: str | None


def own_label(store: Store, item_id: str, annotator: str) -> OwnLabel | None:
    rows = store.query(
        "SELECT label, spans_json, note FROM annotations_latest WHERE item_id = ? "
        "AND annotator = ?",
        [item_id, annotator],
    )
    return OwnLabel(*rows[0]) if rows else None


class ResolvedLabel(NamedTuple):
    item_id: str
    label: str
    spans_json: str
    response: str
    released: bool  # HaluEval's own label, imported with its file


def resolved_labels(store: Store) -> list[ResolvedLabel]:
    """Every annotator's latest label with the item's (first) response, by item."""
    return [
        ResolvedLabel(*r)
        for r in store.query(
            """
            SELECT a.item_id, a.label, a.spans_json, i.response,
                   a.annotator = 'halueval' AND a.source = 'halueval'
            FROM annotations_latest a
            JOIN (SELECT item_id, response FROM annotation_items
                  QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1) i
              USING (item_id)
            ORDER BY a.item_id, a.annotator
            """
        )
    ]


class StoredResolution(NamedTuple):
    item_id: str
    label: str
    spans_json: str
    n_labels: int
    agreement: float | None
    method: str


def stored_resolutions(store: Store) -> list[StoredResolution]:
    return [
        StoredResolution(*r)
        for r in store.query(
            "SELECT item_id, label, spans_json, n_labels, agreement, method "
            "FROM annotation_resolved"
        )
    ]


class AnnotationVote(NamedTuple):
    item_id: str
    annotator: str
    label: str


def disagreeing_votes(store: Store) -> list[AnnotationVote]:
    """The latest votes on items whose latest labels are not all the same."""
    return [
        AnnotationVote(*r)
        for r in store.query(
            """
            SELECT item_id, annotator, label FROM annotations_latest
            WHERE item_id IN (SELECT item_id FROM annotations_latest GROUP BY item_id
                              HAVING count(DISTINCT label) > 1)
            ORDER BY item_id, annotator
            """
        )
    ]


class AnnotatorCounts(NamedTuple):
    annotator: str
    labelled: int
    yes: int
    no: int
    last: datetime | None


def annotator_label_counts(store: Store) -> list[AnnotatorCounts]:
    return [
        AnnotatorCounts(*r)
        for r in store.query(
            """
            SELECT annotator, count(*), count(*) FILTER (WHERE label = 'yes'),
                   count(*) FILTER (WHERE label = 'no'), max(created_at)
            FROM annotations_latest GROUP BY annotator
            """
        )
    ]


def annotator_names(store: Store) -> list[str]:
    """Annotators who ever logged in."""
    return [
        r[0]
        for r in store.query(
            "SELECT DISTINCT annotator FROM annotation_sessions "
            "WHERE role = 'annotator' AND annotator IS NOT NULL"
        )
    ]


def extra_place_counts(store: Store, ids: list[str]) -> list[tuple[str, int]]:
    """(item id, extra places opened on it) for the ``ids`` that have any."""
    return [
        (r[0], r[1])
        for r in store.conn.execute(
            "SELECT item_id, count(*) FROM annotation_extra_places "
            "WHERE list_contains($ids, item_id) GROUP BY item_id",
            {"ids": ids},
        ).fetchall()
    ]


def item_queries(store: Store) -> dict[str, str]:
    """item id -> the query of its first row, for every item."""
    return dict(
        store.query(
            "SELECT item_id, any_value(query ORDER BY created_at) FROM annotation_items "
            "GROUP BY item_id"
        )
    )
