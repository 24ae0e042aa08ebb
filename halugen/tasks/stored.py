"""A store remembers the task folders its runs used, so it can be read without them.

A run of a user's task folder keeps the folder's files (``task.toml`` and its templates)
in the store's ``task_folders`` table. ``recall`` reads them back into the registry for
the names ``get_task`` does not know yet, so ``halugen export`` or ``audit`` of a store
finds every task in it without ``--task PATH``, even after the folder moved.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from ..errors import UsageError
from ..store import run_queries
from ..store.rows import TaskFolderRow
from . import BUILTIN_TASKS, get_task, is_task_path, known_tasks, register
from .base import TaskSpec
from .declaration import spec_from_files

__all__ = ["get_task_or_stored", "recall", "remember"]


def remember(store: Any, spec: TaskSpec) -> None:
    """Keep a user's task folder in ``store`` (a ``Store`` holding a run); once per version."""
    if spec.builtin or not spec.sources:
        return
    files_json = orjson.dumps(dict(spec.sources), option=orjson.OPT_SORT_KEYS).decode()
    digest = hashlib.sha256(files_json.encode("utf-8")).hexdigest()
    if not run_queries.has_task_folder(store, spec.name, digest):
        folder = str(spec.folder.resolve()) if spec.folder else None
        store.writer.put([TaskFolderRow(spec.name, folder, digest, files_json)])


def recall(store: Any) -> tuple[str, ...]:
    """Register the task folders ``store`` keeps whose names are not known yet (the newest
    version of each); returns their names. A copy that no longer reads is left out."""
    rows = run_queries.latest_task_folders(store)
    known = set(known_tasks())
    out = []
    for task, folder, files_json in rows:
        if task in known:
            continue
        spec, _ = spec_from_files(
            orjson.loads(files_json),
            folder=Path(folder) if folder else None,
            reserved=BUILTIN_TASKS,
        )
        if spec is not None:
            register(spec)
            out.append(task)
    return tuple(out)


def get_task_or_stored(name_or_path: str, db: Path) -> TaskSpec:
    """``get_task``; a name it does not know is looked for among the task folders the store
    at ``db`` keeps (``halugen eval --task rag`` after ``halugen run --task ./rag``)."""
    try:
        return get_task(name_or_path)
    except UsageError:
        if is_task_path(name_or_path) or not db.is_file():
            raise
    from ..store.db import open_store

    with open_store(db, read_only=True) as store:
        recall(store)
    return get_task(name_or_path)
