"""Named reads of a running or finishing session: what a resumed run already did (bad
records, judged items, scored queries) and the counts its closing line reports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .db import Store

__all__ = [
    "admitted_seed_count",
    "bad_record_places",
    "finished_query_keys",
    "judged_item_keys",
    "judgement_count",
    "preselect_scores",
    "unfinished_seed_count",
    "unscored_query_count",
]


# -- generation ----------------------------------------------------------------------------
def bad_record_places(store: Store, run_id: str, task: str) -> list[tuple[Any, ...]]:
    """(seed file, line) of the bad records the run met in ``task``'s files."""
    return store.query(
        "SELECT source_file, source_line FROM bad_records WHERE run_id = ? AND task = ?",
        [run_id, task],
    )


def unfinished_seed_count(store: Store, run_id: str) -> int:
    """Seeds of the run still pending or failed (``seed_progress``)."""
    return int(
        store.query(
            "SELECT count(*) FROM seed_progress WHERE run_id = ? "
            "AND outcome IN ('pending', 'failed')",
            [run_id],
        )[0][0]
    )


def admitted_seed_count(store: Store, run_id: str) -> int:
    """Seed rows the run ever admitted (over all its sessions)."""
    return int(store.query("SELECT count(*) FROM seeds WHERE run_id = ?", [run_id])[0][0])


# -- recognition ---------------------------------------------------------------------------
def judged_item_keys(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """(item key,) of every judgement of an eval run."""
    return store.query("SELECT item_key FROM judgements WHERE run_id = ?", [run_id])


def judgement_count(store: Store, run_id: str) -> int:
    return int(store.query("SELECT count(*) FROM judgements WHERE run_id = ?", [run_id])[0][0])


# -- pre-selection -------------------------------------------------------------------------
def finished_query_keys(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """(query key,) of the queries a pre-selection run scored, or found without two usable
    responses."""
    return store.query(
        "SELECT query_key FROM preselect_scores WHERE run_id = ? UNION "
        "SELECT query_key FROM preselect_unscored WHERE run_id = ? AND cause = 'responses'",
        [run_id, run_id],
    )


def preselect_scores(store: Store, run_id: str) -> Iterator[tuple[Any, ...]]:
    """(query key, score) of every score of a pre-selection run."""
    return store.iter_rows(
        "SELECT query_key, score FROM preselect_scores WHERE run_id = ?", [run_id]
    )


def unscored_query_count(store: Store, run_id: str) -> int:
    """Queries of a pre-selection run left unscored and never scored since."""
    return int(
        store.query(
            "SELECT count(DISTINCT query_key) FROM preselect_unscored u WHERE run_id = ? AND NOT "
            "EXISTS (SELECT 1 FROM preselect_scores s WHERE s.run_id = u.run_id AND "
            "s.query_key = u.query_key)",
            [run_id],
        )[0][0]
    )
