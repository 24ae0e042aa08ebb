"""A store remembers the task folders its runs used, so it can be read without them.

A run of a user's task folder keeps the folder's files (``task.toml`` and its templates)
in the store's ``task_folders`` table. ``recall`` reads them back into a ``TaskCatalog``
for the names it does not hold yet, so ``halugen export`` or ``audit`` of a store finds
every task in it without ``--task PATH``, even after the folder moved.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from ..errors import UsageError
from ..store import run_queries
from ..store.db import open_store
from ..store.rows import TaskFolderRow
from . import BUILTIN_TASKS, is_task_path
from .base import TaskSpec
from .catalog import TaskCatalog, read_task
from .declaration import spec_from_files

__all__ = ["read_task_or_stored", "recall", "remember", "stored_catalog"]


def remember(store: Any, spec: TaskSpec) -> None:
    """Keep a user's task folder in ``store`` (a ``Store`` holding a run); once per version."""
    if spec.builtin or not spec.sources:
        return
    files_json = orjson.dumps(dict(spec.sources), option=orjson.OPT_SORT_KEYS).decode()
    digest = hashlib.sha256(files_json.encode("utf-8")).hexdigest()
    if not run_queries.has_task_folder(store, spec.name, digest):
        folder = str(spec.folder.resolve()) if spec.folder else None
        store.writer.put([TaskFolderRow(spec.name, folder, digest, files_json)])


def recall(store: Any, catalog: TaskCatalog | None = None) -> TaskCatalog:
    """``catalog`` (default: the built-in tasks) with the task folders ``store`` keeps whose
    names it does not hold (the newest version of each). A copy that no longer reads is left
    out."""
    catalog = TaskCatalog() if catalog is None else catalog
    rows = run_queries.latest_task_folders(store)
    found = []
    for task, folder, files_json in rows:
        if task in catalog:
            continue
        spec, _ = spec_from_files(
            orjson.loads(files_json),
            folder=Path(folder) if folder else None,
            reserved=BUILTIN_TASKS,
        )
        if spec is not None:
            found.append(spec)
    return catalog.with_tasks(found)


def stored_catalog(db: Path, catalog: TaskCatalog | None = None) -> TaskCatalog:
    """``recall`` of the store at ``db``; ``catalog`` as it is when there is no store there."""
    catalog = TaskCatalog() if catalog is None else catalog
    if not db.is_file():
        return catalog
    with open_store(db, read_only=True) as store:
        return recall(store, catalog)


def read_task_or_stored(text: str, db: Path, catalog: TaskCatalog | None = None) -> TaskSpec:
    """``catalog.read_task``; a name it does not know is looked for among the task folders
    the store at ``db`` keeps (``halugen eval --task rag`` after ``halugen run --task ./rag``)."""
    catalog = TaskCatalog() if catalog is None else catalog
    try:
        return read_task(text, catalog)
    except UsageError:
        if is_task_path(text) or not db.is_file():
            raise
    return stored_catalog(db, catalog)[text]
