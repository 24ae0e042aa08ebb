"""Tell a seed file's format from its start, without reading the rest of the file.

The first record decides: the keys of the first JSON object (first array element, as parse
events, never built, or first non-blank line), or the columns of a CSV header. Each format
names the keys or columns its records always have and the layouts it comes in, so a CSV header
``knowledge,question,right_answer`` is not taken for HaluEval's JSON lines. CNN/DailyMail
``.story`` files are told by their suffix or by an ``@highlight`` line near the start.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any, BinaryIO

import ijson
import orjson

from ..errors import InputError
from ..records import kind_of
from . import cnndm, halueval, hotpotqa, opendialkg, table
from .badbytes import MarkedBytes
from .csvfile import header_columns
from .jsonl import IJSON, first_char, one_line, open_seed_file
from .limits import NestingGuard

__all__ = [
    "LAYOUTS",
    "SIGNATURES",
    "accepted_formats",
    "detect_format",
    "detect_layout",
    "first_keys",
    "sniff",
]

# (format name, keys its first record must have, one-line description). First match wins, so
# a format whose keys are a superset of another's must come before it. For CSV the keys are
# the header's column names, trimmed and lower-cased; for story files the marker line.
SIGNATURES: tuple[tuple[str, frozenset[str], str], ...] = (
    (hotpotqa.FORMAT, hotpotqa.KEYS, hotpotqa.DESCRIPTION),
    (halueval.FORMAT, halueval.KEYS, halueval.DESCRIPTION),
    (halueval.DIALOGUE_FORMAT, halueval.DIALOGUE_KEYS, halueval.DIALOGUE_DESCRIPTION),
    (
        halueval.SUMMARIZATION_FORMAT,
        halueval.SUMMARIZATION_KEYS,
        halueval.SUMMARIZATION_DESCRIPTION,
    ),
    (opendialkg.FORMAT, opendialkg.KEYS, opendialkg.DESCRIPTION),
    # the same files, one seed per dialogue: never detected (opendialkg matches first)
    (opendialkg.PER_DIALOGUE_FORMAT, opendialkg.KEYS, opendialkg.PER_DIALOGUE_DESCRIPTION),
    (cnndm.FORMAT, cnndm.KEYS, cnndm.DESCRIPTION),
    (cnndm.STORY_FORMAT, cnndm.STORY_KEYS, cnndm.STORY_DESCRIPTION),
)

# The layouts each format comes in: "json" (array or lines), "csv", "story".
LAYOUTS: dict[str, frozenset[str]] = {
    hotpotqa.FORMAT: frozenset({"json"}),
    halueval.FORMAT: halueval.LAYOUTS,
    halueval.DIALOGUE_FORMAT: halueval.LAYOUTS,
    halueval.SUMMARIZATION_FORMAT: halueval.LAYOUTS,
    opendialkg.FORMAT: opendialkg.LAYOUTS,
    opendialkg.PER_DIALOGUE_FORMAT: opendialkg.LAYOUTS,
    cnndm.FORMAT: cnndm.LAYOUTS,
    cnndm.STORY_FORMAT: cnndm.STORY_LAYOUTS,
}

_MAX_FIRST_LINE = 8 * 1024 * 1024  # a first line longer than this is not a seed record
_STORY_SCAN = 1024 * 1024  # how far into a text file to look for an @highlight line
_STORY_SUFFIXES = (".story", ".story.gz")
_SHOWN_KEYS = 12


def detect_format(path: str) -> str:
    """The name of the seed format of ``path``; ``InputError`` when no format fits."""
    name, seen = detect_layout(path)
    if name is not None:
        return name
    raise InputError(
        f"cannot tell the seed format of {path}: it holds {seen}. "
        f"Accepted formats: {accepted_formats()}. "
        "If the file is one of these, name it with --seed-format."
    )


def detect_layout(path: str) -> tuple[str | None, str]:
    """``(the dataset format of path or None, what the file starts with)``.

    None when no dataset's own layout fits: the file may still be a table that a mapping
    (``--map``) reads. ``InputError`` when the file is empty or its first record broken.
    """
    layout, keys, seen = sniff(path)
    return _match(layout, keys), seen


def accepted_formats() -> str:
    """The formats and their shapes, for messages; a table last (any columns, mapped)."""
    shapes = [f"{name} ({description})" for name, _, description in SIGNATURES]
    return "; ".join([*shapes, f"{table.FORMAT} ({table.DESCRIPTION})"])


def first_keys(path: str) -> tuple[frozenset[str] | None, str]:
    """The keys of the first record of ``path`` (None when it is not an object) and a
    description of what the file starts with, for messages."""
    _, keys, seen = sniff(path)
    return keys, seen


def sniff(path: str) -> tuple[str, frozenset[str] | None, str]:
    """``(layout, keys of the first record, what the file starts with)`` of ``path``.

    The layout is "json", "csv" or "story"; the keys are None when the first record is not
    an object. ``InputError`` when the file is empty or its first JSON record is broken.
    """
    with open_seed_file(path) as f:
        if path.endswith(_STORY_SUFFIXES):
            # one story per file: an empty one is a bad record of its own, not a broken input
            return "story", cnndm.STORY_KEYS, "a .story file"
        first = first_char(f, path)
        if not first:
            raise InputError(f"{path} is empty")
        if first == b"[":
            return ("json", *_first_array_keys(f, path))
        if first == b"{":
            return ("json", *_first_line_keys(f))
        try:
            return _text_keys(f)
        except (OSError, EOFError, zlib.error) as err:  # a damaged file, e.g. a cut .gz
            raise InputError(f"cannot read seed file {path}: {one_line(err)}") from None


def _match(layout: str, keys: frozenset[str] | None) -> str | None:
    if keys is None:
        return None
    for name, required, _ in SIGNATURES:
        if layout in LAYOUTS[name] and required <= keys:
            return name
    return None


def _text_keys(f: BinaryIO) -> tuple[str, frozenset[str] | None, str]:
    """A CSV header with known columns, else a story told by an @highlight line."""
    line = b""
    while not line.strip():  # first_char saw text, so a non-blank line is there
        line = f.readline(_MAX_FIRST_LINE)
        if not line:
            break
    text = line.decode("utf-8", "replace").strip()
    columns = frozenset(header_columns(text))
    if _match("csv", columns) is not None:
        shown = _keys(c or "(unnamed)" for c in header_columns(text))
        return "csv", columns, f"a CSV header with columns {shown.removeprefix('keys ')}"
    if _has_story_marker(line, f):
        return "story", cnndm.STORY_KEYS, "text with @highlight lines"
    return (
        "csv",
        columns,
        (
            f"text starting with {text[:40]!r} (neither JSON, nor CSV with known columns, "
            "nor a story with @highlight lines)"
        ),
    )


def _has_story_marker(line: bytes, f: BinaryIO) -> bool:
    marker = cnndm.STORY_MARKER.encode()
    read = 0
    while line and read < _STORY_SCAN:
        if line.strip() == marker:
            return True
        read += len(line)
        line = f.readline(_STORY_SCAN)
    return False


def _first_array_keys(f: BinaryIO, path: str) -> tuple[frozenset[str] | None, str]:
    keys: list[str] = []
    # marked like the reader's stream, so a bad first record does not hide the format; and
    # guarded like it, so a first record nested too deep costs nothing (seeds/limits.py)
    guard = NestingGuard(MarkedBytes(f))
    try:
        for prefix, event, value in IJSON.parse(guard):
            if prefix == "" and event == "end_array":
                raise InputError(f"{path} holds an empty JSON array (no records)")
            if prefix != "item":
                continue  # the array itself, or inside a value of the first element
            if event == "map_key":
                keys.append(value)
            elif event == "end_map":
                return frozenset(keys), f"a JSON array whose first object has {_keys(keys)}"
            elif event != "start_map":
                kind = {
                    "start_array": "a list",
                    "string": "a string",
                    "null": "null",
                    "boolean": "a boolean",
                    "number": "a number",
                }.get(event, event)
                return None, f"a JSON array whose first element is {kind}"
    except (ijson.JSONError, UnicodeDecodeError) as err:
        if guard.problem is not None:
            raise InputError(guard.message(path, 1)) from None
        raise InputError(f"{path}: invalid JSON in its first record ({one_line(err)})") from None
    # ijson raises on a cut array before the events run out; this is for safety only.
    raise InputError(f"{path}: the JSON array ends before its first record")


def _first_line_keys(f: BinaryIO) -> tuple[frozenset[str] | None, str]:
    line = b""
    while not line:  # first_char saw "{", so a non-blank line is there
        raw = f.readline(_MAX_FIRST_LINE)
        if not raw:
            break
        # a lone "\r" ends a line too (old Mac files); JSON never holds a raw one
        line = next((part.strip() for part in raw.split(b"\r") if part.strip()), b"")
    try:
        value: Any = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        return None, (
            f"a first line that is not a whole JSON object ({one_line(err)}), "
            "so neither JSON lines nor a JSON array"
        )
    if not isinstance(value, dict):  # cannot happen for a line starting with "{"; be safe
        return None, f"JSON lines whose first line is {kind_of(value)}"
    return frozenset(value), f"JSON lines whose first object has {_keys(value)}"


def _keys(keys: Iterable[str]) -> str:
    names = list(keys)
    if not names:
        return "no keys"
    shown = ", ".join(names[:_SHOWN_KEYS])
    more = f", … ({len(names) - _SHOWN_KEYS} more)" if len(names) > _SHOWN_KEYS else ""
    return f"keys {shown}{more}"
