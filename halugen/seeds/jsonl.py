"""Streaming access to seed files shared by every format: JSON lines or one JSON array.

Nothing here holds more than one record (plus a read buffer) in memory, so a 566 MB HotpotQA
array streams in flat memory. Readers get ``(position, value)`` pairs and turn each value into
a ``Seed`` or a ``BadRecord``; a line that is not JSON arrives as a ``BadRecord`` already,
because one bad line must not end the file. In a JSON array, a record with bytes that are not
UTF-8, a NUL byte or another raw control character arrives as a ``BadRecord`` too and the
array is read on (``badbytes``); a break in its structure cannot be resumed past and raises
``InputError`` after the records before it. Files in UTF-16 or UTF-32 are read as UTF-8
(``encoding``); a named pipe or a device is refused before it is opened (opening a pipe
waits for a writer, and a seed file is read more than once).

Texts are kept as the file has them: ``text_field`` checks a field (a string, not blank, no
NUL) on a trimmed view but returns it unchanged; readers normalise only to compare.
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, BinaryIO, TypeVar, cast

import ijson
import orjson

from ..errors import InputError
from ..records import BadRecord, Seed, kind_of
from .badbytes import MarkedBytes, find_mark
from .encoding import utf8_stream
from .limits import (
    LONG_LINE,
    MAX_TEXT_BYTES,
    NestingGuard,
    line_problem,
    split_lines,
    too_long,
)

__all__ = [
    "IJSON",
    "RecordProblem",
    "SeedId",
    "check_text",
    "clean_text",
    "converted",
    "first_char",
    "iter_array",
    "iter_lines",
    "iter_records",
    "one_line",
    "open_seed_file",
    "record_id",
    "seeds_of",
    "special_file_kind",
    "special_file_message",
    "text_field",
]

_JSON_SPACE = b" \t\r\n"
_CHUNK = 64 * 1024
# What a damaged or unreadable file raises while being read (gzip raises EOFError when cut).
_READ_ERRORS = (OSError, EOFError, zlib.error)
_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _ijson_backend() -> Any:
    # The C backend parses several times faster; the pure-Python one is the fallback.
    try:
        return ijson.get_backend("yajl2_c")
    except ImportError:
        return ijson


IJSON = _ijson_backend()  # the ijson backend module in use


class RecordProblem(Exception):
    """Raised by a record converter: the record is unusable; ``str()`` is the one-line reason."""


T = TypeVar("T")
SeedId = Callable[[Any, str, int], str]  # (record, file name, position) -> seed id


def converted(
    path: str, records: Iterable[tuple[int, Any]], convert: Callable[[Any, str, int], T]
) -> Iterator[T | BadRecord]:
    """``convert(record, file name, position)`` of each ``(position, record)`` of ``path``,
    or a ``BadRecord`` with the ``RecordProblem`` it raised; records already bad pass through."""
    base = os.path.basename(path)
    for position, record in records:
        if isinstance(record, BadRecord):
            yield record
            continue
        try:
            item = convert(record, base, position)
        except RecordProblem as problem:
            yield BadRecord(path, position, str(problem))
            continue
        yield item


def seeds_of(
    path: str,
    records: Iterable[tuple[int, Any]],
    *,
    task: str,
    dataset: str,
    fields: Callable[[Any], dict[str, str]],
    seed_id: SeedId | None = None,
) -> Iterator[Seed | BadRecord]:
    """One seed of ``task`` per record of ``path`` (``converted``), with the record's
    ``fields``; its id by ``seed_id``, else ``<file name>:<position>``."""

    def seed(record: Any, base: str, position: int) -> Seed:
        return Seed(
            task=task,
            fields=fields(record),
            seed_id=seed_id(record, base, position) if seed_id else f"{base}:{position}",
            source_file=path,
            source_line=position,
            dataset=dataset,
        )

    return converted(path, records, seed)


def record_id(*names: str) -> SeedId:
    """A seed id from the record's first non-empty string or integer field of ``names``,
    else ``<file name>:<position>``."""

    def seed_id(record: Any, base: str, position: int) -> str:
        for name in names:
            value = record.get(name) if isinstance(record, Mapping) else None
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, int) and not isinstance(value, bool):
                return str(value)
        return f"{base}:{position}"

    return seed_id


def special_file_kind(path: str) -> str | None:
    """What ``path`` is when it exists but is not a regular file or directory, else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    for test, kind in _SPECIAL_FILES:
        if test(mode):
            return kind
    return None


def special_file_message(path: str, kind: str) -> str:
    """The message for a seed file that is a pipe or a device."""
    return (
        f"seed file {path} is {kind}, not a regular file: halugen reads a seed file more "
        "than once (its start to tell the format, then all of it, and again on resume), "
        f"so save the data to a file first (e.g. cat {path} > seeds.json) and name that"
    )


