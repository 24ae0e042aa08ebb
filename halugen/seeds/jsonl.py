"""Streaming access to seed files shared by every format: JSON lines or one JSON array.

Nothing here holds more than one record (plus a read buffer) in memory, so a 566 MB HotpotQA
array streams in flat memory. Readers get ``(position, value)`` pairs and turn each value into
a ``Seed`` or a ``BadRecord``; a line that is not JSON arrives as a ``BadRecord`` already,
because one bad line must not end the file, whereas a broken JSON array cannot be resumed
past the break and raises ``InputError`` after the records before it.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

import ijson
import orjson

from ..errors import InputError
from ..records import BadRecord

__all__ = [
    "IJSON",
    "RecordProblem",
    "clean_text",
    "first_char",
    "iter_array",
    "iter_lines",
    "iter_records",
    "kind_of",
    "one_line",
    "open_seed_file",
    "text_field",
]

_BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r\n"
_CHUNK = 64 * 1024
# What a damaged or unreadable file raises while being read (gzip raises EOFError when cut).
_READ_ERRORS = (OSError, EOFError, zlib.error)


def _ijson_backend() -> Any:
    # The C backend parses several times faster; the pure-Python one is the fallback.
    try:
        return ijson.get_backend("yajl2_c")
    except ImportError:
        return ijson


IJSON = _ijson_backend()  # the ijson backend module in use


class RecordProblem(Exception):
    """Raised by a record converter: the record is unusable; ``str()`` is the one-line reason."""


def open_seed_file(path: str) -> BinaryIO:
    """Open ``path`` for binary reading, through gzip when it ends in ``.gz``.

    A leading UTF-8 byte-order mark is consumed. Failures become ``InputError``.
    """
    try:
        f: BinaryIO = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        raise InputError(f"seed file {path} not found (check the path)") from None
    except IsADirectoryError:
        raise InputError(
            f"seed file {path} is a directory (name the files in it, e.g. {path}/*.json)"
        ) from None
    except OSError as err:
        raise InputError(f"cannot open seed file {path}: {err.strerror or err}") from None
    try:
        head = f.read(len(_BOM))
        if head != _BOM:
            f.seek(0)  # plain and gzip files are both seekable; rewinding the start is cheap
    except _READ_ERRORS as err:
        f.close()
        raise InputError(f"cannot read seed file {path}: {one_line(err)}") from None
    return f


def first_char(f: BinaryIO, path: str) -> bytes:
    """The first non-whitespace byte of ``f`` (b"" when there is none); ``f`` is rewound.

    ``f`` must come from ``open_seed_file``; it is left where the BOM check left it.
    """
    start = f.tell()
    try:
        while chunk := f.read(_CHUNK):
            rest = chunk.lstrip(_JSON_SPACE)
            if rest:
                return rest[:1]
    except _READ_ERRORS as err:
        raise InputError(f"cannot read seed file {path}: {one_line(err)}") from None
    finally:
        f.seek(start)
    return b""


def iter_lines(path: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line of a JSON-lines file.

    A line that is not valid JSON comes as a ``BadRecord``; CRLF endings and a BOM are fine.
    Raises ``InputError`` when the file has no record at all or cannot be read.
    """
    seen = False
    line_no = 0
    with open_seed_file(path) as f:
        try:
            for line_no, raw in enumerate(f, 1):
                line = raw.strip()
                if not line:
                    continue  # blank lines (also a trailing one) carry nothing
                seen = True
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError as err:
                    yield line_no, BadRecord(path, line_no, f"invalid JSON ({one_line(err)})")
                    continue
                yield line_no, value
        except _READ_ERRORS as err:
            raise InputError(
                f"{path}: cannot read past line {line_no} ({one_line(err)}); "
                "the lines before it were read"
            ) from None
    if not seen:
        raise InputError(f"{path} is empty")


def iter_array(path: str) -> Iterator[tuple[int, Any]]:
    """``(1-based index, element)`` for each element of a file holding one JSON array.

    Streams with ijson. When the array is cut off or broken, the elements before the break
    are yielded first, then ``InputError`` is raised.
    """
    count = 0
    with open_seed_file(path) as f:
        first = first_char(f, path)
        if not first:
            raise InputError(f"{path} is empty")
        if first != b"[":
            raise InputError(
                f"{path} is not a JSON array (it starts with {_show(first)}); check --seed-format"
            )
        try:
            for item in IJSON.items(f, "item", use_float=True):
                count += 1
                yield count, item
        except ijson.JSONError as err:
            reason = one_line(err)
            # Trailing garbage after a complete array is what JSON lines starting with a
            # line that holds a list look like; say so, it is otherwise puzzling.
            hint = (
                " (JSON lines must hold one object per line)"
                if "trailing garbage" in reason
                else ""
            )
            raise InputError(
                f"{path}: invalid JSON after record {count} ({reason}); "
                f"the records before it were read{hint}"
            ) from None
        except _READ_ERRORS as err:
            raise InputError(
                f"{path}: cannot read past record {count} ({one_line(err)}); "
                "the records before it were read"
            ) from None


def iter_records(path: str) -> Iterator[tuple[int, Any]]:
    """Records of ``path`` whichever layout it has: a JSON array, else JSON lines."""
    with open_seed_file(path) as f:
        first = first_char(f, path)
    if not first:
        raise InputError(f"{path} is empty")
    return iter_array(path) if first == b"[" else iter_lines(path)


def clean_text(text: str) -> str:
    """Trim ``text`` and turn every run of whitespace inside it into one space."""
    return " ".join(text.split())


def text_field(record: Mapping[str, Any], name: str) -> str:
    """The cleaned, non-empty string ``record[name]``; else ``RecordProblem``."""
    if name not in record:
        raise RecordProblem(f"missing field {name}")
    value = record[name]
    if not isinstance(value, str):
        raise RecordProblem(f"field {name} is {kind_of(value)}, not a string")
    text = clean_text(value)
    if not text:
        raise RecordProblem(f"field {name} is empty")
    return text


def kind_of(value: Any) -> str:
    """A JSON type name with its article, for messages: "a list", "null", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _show(first: bytes) -> str:
    return repr(first.decode("latin-1"))


def one_line(err: BaseException) -> str:
    """The first line of an error's message, which says what went wrong.

    ijson's C backend appends a multi-line caret diagram, sometimes inside a bytes repr.
    """
    text = str(err)
    if text.startswith(("b'", 'b"')):
        text = text[2:]
    return text.split("\\n")[0].split("\n")[0].strip() or type(err).__name__
