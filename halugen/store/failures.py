"""What went wrong with the store file, in one line that names the file and what to do.

DuckDB says "IO Error" for a full disk, a read-only disk, a missing permission and a file
cut short alike, and a damaged block only shows when a query reads it. These functions
turn its errors into halugen's: the user's disk or file is never reported as a bug, and a
file that cannot be used as given is bad input (exit 2).
"""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

from ..errors import StoreError, UnusableStore

__all__ = ["damaged_store", "is_locked", "open_failure", "resolve_writes", "write_error"]

_DAMAGE = ("Corrupt database file", "Could not read enough bytes", "checksum")


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _errno(error: BaseException, text: str) -> int | None:
    if isinstance(error, OSError) and error.errno:
        return error.errno
    for number, words in (
        (errno.ENOSPC, "No space left"),
        (errno.EROFS, "Read-only file system"),
        (errno.EACCES, "Permission denied"),
    ):
        if words in text:
            return number
    return None


def damaged_store(path: object, error: BaseException) -> UnusableStore | None:
    """The error for a store whose file is damaged, if ``error`` says so (else None)."""
    text = _first_line(error)
    if not any(words in text for words in _DAMAGE):
        return None
    return UnusableStore(
        f"store {path} is damaged: part of the file cannot be read ({text}). Restore it from "
        f"a copy, or move it aside and start again with another --db (a disk that filled "
        f"up, a copy cut short or a disk fault can cause this)"
    )


def open_failure(path: Path, error: BaseException, *, read_only: bool) -> StoreError:
    """The error for a store DuckDB could not open (other than one in use)."""
    text = _first_line(error)
    damaged = damaged_store(path, error)
    if damaged is not None:
        return damaged
    number = _errno(error, text)
    if number in (errno.EROFS, errno.EACCES) and not read_only:
        cause = (
            "on a read-only file system"
            if number == errno.EROFS
            else "in a place you may not write to (permission denied)"
        )
        if not path.exists():
            return UnusableStore(
                f"store {path} cannot be created: {path.parent} is {cause}; give --db a path "
                f"in a writable directory"
            )
        return UnusableStore(
            f"store {path} is {cause}, and this command writes to its store: copy it to a "
            f"writable directory and pass that path with --db ('status', 'sql' and 'export' "
            f"can read it where it is)"
        )
    if number == errno.EACCES:
        return UnusableStore(f"store {path} cannot be read (permission denied): check its mode")
    if number == errno.ENOSPC:
        return StoreError(f"the disk holding {path} is full: free some space and run again")
    if "version number" in text or "newer" in text.lower():
        return UnusableStore(
            f"store {path} was written by a newer DuckDB ({text}); upgrade halugen's duckdb "
            f"to use it"
        )
    return UnusableStore(
        f"store {path} cannot be opened as a DuckDB store ({text}); if it is a halugen store, "
        f"restore it from a copy; otherwise give --db another file"
    )


def write_error(path: object, error: BaseException) -> StoreError:
    """The error for a write that failed while the store was open: what, where, what to do."""
    damaged = damaged_store(path, error)
    return damaged if damaged is not None else StoreError(_write_failure(path, error))


def _write_failure(path: object, error: BaseException) -> str:
    text = _first_line(error)
    number = _errno(error, text)
    if number == errno.ENOSPC:
        return (
            f"the disk holding {path} is full: free some space, then run the same command "
            f"again (everything committed so far is kept)"
        )
    if number == errno.EROFS:
        return (
            f"cannot write to {path}: its file system became read-only (a disk error, or it "
            f"was remounted); everything committed so far is kept: check the disk, then run "
            f"the same command again, or copy the store to another disk and pass --db"
        )
    if number == errno.EACCES:
        return f"cannot write to {path} (permission denied): check the file's permissions"
    return (
        f"writing to {path} failed ({text}); the file may be damaged: keep a copy, then run "
        f"the same command again, or move it aside and use another --db"
    )


def is_locked(error: BaseException) -> bool:
    """True when DuckDB could not open the file because another process holds it."""
    return "lock" in _first_line(error).lower()


def resolve_writes(
    futures: list[asyncio.Future[None]], error: BaseException | None, path: object
) -> None:
    """Settle the waiters of a group of writes: done, or failed with the write's error
    named for the user (``write_error``). Used by both durable lanes (writer, journal)."""
    for fut in futures:
        if fut.done():
            continue
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(write_error(path, error))
