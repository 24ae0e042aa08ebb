"""User queries for pre-selection, read lazily from Alpaca files, JSON lines or CSV.

Formats:

- ``alpaca``: Stanford Alpaca's ``alpaca_data.json``, a JSON array of ``{instruction, input,
  output}`` (JSON lines with the same keys are read too). The query is the instruction, and
  when the input is not empty, the instruction, a blank line and the input. A blank line,
  not ": ", because inputs are often whole passages, code or lists whose own line breaks
  matter; Alpaca's own prompt template also sets the input apart on its own lines.
- ``jsonl``: one JSON object per line (a JSON array is accepted too).
- ``csv``: a header row, then one query per row.

Field mapping (all formats): the query comes from ``query_field`` (default: ``instruction`` for
Alpaca; ``query``, else ``instruction``, for the others), an optional second part from
``input_field`` (default ``input``, used when present) and the id from ``id_field`` (default:
the record's ``id`` when it has one, else ``<file name>:<line or index>``). A field named
explicitly must be there. CSV column names are matched trimmed and case-insensitively.

Text is kept as written apart from trimming the ends and turning CRLF into LF: a user query's
line breaks and indentation can be part of what it asks. A query's key is a fingerprint of its
text, so the same query in two files has one key; the reader does not drop such repeats (that
would need memory growing with the input), the store or the caller does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, UsageError
from ..records import BadRecord, fingerprint, kind_of
from ..seeds import expand_paths
from ..seeds.csvfile import header_columns, iter_csv, normalise_column
from ..seeds.detect import first_keys
from ..seeds.jsonl import (
    RecordProblem,
    converted,
    first_char,
    iter_records,
    open_seed_file,
)

__all__ = ["FORMATS", "Query", "detect_query_format", "query_key", "read_queries"]

FORMATS = ("alpaca", "jsonl", "csv")
_ALPACA_QUERY = ("instruction",)
_PLAIN_QUERY = ("query", "instruction")  # the first one a record (or CSV header) has wins
_DEFAULT_INPUT = "input"
_DEFAULT_ID = "id"
_CSV_SUFFIXES = (".csv", ".csv.gz")
_MAX_HEADER = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Query:
    """One user query to sample responses for."""

    key: str  # fingerprint of ``text``: what responses, scores and annotations are keyed by
    query_id: str  # the record's own id, else "<file name>:<line or index>"
    text: str
    source_file: str
    source_line: int  # 1-based line (JSON lines, CSV) or array index + 1 (JSON arrays)


def query_key(text: str) -> str:
    """The key of a query with this text (what ``Query.key`` holds)."""
    return fingerprint({"query": text})


@dataclass(frozen=True, slots=True)
class _Mapping:
    query: tuple[str, ...]  # candidate names, the first present wins
    query_given: bool
    input: str | None
    input_given: bool
    id: str
    id_given: bool


def read_queries(
    paths: Sequence[str],
    *,
    fmt: str | None = None,
    query_field: str | None = None,
    input_field: str | None = None,
    id_field: str | None = None,
) -> Iterator[Query | BadRecord]:
    """Queries from ``paths`` (files or glob patterns), in order, lazily.

    ``fmt`` is "alpaca", "jsonl" or "csv" for every file; None tells each file's format from
    its name and start (``.csv`` → csv; a JSON array → alpaca, unless its first
    element is an object without ``instruction``; other JSON → jsonl; anything else → csv).
    Unusable records come as ``BadRecord`` with their line (or array index) and the reason.
    Raises ``UsageError`` for an unknown format and ``InputError`` for a missing file at once;
    ``InputError`` later, while iterating, for a file that turns out to be broken.
    """
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown query format {fmt!r} (known: {', '.join(FORMATS)})")
    if isinstance(paths, str):  # a lone path is not a list of one-character paths
        paths = [paths]
    plan = [(path, fmt or detect_query_format(path)) for path in expand_paths(paths)]
    return _read(plan, query_field, input_field, id_field)


def detect_query_format(path: str) -> str:
    """The query format of ``path`` by its name, else by its first record."""
    if path.lower().endswith(_CSV_SUFFIXES):
        return "csv"
    with open_seed_file(path) as f:
        first = first_char(f, path)
    if not first:
        raise InputError(f"{path} is empty")
    if first == b"[":
        # An array of other objects is read as "jsonl", whose default fields fit more shapes.
        keys, _ = first_keys(path)
        return "jsonl" if keys is not None and "instruction" not in keys else "alpaca"
    if first == b"{":
        return "jsonl"
    return "csv"


def _read(
    plan: list[tuple[str, str]],
    query_field: str | None,
    input_field: str | None,
    id_field: str | None,
) -> Iterator[Query | BadRecord]:
    for path, name in plan:
        mapping = _Mapping(
            query=(query_field,)
            if query_field
            else (_ALPACA_QUERY if name == "alpaca" else _PLAIN_QUERY),
            query_given=bool(query_field),
            input=input_field or _DEFAULT_INPUT,
            input_given=bool(input_field),
            id=id_field or _DEFAULT_ID,
            id_given=bool(id_field),
        )
        if name == "csv":
            yield from _read_csv(path, mapping)
        else:
            yield from _read_json(path, mapping)


def _read_json(path: str, mapping: _Mapping) -> Iterator[Query | BadRecord]:
    return converted(path, iter_records(path), lambda r, b, n: _query(r, mapping, path, b, n))


def _read_csv(path: str, mapping: _Mapping) -> Iterator[Query | BadRecord]:
    columns = _csv_header(path)
    names = [normalise_column(n) for n in mapping.query]
    query_col = next((n for n in names if n in columns), None)
    if query_col is None:
        shown = ", ".join(repr(c) for c in sorted(columns)) or "none"
        raise InputError(
            f"{path}: its CSV header has no {' or '.join(repr(n) for n in names)} column "
            f"(its columns: {shown}); name the query column with the query field option"
        )
    input_col = normalise_column(mapping.input) if mapping.input else None
    id_col = normalise_column(mapping.id)
    required = [query_col]
    optional: list[str] = []
    for col, given in ((input_col, mapping.input_given), (id_col, mapping.id_given)):
        if col and col not in required:
            (required if given else optional).append(col)
    csv_mapping = _Mapping(
        query=(query_col,),
        query_given=True,
        input=input_col,
        input_given=mapping.input_given,
        id=id_col,
        id_given=mapping.id_given,
    )
    rows = iter_csv(path, required, optional)
    yield from converted(path, rows, lambda r, b, n: _query(r, csv_mapping, path, b, n))


def _csv_header(path: str) -> frozenset[str]:
    """The normalised column names of a CSV file's first non-blank line."""
    with open_seed_file(path) as f:
        line = b""
        while not line.strip():
            line = f.readline(_MAX_HEADER)
            if not line:
                raise InputError(f"{path} is empty")
    return frozenset(header_columns(line.decode("utf-8", "replace").strip()))


