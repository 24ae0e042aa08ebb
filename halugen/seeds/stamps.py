"""What a run read: each seed file's size and sha256, recorded with the run, checked on resume.

The run's identity names its seed files by path; the content behind a path may change (a
newer download, an edit). Resuming would then mix seeds of two versions of the data in one
run, so the first session records every file's size and hash (``seed_files`` table), and a
resume whose files differ is refused with one line naming the file: the user puts the file
back or starts a new run with ``--fresh``. The hash is not part of the identity on purpose:
a changed file would then silently start a new run instead of being noticed.

Hashing streams the file (``hashlib.file_digest``); a process hashes a file once while its
size, times and inode stay the same (batch mode opens the run once per stage).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..store import run_queries
from ..store.db import now

__all__ = ["FileStamp", "check_stamps", "record_stamps", "settle_stamps", "stamp_files"]


@dataclass(frozen=True, slots=True)
class FileStamp:
    path: str  # as the seed paths name it (a glob or folder expanded)
    size: int
    sha256: str


_HASHED: dict[tuple[str, int, int, int, int], str] = {}


def stamp_files(paths: Sequence[str]) -> list[FileStamp]:
    """The stamp of each file (hashed once per process while the file stays unchanged)."""
    return [_stamp(path) for path in dict.fromkeys(paths)]


def _stamp(path: str) -> FileStamp:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
            digest = _HASHED.get(key)
            if digest is None:
                digest = _HASHED[key] = hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as err:
        raise InputError(f"cannot read seed file {path}: {err.strerror or err}") from None
    return FileStamp(path, st.st_size, digest)


def record_stamps(store: Any, run_id: str, stamps: Sequence[FileStamp]) -> None:
    """Record the files a run reads (its first session, or a run made before stamps)."""
    if not stamps:
        return
    run_queries.record_seed_files(
        store,
        run_id,
        [run_queries.SeedFileRow(s.path, s.size, s.sha256) for s in stamps],
        [now() for _ in stamps],
    )


def settle_stamps(stamps: Sequence[FileStamp]) -> Callable[[Any, str, bool], None]:
    """What a session does with ``stamps`` once it has its run (``store.run_open.OnOpen``): record
    them with a new run, check them against the recorded ones on resume."""

    def settle(store: Any, run_id: str, resumed: bool) -> None:
        if resumed:
            check_stamps(store, run_id, stamps)  # the same paths must hold the same seeds
        else:
            record_stamps(store, run_id, stamps)

    return settle


def check_stamps(store: Any, run_id: str, stamps: Sequence[FileStamp]) -> None:
    """``InputError`` when the files of a resumed run differ from those it recorded.

    A run recorded before stamps existed records them now and is not checked.
    """
    rows = run_queries.seed_files(store, run_id)
    if not rows:
        record_stamps(store, run_id, stamps)
        return
    recorded = {path: FileStamp(path, size, sha) for path, size, sha in rows}
    problems = [p for p in (_difference(recorded.get(s.path), s) for s in stamps) if p]
    current = {s.path for s in stamps}
    problems += [
        f"seed file {path}, which run {{run}} read, is no longer among the seed paths"
        for path in recorded
        if path not in current
    ]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(
            problems[0].format(run=run_id)
            + more
            + ": resuming would mix two versions of the seeds; put the recorded file(s) "
            "back, or start a new run with --fresh"
        )


def _difference(old: FileStamp | None, new: FileStamp) -> str | None:
    if old is None:
        return f"seed file {new.path} is not among the files run {{run}} read when it started"
    if old.size != new.size:
        return (
            f"seed file {new.path} changed since run {{run}} read it "
            f"({old.size:,} bytes then, {new.size:,} now)"
        )
    if old.sha256 != new.sha256:
        return (
            f"seed file {new.path} changed since run {{run}} read it (same size, other "
            f"content: sha256 {old.sha256[:12]}… then, {new.sha256[:12]}… now)"
        )
    return None