def open_seed_file(path: str) -> BinaryIO:
    """Open ``path`` for binary reading as UTF-8, through gzip when it ends in ``.gz``.

    A leading UTF-8 byte-order mark is consumed; UTF-16 and UTF-32 text is re-encoded as
    UTF-8 while it is read. Failures become ``InputError``.
    """
    kind = special_file_kind(path)
    if kind is not None:  # opening a FIFO would wait for a writer
        raise InputError(special_file_message(path, kind))
    try:
        f = cast(BinaryIO, gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb"))  # noqa: SIM115
    except FileNotFoundError:
        raise InputError(f"seed file {path} not found (check the path)") from None
    except IsADirectoryError:
        raise InputError(
            f"seed file {path} is a directory (name the files in it, e.g. {path}/*.json)"
        ) from None
    except OSError as err:
        raise InputError(f"cannot open seed file {path}: {err.strerror or err}") from None
    try:
        return utf8_stream(f, path)
    except _READ_ERRORS as err:
        f.close()
        raise InputError(f"cannot read seed file {path}: {one_line(err)}") from None
    except BaseException:
        f.close()
        raise


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

    A line that is not valid JSON, or longer than ``MAX_LINE_BYTES``, comes as a
    ``BadRecord``; LF, CRLF and CR-only endings and a BOM are fine.
    Raises ``InputError`` when the file has no record at all or cannot be read.
    """
    seen = False
    line_no = 0
    with open_seed_file(path) as f:
        try:
            for line_no, raw in split_lines(f):
                if raw is None:  # over the limit: skipped unread (seeds/limits.py)
                    seen = True
                    yield line_no, BadRecord(path, line_no, LONG_LINE)
                    continue
                line = raw.strip()
                if not line:
                    continue  # blank lines (also a trailing one) carry nothing
                seen = True
                problem = line_problem(line)
                if problem is not None:
                    yield line_no, BadRecord(path, line_no, f"the record {problem}")
                    continue
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

    Streams with ijson. An element holding bytes that are not UTF-8, a NUL byte or another
    raw control character comes as a ``BadRecord`` and the elements after it are read on.
    An element nested too deep or holding too long a text (``seeds/limits.py``) ends the
    file with ``InputError`` naming it, after the elements before it.
    When the array's structure is cut off or broken, the elements before the break are
    yielded first, then ``InputError`` is raised.
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
        marked = MarkedBytes(f)
        guard = NestingGuard(marked)  # a record too deep or too long ends the stream
        try:
            for item in IJSON.items(guard, "item", use_float=True):
                count += 1
                problem = find_mark(item) if marked.marked else None
                yield count, (BadRecord(path, count, problem) if problem else item)
        except (ijson.JSONError, UnicodeDecodeError) as err:
            if guard.problem is not None:
                raise InputError(guard.message(path, count + 1)) from None
            raise InputError(_array_damage(path, count, err, marked.consumed)) from None
        except _READ_ERRORS as err:
            raise InputError(
                f"{path}: cannot read past record {count} ({one_line(err)}); {_read_before(count)}"
            ) from None


def _array_damage(path: str, count: int, err: BaseException, consumed: int) -> str:
    """What broke a JSON array, where, and how many records before it were read."""
    reason = one_line(err)
    near = _near(err)
    where = f" near {near!r}" if near else ""
    if "premature EOF" in reason or "Incomplete JSON" in reason:
        return (
            f"{path}: the JSON array is cut short: the file ends (after {consumed:,} bytes) "
            f"before the array closes, after record {count}; {_read_before(count)}"
        )
    if "trailing garbage" in reason or "Additional data" in reason:
        # Also what JSON lines look like when their first line holds a list: say so.
        return (
            f"{path}: bytes after the end of the JSON array{where}; its {count} record(s) "
            "were read (a file holds one JSON array; JSON lines must hold one object per line)"
        )
    return f"{path}: invalid JSON after record {count} ({reason}{where}); {_read_before(count)}"


def _read_before(count: int) -> str:
    return f"the {count} record(s) before it were read" if count else "no record was read"


def _near(err: BaseException) -> str:
    """The text around a parse error, from the C parser's diagram ("" when there is none)."""
    lines = str(err).replace("\\n", "\n").split("\n")
    if len(lines) < 3 or "right here" not in lines[2]:
        return ""
    # the diagram may come as a bytes repr (backslashes doubled); bad bytes show as marks
    near = lines[1].strip().replace("\\\\", "\\")
    return near.replace("\\uffff", "\ufffd").replace("\\ufffe", "\ufffd")


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
    """The string ``record[name]`` exactly as the file has it; ``RecordProblem`` when it is
    missing, not a string, blank or holds a NUL character."""
    if name not in record:
        raise RecordProblem(f"missing field {name}")
    value = record[name]
    if not isinstance(value, str):
        raise RecordProblem(f"field {name} is {kind_of(value)}, not a string")
    if not value.strip():
        raise RecordProblem(f"field {name} is empty")
    check_text(name, value)
    return value


def check_text(name: str, text: str) -> None:
    """``RecordProblem`` when the text of field ``name`` cannot go into a prompt as is."""
    if "\x00" in text:
        raise RecordProblem(f"field {name} holds a NUL character")
    if (
        len(text) > MAX_TEXT_BYTES // 4
        and len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES
    ):
        size = len(text.encode("utf-8", "surrogatepass"))
        raise RecordProblem(f"field {name} is {too_long(size, MAX_TEXT_BYTES)}")


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