def _query(record: Any, mapping: _Mapping, path: str, base: str, position: int) -> Query:
    if not isinstance(record, Mapping):
        raise RecordProblem(f"record is {kind_of(record)}, not an object")
    name = next((n for n in mapping.query if n in record), None)
    if name is None:
        raise RecordProblem(f"missing field {' or '.join(mapping.query)}")
    text = _text(record[name], name, required=True)
    if mapping.input is not None and mapping.input != name:
        if mapping.input in record:
            extra = _text(record[mapping.input], mapping.input, required=False)
            if extra:
                text = f"{text}\n\n{extra}"
        elif mapping.input_given:
            raise RecordProblem(f"missing field {mapping.input}")
    return Query(
        key=query_key(text),
        query_id=_query_id(record, mapping, base, position),
        text=text,
        source_file=path,
        source_line=position,
    )


def _text(value: Any, name: str, *, required: bool) -> str:
    if value is None and not required:
        return ""  # an input of null is as good as an empty one
    if not isinstance(value, str):
        raise RecordProblem(f"field {name} is {kind_of(value)}, not a string")
    text = value.replace("\r\n", "\n").strip()
    if required and not text:
        raise RecordProblem(f"field {name} is empty")
    return text


def _query_id(record: Mapping[str, Any], mapping: _Mapping, base: str, position: int) -> str:
    value = record.get(mapping.id)
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if mapping.id_given:
        if mapping.id not in record:
            raise RecordProblem(f"missing field {mapping.id}")
        raise RecordProblem(f"field {mapping.id} is {_shown_kind(value)}, not an id")
    return f"{base}:{position}"


def _shown_kind(value: Any) -> str:
    return "empty" if isinstance(value, str) else kind_of(value)
