"""Seeds from any table: JSON lines or a JSON array of objects, CSV, Parquet, Arrow.

A table holds one record per row under its own column names; ``mapping`` (``--map
FIELD=COLUMN``) says which column fills which of the task's seed fields, and a field left
out is read from the column of its own name. A column is a path: ``context.sentences`` is
the ``sentences`` field of the struct (or object) ``context``; where the path meets a list,
it goes on in every element. A list value is flattened and joined with single spaces; a
number becomes its text; text is kept as the file has it. ``id`` may be mapped too: the
seed's id is then that column, else ``<file>:<row>``.

Rows are read lazily: JSON and CSV through the streaming readers every format shares
(``jsonl``, ``csvfile``: one bad line is one bad record), Parquet and Arrow through pyarrow
a batch of rows at a time and only the columns the mapping names, so memory stays flat
whatever the file's size. ``check_table`` runs before any call: a mapped column that no
record has (a typo), or one that holds a whole struct, is an error naming the columns that
exist; a row whose value is missing or empty is a ``BadRecord`` with its reason.

A dataset saved with Hugging Face ``datasets.save_to_disk`` is a folder of Arrow IPC stream
files (``data-00000-of-00002.arrow`` ...) named in its ``state.json``; ``dataset_files`` lists
them, and a folder of Parquet shards as the Hub lays them out (``data/train-00000-of-00003
.parquet``), so a folder can be given as ``--seeds``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

import orjson

from ..errors import InputError, UsageError
from ..records import BadRecord, Seed
from .csvfile import csv_columns, iter_csv, normalise_column
from .jsonl import RecordProblem, check_text, first_char, iter_records, kind_of, open_seed_file

__all__ = [
    "DESCRIPTION",
    "FORMAT",
    "ID_FIELD",
    "check_table",
    "dataset_files",
    "is_binary_table",
    "parse_map",
    "read_table",
    "table_kind",
]

FORMAT = "table"
DESCRIPTION = (
    "any table (JSON lines or array of objects, CSV, Parquet, Arrow / HF save_to_disk) with "
    "columns named as the task's fields or mapped with --map FIELD=COLUMN"
)
ID_FIELD = "id"  # a mapping key that is not a seed field: the column holding the seed's id

_PARQUET_SUFFIXES = (".parquet", ".pq")
_ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
_PARQUET_MAGIC = b"PAR1"
_ARROW_FILE_MAGIC = b"ARROW1"
_ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"  # the continuation marker an IPC stream starts with
_BATCH_ROWS = 512  # rows turned into Python values at a time
_READ_BUFFER = 1 << 20  # bytes of a Parquet file read at a time
_SAMPLE_ROWS = 1000  # JSON rows looked at to tell which columns exist
_SHOWN = 20  # columns listed in a message
_SHARD = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}(?:\.[a-z0-9]+)+$")

# A column's shape: None for a value (text, number, ...), else {name: shape} for a struct or
# object; a list has the shape of its elements.
Shape = dict[str, Any] | None


# -- the mapping -----------------------------------------------------------------------------


def parse_map(items: Iterable[str], *, where: str = "--map") -> dict[str, str]:
    """``["question=q", "knowledge=context.sentences"]`` as ``{field: column}``.

    ``UsageError`` for an item without ``=``, an empty side, or a field named twice.
    """
    mapping: dict[str, str] = {}
    for item in items:
        field, sep, column = (part.strip() for part in str(item).partition("="))
        if not sep or not field or not column:
            raise UsageError(
                f"{where} {item!r}: write FIELD=COLUMN, e.g. --map question=query "
                "(a nested column as a path: --map knowledge=context.sentences)"
            )
        if field in mapping and mapping[field] != column:
            raise UsageError(f"{where} names field {field} twice ({mapping[field]}, {column})")
        mapping[field] = column
    return mapping


def _columns_of(task: str, fields: Sequence[str], mapping: Mapping[str, str]) -> dict[str, str]:
    """``{field: column}`` for every seed field (and ``id`` when mapped)."""
    unknown = [f for f in mapping if f not in fields and f != ID_FIELD]
    if unknown:
        raise UsageError(
            f"--map {unknown[0]}={mapping[unknown[0]]}: {unknown[0]} is not a seed field of "
            f"task {task} (its fields: {', '.join(fields)}; and {ID_FIELD} for the seed's id)"
        )
    columns = {field: mapping.get(field, field) for field in fields}
    if ID_FIELD in mapping:
        columns[ID_FIELD] = mapping[ID_FIELD]
    return columns


# -- what a file is --------------------------------------------------------------------------


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


# -- columns that exist ----------------------------------------------------------------------


def check_table(
    path: str, task: str, fields: Sequence[str], mapping: Mapping[str, str] | None
) -> None:
    """Raise before any call when a column the seeds need does not exist in ``path``.

    ``UsageError`` for a mapped column (a typo in --map), ``InputError`` for a field's own
    column; both name the column and list the columns that exist.
    """
    kind = table_kind(path)
    shape = _table_shape(path, kind)
    for field, column in _columns_of(task, fields, mapping or {}).items():
        problem = _path_problem(shape, _parts(column, kind))
        if problem is None:
            continue
        if mapping and field in mapping:
            raise UsageError(f"--map {field}={column}: {path} {problem}")
        raise InputError(
            f"{path} {problem}, which the seed field {field} is read from: name the column "
            f"that holds it with --map {field}=COLUMN"
        )


def _parts(column: str, kind: str) -> list[str]:
    return [normalise_column(column)] if kind == "csv" else column.split(".")


def _table_shape(path: str, kind: str) -> dict[str, Any]:
    if kind == "parquet":
        return _arrow_shape(_parquet_schema(path))
    if kind == "arrow":
        with _ArrowFile(path) as table:
            return _arrow_shape(table.schema)
    if kind == "csv":
        return dict.fromkeys(csv_columns(path))
    shape: dict[str, Any] = {}
    seen = False
    for row, record in islice(iter_records(path), _SAMPLE_ROWS):
        if isinstance(record, Mapping):
            seen = True
            try:
                _merge(shape, record)
            except RecursionError:
                raise InputError(f"{path}: record {row} nests too deep to read") from None
    if not seen:
        raise InputError(
            f"{path}: none of its first {_SAMPLE_ROWS:,} records is a JSON object with columns"
        )
    return shape


def _merge(shape: dict[str, Any], record: Mapping[str, Any]) -> None:
    for key, value in record.items():
        inner = _value_shape(value)
        old = shape.get(key)
        if isinstance(inner, dict):
            if not isinstance(old, dict):
                shape[key] = old = {}
            _merge_shapes(old, inner)
        elif key not in shape:
            shape[key] = None


def _merge_shapes(into: dict[str, Any], other: dict[str, Any]) -> None:
    for key, value in other.items():
        if isinstance(value, dict):
            if not isinstance(into.get(key), dict):
                into[key] = {}
            _merge_shapes(into[key], value)
        elif key not in into:
            into[key] = None


def _value_shape(value: Any) -> Shape:
    if isinstance(value, Mapping):
        shape: dict[str, Any] = {}
        _merge(shape, value)
        return shape
    if isinstance(value, list):
        merged: dict[str, Any] | None = None
        for item in value:
            inner = _value_shape(item)
            if isinstance(inner, dict):
                merged = merged if merged is not None else {}
                _merge_shapes(merged, inner)
        return merged
    return None


def _arrow_shape(schema: Any) -> dict[str, Any]:
    return {f.name: _arrow_type_shape(f.type) for f in schema}


def _arrow_type_shape(typ: Any) -> Shape:
    import pyarrow as pa

    while pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        typ = typ.value_type
    if pa.types.is_struct(typ):
        return {
            typ.field(i).name: _arrow_type_shape(typ.field(i).type) for i in range(typ.num_fields)
        }
    return None


def _path_problem(shape: dict[str, Any], parts: list[str]) -> str | None:
    """Why the column ``parts`` is not a column of text in ``shape``; None when it is."""
    level: Shape = shape
    walked: list[str] = []
    while parts:
        if not isinstance(level, dict):
            column, holder = ".".join(walked + parts), ".".join(walked)
            return f"has no column {column}: {holder} holds values, not fields"
        for n in range(len(parts), 0, -1):  # a column literally named "a.b" wins
            key = ".".join(parts[:n])
            if key in level:
                walked.append(key)
                level, parts = level[key], parts[n:]
                break
        else:
            column = ".".join(walked + parts)
            where = f"{'.'.join(walked)} has fields" if walked else "its columns are"
            return f"has no column {column} ({where}: {_list(level)})"
    if isinstance(level, dict):
        column = ".".join(walked)
        return (
            f"column {column} holds a struct, not text: name one of its fields "
            f"({', '.join(column + '.' + k for k in list(level)[:_SHOWN])})"
        )
    return None


def _list(shape: Mapping[str, Any]) -> str:
    names = [k or "(unnamed)" for k in shape]
    more = f", … ({len(names) - _SHOWN} more)" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more if names else "none"


# -- rows ------------------------------------------------------------------------------------


def read_table(
    path: str, task: str, fields: Sequence[str], mapping: Mapping[str, str] | None = None
) -> Iterator[Seed | BadRecord]:
    """Seeds of ``task`` from the table ``path``, lazily; unusable rows as ``BadRecord``."""
    columns = _columns_of(task, fields, mapping or {})
    kind = table_kind(path)
    paths = {field: _parts(column, kind) for field, column in columns.items()}
    base = os.path.basename(path)
    items = list(paths.items())
    for row, record in _rows(path, kind, sorted({p[0] for p in paths.values()})):
        if isinstance(record, BadRecord):
            yield record
            continue
        try:
            values = {f: _field_text(record, path_of, columns[f]) for f, path_of in items}
        except RecordProblem as problem:
            yield BadRecord(path, row, str(problem))
            continue
        except RecursionError:
            yield BadRecord(path, row, "nests too deep to read")
            continue
        seed_id = values.pop(ID_FIELD, None)
        yield Seed(
            task=task,
            fields=values,
            seed_id=seed_id.strip() if seed_id is not None else f"{base}:{row}",
            source_file=path,
            source_line=row,
            dataset=FORMAT,
        )


def _rows(path: str, kind: str, roots: list[str]) -> Iterator[tuple[int, Any]]:
    """``(row number, record)``: 1-based data rows (CSV: the line a row starts on)."""
    if kind == "json":
        for row, record in iter_records(path):
            if isinstance(record, BadRecord | Mapping):
                yield row, record
            else:
                yield row, BadRecord(path, row, f"not a JSON object ({kind_of(record)})")
    elif kind == "csv":
        yield from iter_csv(path, required=(), optional=roots)
    else:
        yield from enumerate(_arrow_rows(path, kind, roots), 1)


def _arrow_rows(path: str, kind: str, roots: list[str]) -> Iterator[dict[str, Any]]:
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
            with _ArrowFile(path) as table:
                for batch in table.batches():
                    names = [c for c in roots if c in batch.schema.names]
                    batch = batch.select(names)
                    for start in range(0, batch.num_rows, _BATCH_ROWS):
                        yield from batch.slice(start, _BATCH_ROWS).to_pylist()
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"cannot read {path} as {kind}: {_first_line(err)}") from None


def _parquet_schema(path: str) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"cannot read {path} as Parquet: {_first_line(err)}") from None


class _ArrowFile:
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

    def __enter__(self) -> _ArrowFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._source.close()


def _first_line(err: BaseException) -> str:
    return str(err).strip().split("\n")[0] or type(err).__name__


# -- values ----------------------------------------------------------------------------------

_MISSING = object()


def _field_text(record: dict[str, Any], parts: list[str], column: str) -> str:
    """The text of ``column`` in ``record``: lists flattened and joined with one space."""
    value = _resolve(record, parts)
    if value is _MISSING:
        raise RecordProblem(f"missing column {column}")
    if type(value) is str:  # the common case, kept as given
        text = value
    else:
        pieces: list[str] = []
        _texts(value, column, pieces, in_list=False)
        text = " ".join(pieces)
    if not text.strip():
        raise RecordProblem(f"column {column} is empty")
    check_text(column, text)
    return text


# Rows come as dicts and lists (pyarrow's to_pylist, orjson, the CSV reader): the hot paths
# test for exactly those types, which is several times cheaper than the abstract ones.


def _resolve(value: Any, parts: list[str]) -> Any:
    if not parts:
        return value
    if isinstance(value, dict):
        if len(parts) == 1:
            return value.get(parts[0], _MISSING)
        for n in range(len(parts), 0, -1):  # a key literally named "a.b" wins
            key = ".".join(parts[:n]) if n > 1 else parts[0]
            if key in value:
                return _resolve(value[key], parts[n:])
        return _MISSING
    if isinstance(value, list):
        found = [v for v in (_resolve(item, parts) for item in value) if v is not _MISSING]
        return found if found or not value else _MISSING
    return _MISSING


def _texts(value: Any, column: str, out: list[str], *, in_list: bool) -> None:
    """The texts of ``value`` into ``out``. A text on its own is kept as given; the items
    of a list are trimmed, to be joined on exactly one space (as HotpotQA's sentences are)."""
    kind = type(value)
    if kind is str:
        if in_list:
            value = value.strip()
            if value:
                out.append(value)
        elif value.strip():
            out.append(value)
    elif kind is list or kind is tuple:
        for item in value:
            _texts(item, column, out, in_list=True)
    elif value is None:
        return
    elif kind is bool:
        raise RecordProblem(f"column {column} holds {kind_of(value)}, not text")
    elif kind is int or kind is float:
        out.append(str(value))
    elif isinstance(value, Mapping):
        raise RecordProblem(
            f"column {column} holds an object, not text: name one of its fields "
            f"({', '.join(column + '.' + str(k) for k in list(value)[:_SHOWN])})"
        )
    else:
        out.append(str(value))  # a date or a decimal from a typed column: its text
