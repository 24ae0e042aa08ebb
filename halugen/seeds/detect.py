"""Tell a seed file's format from its first record, without reading the rest of the file.

The first record's keys decide: each format names the keys its records always have. Only the
first array element (as parse events, never built) or the first non-blank line is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, BinaryIO

import ijson
import orjson

from ..errors import InputError
from . import halueval, hotpotqa
from .jsonl import IJSON, first_char, kind_of, one_line, open_seed_file

__all__ = ["SIGNATURES", "accepted_formats", "detect_format", "first_keys"]

# (format name, keys its first record must have, one-line description). First match wins, so
# a format whose keys are a superset of another's must come before it.
SIGNATURES: tuple[tuple[str, frozenset[str], str], ...] = (
    (hotpotqa.FORMAT, hotpotqa.KEYS, hotpotqa.DESCRIPTION),
    (halueval.FORMAT, halueval.KEYS, halueval.DESCRIPTION),
)

_MAX_FIRST_LINE = 8 * 1024 * 1024  # a first line longer than this is not a seed record
_SHOWN_KEYS = 12


def detect_format(path: str) -> str:
    """The name of the seed format of ``path``; ``InputError`` when no format fits."""
    keys, seen = first_keys(path)
    if keys is not None:
        for name, required, _ in SIGNATURES:
            if required <= keys:
                return name
    raise InputError(
        f"cannot tell the seed format of {path}: it holds {seen}. "
        f"Accepted formats: {accepted_formats()}. "
        "If the file is one of these, name it with --seed-format."
    )


def accepted_formats() -> str:
    """The formats and their shapes, for messages."""
    return "; ".join(f"{name} ({description})" for name, _, description in SIGNATURES)


def first_keys(path: str) -> tuple[frozenset[str] | None, str]:
    """The keys of the first record of ``path`` (None when it is not an object) and a
    description of what the file starts with, for messages."""
    with open_seed_file(path) as f:
        first = first_char(f, path)
        if not first:
            raise InputError(f"{path} is empty")
        if first == b"[":
            return _first_array_keys(f, path)
        if first == b"{":
            return _first_line_keys(f)
        lines = f.read(200).decode("utf-8", "replace").strip().splitlines()
        head = lines[0][:40] if lines else ""
    return None, f"text starting with {head!r} (neither a JSON array nor JSON lines)"


def _first_array_keys(f: BinaryIO, path: str) -> tuple[frozenset[str] | None, str]:
    keys: list[str] = []
    try:
        for prefix, event, value in IJSON.parse(f):
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
    except ijson.JSONError as err:
        raise InputError(f"{path}: invalid JSON in its first record ({one_line(err)})") from None
    # ijson raises on a cut array before the events run out; this is for safety only.
    raise InputError(f"{path}: the JSON array ends before its first record")


def _first_line_keys(f: BinaryIO) -> tuple[frozenset[str] | None, str]:
    line = b""
    while not line:  # first_char saw "{", so a non-blank line is there
        raw = f.readline(_MAX_FIRST_LINE)
        if not raw:
            break
        line = raw.strip()
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
