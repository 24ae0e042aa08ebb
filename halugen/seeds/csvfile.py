"""Streaming access to CSV seed files: a header row, then one record per row.

Cells may hold quoted line breaks (CNN/DailyMail articles do) and be large (an OpenDialKG
dialogue is one cell), so rows are parsed by the ``csv`` module in streaming mode with a raised
field size limit; only one row is in memory at a time. A row is numbered by the file line it
starts on (the header is line 1), which is what an editor shows. The file is decoded with
``surrogateescape`` so one row with bytes that are not UTF-8 becomes a ``BadRecord`` instead of
ending the file.
"""

from __future__ import annotations

import csv
import io
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InputError
from ..records import BadRecord
from .jsonl import one_line, open_seed_file
from .limits import MAX_TEXT_BYTES

__all__ = ["FIELD_LIMIT", "csv_columns", "header_columns", "iter_csv", "normalise_column"]

# a cell as long as any text halugen reads (seeds/limits.py): a longer one is a bad row
FIELD_LIMIT = MAX_TEXT_BYTES
_READ_ERRORS = (OSError, EOFError, zlib.error)


def normalise_column(name: str) -> str:
    """A header cell as formats name their columns: trimmed, lower case."""
    return name.strip().lower()


def header_columns(line: str) -> list[str]:
    """The normalised column names of one CSV header line (for format detection)."""
    try:
        return [normalise_column(c) for c in next(csv.reader([line]), [])]
    except csv.Error:
        return []


def csv_columns(path: str) -> list[str]:
    """The normalised column names of the CSV file ``path``'s header row (quoted line breaks
    and all); ``InputError`` when the file is empty or its header cannot be read."""
    _raise_field_limit()
    raw = open_seed_file(path)
    with io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="") as text:
        header = next(_rows(csv.reader(text, strict=True), path), None)
    if header is None:
        raise InputError(f"{path} is empty")
    if isinstance(header[1], BadRecord):
        raise InputError(f"{path}: cannot read its CSV header ({header[1].reason})")
    return [normalise_column(n) for n in header[1]]


def iter_csv(
    path: str, required: Sequence[str], optional: Sequence[str] = ()
) -> Iterator[tuple[int, dict[str, str] | BadRecord]]:
    """``(line number, {column: cell})`` for every data row of the CSV file ``path``.

    Only the ``required`` and ``optional`` columns (normalised names) are in the dict. A row
    whose cell count differs from the header's, that the csv module cannot parse, or that holds
    bytes that are not UTF-8 comes as a ``BadRecord``; blank rows are skipped. ``InputError``
    when the file is empty, has no data row, lacks a required column or cannot be read.
    """
    _raise_field_limit()
    raw = open_seed_file(path)
    # newline="" lets the csv module see the line breaks inside quoted cells as they are.
    with io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="") as text:
        reader = csv.reader(text, strict=True)
        rows = _rows(reader, path)
        header = next(rows, None)
        if header is None:
            raise InputError(f"{path} is empty")
        _, names = header
        if isinstance(names, BadRecord):
            raise InputError(f"{path}: cannot read its CSV header ({names.reason})")
        columns = [normalise_column(n) for n in names]
        where = _positions(path, columns, required, optional)
        seen = False
        for line, row in rows:
            seen = True
            if isinstance(row, BadRecord):
                yield line, row
            elif len(row) != len(columns):
                yield (
                    line,
                    BadRecord(
                        path, line, f"row has {len(row)} cells, the header has {len(columns)}"
                    ),
                )
            elif any(_not_utf8(row[i]) for i in where.values()):
                yield line, BadRecord(path, line, "row holds bytes that are not UTF-8")
            else:
                yield line, {name: row[i] for name, i in where.items()}
        if not seen:
            raise InputError(f"{path} holds a CSV header but no rows")


def _rows(reader: Any, path: str) -> Iterator[tuple[int, list[str] | BadRecord]]:
    """Non-blank rows with the line each starts on; parse errors as ``BadRecord``."""
    end = 0  # the last line consumed so far
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            # The reader resumes on the next line, so one broken row does not end the file.
            end = reader.line_num
            span = f"line {start}" if end <= start else f"lines {start}-{end}"
            reason = one_line(err)
            if reason == "unexpected end of data":  # what an unclosed quote looks like at EOF
                reason = "a quoted cell never closes, the rest of the file was read into it"
            yield start, BadRecord(path, start, f"invalid CSV ({reason}; {span})")
            continue
        except _READ_ERRORS as err:
            raise InputError(
                f"{path}: cannot read past line {end} ({one_line(err)}); "
                "the rows before it were read"
            ) from None
        end = reader.line_num
        if any(cell.strip() for cell in row):
            yield start, row


def _positions(
    path: str, columns: list[str], required: Sequence[str], optional: Sequence[str]
) -> dict[str, int]:
    where: dict[str, int] = {}
    for name in (*required, *optional):
        if name in columns:
            where[name] = columns.index(name)  # the first of equally named columns
        elif name in required:
            shown = ", ".join(repr(c) for c in columns)
            raise InputError(
                f"{path}: its CSV header has no {name!r} column (its columns: {shown})"
            )
    return where


def _not_utf8(cell: str) -> bool:
    # surrogateescape turns undecodable bytes into lone surrogates, which cannot be encoded.
    if cell.isascii():
        return False
    try:
        cell.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _raise_field_limit() -> None:
    # The limit is process-wide state of the csv module, which only seed files use here:
    # raised from its 128 KB default to the one limit on a text (a longer cell is a bad row)
    if csv.field_size_limit() != FIELD_LIMIT:
        csv.field_size_limit(FIELD_LIMIT)
