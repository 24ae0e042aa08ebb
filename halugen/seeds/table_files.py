"""Table files: what kind a file is (Parquet, Arrow, JSON, CSV), which files a folder given as
``--seeds`` holds (a ``save_to_disk`` dataset, the Hub's Parquet shards), and Parquet and
Arrow read with pyarrow a batch of rows at a time."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from ..errors import InputError
from .jsonl import first_char, open_seed_file

__all__ = [
    "ArrowFile",
    "arrow_rows",
    "dataset_files",
    "is_binary_table",
    "parquet_schema",
    "table_kind",
]

_PARQUET_SUFFIXES = (".parquet", ".pq")
_ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
_PARQUET_MAGIC = b"PAR1"
_ARROW_FILE_MAGIC = b"ARROW1"
_ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"  # the continuation marker an IPC stream starts with
_BATCH_ROWS = 512  # rows turned into Python values at a time
_READ_BUFFER = 1 << 20  # bytes of a Parquet file read at a time
_SHARD = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}(?:\.[a-z0-9]+)+$")


def table_kind(path: str) -> str:
    """``parquet``, ``arrow``, ``json`` or ``csv``: how the table in ``path`` is read."""
    lower = path.lower()
    if lower.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    if lower.endswith(_ARROW_SUFFIXES):
        return "arrow"
    binary = _binary_kind(path)
    if binary is not None:
        return binary
    with open_seed_file(path) as f:
        first = first_char(f, path)
    if not first:
        raise InputError(f"{path} is empty")
    return "json" if first in (b"{", b"[") else "csv"


def is_binary_table(path: str) -> bool:
    """True for a Parquet or Arrow file (told by its suffix or its first bytes)."""
    return path.lower().endswith(_PARQUET_SUFFIXES + _ARROW_SUFFIXES) or (
        _binary_kind(path) is not None
    )


def _binary_kind(path: str) -> str | None:
    if path.lower().endswith(".gz"):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return None  # the reader that opens it says why
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    if head.startswith((_ARROW_FILE_MAGIC, _ARROW_STREAM_MAGIC)):
        return "arrow"
    return None


def dataset_files(folder: str) -> list[str] | None:
    """The table files of a folder given as ``--seeds``, in order; None when it holds none.

    A ``save_to_disk`` dataset: the Arrow files its ``state.json`` names. Otherwise the
    Parquet files under it (the Hub's ``data/train-00000-of-00003.parquet``), which must be
    of one split. ``InputError`` for a saved ``DatasetDict`` or a folder of several splits:
    the user names the split.
    """
    state = os.path.join(folder, "state.json")
    if os.path.isfile(state) and os.path.isfile(os.path.join(folder, "dataset_info.json")):
        return _saved_dataset_files(folder, state)
    splits_file = os.path.join(folder, "dataset_dict.json")
    if os.path.isfile(splits_file):
        splits = _json_file(splits_file).get("splits") or sorted(
            d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))
        )
        raise InputError(
            f"seed folder {folder} is a DatasetDict saved with save_to_disk (splits: "
            f"{', '.join(map(str, splits))}): name one split, e.g. "
            f"{os.path.join(folder, str(splits[0]) if splits else 'train')}"
        )
    shards = sorted(
        os.path.join(root, name)
        for root, dirs, names in os.walk(folder)
        for name in names
        if name.lower().endswith(_PARQUET_SUFFIXES) and not name.startswith(".")
    )
    if not shards:
        return None
    splits = sorted({_split_of(folder, shard) for shard in shards})
    if len(splits) > 1:
        example = os.path.join(folder, "**", f"{splits[0]}-*.parquet")
        raise InputError(
            f"seed folder {folder} holds Parquet shards of several splits "
            f"({', '.join(s or '(none)' for s in splits)}): name one split's files, e.g. "
            f"'{example}'"
        )
    return shards


def _split_of(folder: str, shard: str) -> str:
    """The split a Hub shard belongs to: ``train`` of ``train-00000-of-00003.parquet``, else
    the folder it sits in (``default/train/0000.parquet``)."""
    match = _SHARD.match(os.path.basename(shard))
    if match:
        return match.group("split")
    parent = os.path.relpath(os.path.dirname(shard), folder)
    return "" if parent == "." else parent


def _saved_dataset_files(folder: str, state_path: str) -> list[str]:
    state = _json_file(state_path)
    entries = state.get("_data_files")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{state_path} names no data files (_data_files): the save is damaged")
    files = []
    for entry in entries:
        name = entry.get("filename") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name:
            raise InputError(f"{state_path}: an entry of _data_files has no filename ({entry!r})")
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise InputError(f"{state_path} names {name}, which is not in {folder}")
        files.append(path)
    return files


def _json_file(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            value = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError) as err:
        raise InputError(f"cannot read {path}: {err}") from None
    if not isinstance(value, dict):
        raise InputError(f"{path} is not a JSON object")
    return value


def arrow_rows(path: str, kind: str, roots: list[str]) -> Iterator[dict[str, Any]]:
    """The rows of a Parquet or Arrow file as dicts of the ``roots`` columns, a batch at a
    time (only one batch of Python values exists at once)."""
    import pyarrow as pa

    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            # no pre-buffering and a small read buffer: pages are read as rows are taken,
            # never whole row groups (pre_buffer would read every column chunk at once)
            with pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER) as pf:
                names = [c for c in roots if c in pf.schema_arrow.names]
                for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=names):
                    yield from batch.to_pylist()
        else:
            with ArrowFile(path) as table:
                for batch in table.batches():
                    names = [c for c in roots if c in batch.schema.names]
                    batch = batch.select(names)
                    for start in range(0, batch.num_rows, _BATCH_ROWS):
                        yield from batch.slice(start, _BATCH_ROWS).to_pylist()
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"cannot read {path} as {kind}: {_first_line(err)}") from None


def parquet_schema(path: str) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"cannot read {path} as Parquet: {_first_line(err)}") from None


class ArrowFile:
    """An Arrow IPC file (``ARROW1``) or stream (what ``save_to_disk`` writes), read a batch
    at a time (not memory-mapped: the pages of a mapped file count in the process's RSS)."""

    def __init__(self, path: str) -> None:
        import pyarrow as pa

        self.path = path
        try:
            self._source = pa.OSFile(path)
            try:
                self._reader: Any = pa.ipc.open_file(self._source)
                self._file = True
            except pa.ArrowInvalid:
                self._source.seek(0)
                self._reader = pa.ipc.open_stream(self._source)
                self._file = False
        except (pa.ArrowException, OSError) as err:
            raise InputError(f"cannot read {path} as Arrow: {_first_line(err)}") from None

    @property
    def schema(self) -> Any:
        return self._reader.schema

    def batches(self) -> Iterator[Any]:
        if self._file:
            for i in range(self._reader.num_record_batches):
                yield self._reader.get_batch(i)
        else:
            yield from self._reader

    def __enter__(self) -> ArrowFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._source.close()


def _first_line(err: BaseException) -> str:
    return str(err).strip().split("\n")[0] or type(err).__name__
