"""Named reads and small writes about a run's setting: the context window it was fitted to,
the seed files it reads, the task folders it keeps, what the endpoint was found to support,
and what earlier runs' acceptance was.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from .db import Store

__all__ = [
    "SeedFileRow",
    "StoredTaskFolder",
    "acceptance_of_earlier_runs",
    "context_length_rejections",
    "endpoint_window",
    "has_task_folder",
    "latest_task_folders",
    "probed_capability",
    "record_seed_files",
    "run_capability",
    "run_window",
    "seed_files",
]


# -- context window ----------------------------------------------------------------------
def endpoint_window(store: Store, base_url: str, model: str) -> int | None:
    """The context window the server last told for ``model`` at ``base_url``, or None."""
    row = store.conn.execute(
        "SELECT context_window FROM endpoint_facts WHERE base_url = ? AND model = ? "
        "ORDER BY created_at DESC LIMIT 1",
        [base_url, model],
    ).fetchone()
    return int(row[0]) if row else None


def run_window(store: Store, run_id: str) -> int | None:
    """The context window recorded on a run (None: none, or no such run)."""
    row = store.conn.execute(
        "SELECT context_window FROM runs WHERE run_id = ?", [run_id]
    ).fetchone()
    return row[0] if row else None


def context_length_rejections(store: Store, run_id: str) -> list[tuple[str, str]]:
    """(task, seed key) of the run's seeds whose latest outcome is a rejection for
    context_length."""
    return [
        (r[0], r[1])
        for r in store.conn.execute(
            """
            SELECT task, seed_key FROM seed_outcomes WHERE run_id = ?
            QUALIFY row_number() OVER (PARTITION BY task, seed_key ORDER BY created_at DESC) = 1
                AND outcome = 'rejected' AND reason = 'context_length'
            """,
            [run_id],
        ).fetchall()
    ]


# -- seed files --------------------------------------------------------------------------
class SeedFileRow(NamedTuple):
    path: str
    size: int
    sha256: str


def record_seed_files(
    store: Store, run_id: str, files: Sequence[SeedFileRow], recorded_at: Sequence[datetime]
) -> None:
    """Record the files a run reads, each with when it was stamped."""
    store.conn.executemany(
        "INSERT INTO seed_files (run_id, path, size, sha256, recorded_at) VALUES (?, ?, ?, ?, ?)",
        [[run_id, f.path, f.size, f.sha256, at] for f, at in zip(files, recorded_at, strict=True)],
    )


def seed_files(store: Store, run_id: str) -> list[SeedFileRow]:
    """The files a run recorded, in the order it recorded them."""
    return [
        SeedFileRow(*r)
        for r in store.query(
            "SELECT path, size, sha256 FROM seed_files WHERE run_id = ? ORDER BY rowid", [run_id]
        )
    ]


# -- task folders ------------------------------------------------------------------------
def has_task_folder(store: Store, task: str, digest: str) -> bool:
    return bool(
        store.query(
            "SELECT 1 FROM task_folders WHERE task = ? AND digest = ? LIMIT 1", [task, digest]
        )
    )


class StoredTaskFolder(NamedTuple):
    task: str
    folder: str | None
    files_json: str


def latest_task_folders(store: Store) -> list[StoredTaskFolder]:
    """The newest stored version of each task folder."""
    return [
        StoredTaskFolder(*r)
        for r in store.query(
            "SELECT task, folder, files_json FROM task_folders "
            "QUALIFY row_number() OVER (PARTITION BY task ORDER BY created_at DESC) = 1"
        )
    ]


# -- endpoint capabilities ---------------------------------------------------------------
def _latest_capability(store: Store, where: str, params: list[Any]) -> tuple[bool, str] | None:
    rows = store.query(
        f"SELECT supported, detail FROM endpoint_capabilities WHERE {where} "
        "ORDER BY created_at DESC LIMIT 1",
        params,
    )
    return (bool(rows[0][0]), str(rows[0][1] or "")) if rows else None


def probed_capability(
    store: Store, endpoint: str, model: str, capability: str
) -> tuple[bool, str] | None:
    """(supported, detail) of the latest probe of ``capability`` at an endpoint and model."""
    return _latest_capability(
        store,
        "endpoint = ? AND model = ? AND capability = ? AND source = 'probe'",
        [endpoint, model, capability],
    )


def run_capability(store: Store, run_id: str, capability: str) -> tuple[bool, str] | None:
    """(supported, detail) of the latest decision on ``capability`` a run recorded."""
    return _latest_capability(store, "run_id = ? AND capability = ?", [run_id, capability])


# -- earlier runs ------------------------------------------------------------------------
def acceptance_of_earlier_runs(store: Store, task: str, model: str) -> tuple[int, int]:
    """(seeds sampled, seeds finished) of ``task`` over the generation runs of ``model``."""
    row: Any = store.conn.execute(
        "SELECT count(*) FILTER (WHERE p.outcome = 'sampled'), count(*) "
        "FROM seed_progress p JOIN runs r USING (run_id) "
        "WHERE r.kind = 'generate' AND p.task = ? AND r.model = ? "
        "AND p.outcome IN ('sampled', 'rejected')",
        [task, model],
    ).fetchone()
    return (row[0], row[1]) if row else (0, 0)
