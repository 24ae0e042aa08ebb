"""Annotations on their way into the store: one label of one annotator, checked, deduplicated."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..store import annotation_queries as queries
from ..store.db import Store
from ..store.rows import AnnotationRow, Record
from .items import (
    RecordProblem,
    Skip,
    append_rows,
)
from .spans import Span, canonical_spans, load_spans, spans_json

__all__ = ["Annotation", "insert_annotations"]


@dataclass(frozen=True)
class Annotation:
    item_id: str
    annotator: str
    label: str  # yes | no
    spans: tuple[Span, ...]  # checked against the item's response, sorted
    note: str | None = None
    source: str = "import"  # web | import | halueval

    def __post_init__(self) -> None:
        # the web page refuses this contradiction too; keep the store free of it
        if self.label == "no" and self.spans:
            raise RecordProblem("label 'no' with hallucinated spans")


def insert_annotations(
    store: Store, annotations: Iterable[tuple[str, Annotation]], skipped: list[Skip] | None = None
) -> int:
    """Append the annotations not stored yet; ``(where, annotation)`` pairs; returns added.

    An annotation of an unknown item is skipped and reported. One equal in (item,
    annotator, label, spans) to any stored row, or to an earlier one of this call, is
    skipped silently: importing the same file twice adds nothing.
    """
    items = set(queries.item_ids(store))
    seen = {
        (item_id, annotator, label, canonical_spans(load_spans(sj)))
        for item_id, annotator, label, sj in queries.stored_labels(store)
    }
    rows: list[Record] = []
    for where, a in annotations:
        if a.item_id not in items:
            if skipped is not None:
                skipped.append(Skip(where, f"unknown item {a.item_id}"))
            continue
        key = (a.item_id, a.annotator, a.label, canonical_spans(a.spans))
        if key in seen:
            continue
        seen.add(key)
        rows.append(
            AnnotationRow(a.item_id, a.annotator, a.label, spans_json(a.spans), a.note, a.source)
        )
    append_rows(store, "annotations", rows)
    return len(rows)


def _responses(store: Store, ids: Iterable[str]) -> dict[str, str]:
    """The stored response of each item (the first row of an id wins, as on insert)."""
    wanted = set(ids)
    return {
        item_id: response
        for item_id, response in queries.first_responses(store)
        if item_id in wanted
    }


def _keep_matching(
    store: Store, pending: list[tuple[str, Annotation, str]], skipped: list[Skip]
) -> list[tuple[str, Annotation]]:
    """Annotations whose offsets were checked against the same response the store holds."""
    stored = _responses(store, (a.item_id for _, a, _ in pending))
    out = []
    for where, a, response in pending:
        if a.item_id in stored and stored[a.item_id] != response:
            skipped.append(
                Skip(
                    where,
                    f"item {a.item_id} is stored with a different "
                    f"response; its offsets would not fit",
                )
            )
            continue
        out.append((where, a))
    return out


def _latest(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Latest annotation per (item, annotator), grouped by item, oldest first."""
    by_item: dict[str, list[tuple[Any, ...]]] = {}
    for row in queries.latest_labels(store):
        by_item.setdefault(row[0], []).append(row)
    return by_item


def _items(store: Store) -> list[tuple[Any, ...]]:
    return list(queries.first_items(store))
