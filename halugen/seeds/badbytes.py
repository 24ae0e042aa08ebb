"""Bytes a JSON parser cannot take, marked so that one bad record does not end a JSON array.

A streaming parser stops for good at the first byte it cannot take, so one record with bytes
that are not UTF-8 (a damaged sector, a Latin-1 edit), a NUL byte or another raw control
character, or an escaped lone surrogate (``"\\udc80"``, which no text holds) would lose every
record after it. ``MarkedBytes`` sits between the file and the parser and rewrites each such
thing into a JSON escape of a Unicode noncharacter: valid JSON where the parser would have
stopped, and text no dataset holds, so the record that gets it is found after parsing
(``find_mark``) and skipped as a bad record while the array is read on.

Clean input costs one C-speed check per 64 KB chunk (ASCII or UTF-8 validation, one search
for control bytes, one for surrogate escapes); nothing is rewritten.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from typing import Any, BinaryIO

__all__ = ["MarkedBytes", "find_mark"]

# U+FFFF and U+FFFE are Unicode noncharacters: never in interchanged text.
NOT_UTF8 = "\uffff"
CONTROL = "\ufffe"
_NOT_UTF8_ESCAPE = b"\\uffff"
_CONTROL_ESCAPE = b"\\ufffe"
_REASONS = {
    NOT_UTF8: "holds bytes that are not UTF-8 (or an escaped lone surrogate)",
    CONTROL: "holds a NUL byte or another raw control character (invalid in JSON)",
}

# Raw C0 controls other than tab, LF and CR: invalid inside JSON strings and between tokens.
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
_CONTROLS = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
# A cheap look for surrogate escapes (a regex with a literal start scans at ~1 GB/s).
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
# A \u escape of a UTF-16 surrogate preceded by an even run of backslashes (so it is an
# escape, not the text "\u..." after an escaped backslash): a high one with its low one is a
# valid pair, anything else is lone.
_SURROGATE = re.compile(
    rb"(?<!\\)((?:\\\\)*)(\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_HIGH = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_CHUNK = 64 * 1024
_LONGEST_ESCAPE = 12  # a surrogate pair: \uXXXX\uXXXX


def _mark_not_utf8(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return NOT_UTF8, err.end


codecs.register_error("halugen.mark_not_utf8", _mark_not_utf8)


class MarkedBytes:
    """A binary file read through, with bytes no JSON parser takes rewritten as marks.

    ``marked`` counts the rewrites so far; while it is 0 no record can hold a mark.
    ``consumed`` counts the bytes read from the file so far.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._carry = b""  # the start of a UTF-8 sequence cut by the end of the last read
        self._held = b""  # the end of the last chunk, when it may be inside an escape
        self._out = b""
        self._eof = False
        self.marked = 0
        self.consumed = 0  # bytes read from ``raw`` so far

    def read(self, size: int = -1) -> bytes:
        want = _CHUNK if size is None or size < 0 else size
        while len(self._out) < want and not self._eof:
            self._out += self._next_chunk()
        data, self._out = self._out[:want], self._out[want:]
        return data

    def _next_chunk(self) -> bytes:
        data = self._raw.read(_CHUNK)
        self.consumed += len(data)
        if not data:
            self._eof = True
            tail = self._held
            if self._carry:  # a character cut by the end of the file
                text = self._carry.decode("utf-8", "halugen.mark_not_utf8")
                tail += self._escape(text)
            self._held = self._carry = b""
            return self._surrogates(tail)
        chunk = self._held + self._text(data)
        cut = _safe_cut(chunk)
        chunk, self._held = chunk[:cut], chunk[cut:]
        return self._surrogates(chunk)

    def _text(self, data: bytes) -> bytes:
        """``data`` with bytes that are not UTF-8 and raw controls marked."""
        if self._carry:
            data = self._carry + data
            self._carry = b""
        if not data.isascii():
            try:  # valid UTF-8 passes as it is; a sequence cut at the end waits for the rest
                _, used = codecs.utf_8_decode(data, "strict", False)
            except UnicodeDecodeError:
                text, used = codecs.utf_8_decode(data, "halugen.mark_not_utf8", False)
                data, self._carry = self._escape(text), data[used:]
            else:
                data, self._carry = data[:used], data[used:]
        if len(data.translate(None, _CONTROL_BYTES)) != len(data):
            data, n = _CONTROLS.subn(lambda _: _CONTROL_ESCAPE, data)
            self.marked += n
        return data

    def _escape(self, text: str) -> bytes:
        if NOT_UTF8 in text:
            self.marked += text.count(NOT_UTF8)
            return text.encode("utf-8").replace(NOT_UTF8.encode("utf-8"), _NOT_UTF8_ESCAPE)
        return text.encode("utf-8")

    def _surrogates(self, chunk: bytes) -> bytes:
        if _MAYBE_SURROGATE.search(chunk) is None:
            return chunk
        return _SURROGATE.sub(self._lone, chunk)

    def _lone(self, m: re.Match[bytes]) -> bytes:
        if len(m.group(2)) == _LONGEST_ESCAPE:
            return m.group(0)  # a valid pair
        self.marked += 1
        return m.group(1) + _NOT_UTF8_ESCAPE


def _safe_cut(chunk: bytes) -> int:
    """Where to end a chunk so that no escape, and no surrogate pair, is cut in two.

    Escapes are read as tokens from the start of a run of backslashes near the end (a
    backslash after a character that is not one always starts an escape): an unfinished
    escape at the end, or a high surrogate that its low one may follow, is held back.
    """
    window = max(0, len(chunk) - 2 * _LONGEST_ESCAPE)
    first = chunk.find(b"\\", window)
    if first < 0:
        return len(chunk)  # no escape can reach the end
    while first > 0 and chunk[first - 1] == 0x5C:  # back to the start of its run
        first -= 1
    pos = first
    last_start = -1
    last_high = False
    while pos < len(chunk):
        if chunk[pos] != 0x5C:
            pos += 1
            last_high = False
            continue
        start, end = pos, pos + (6 if chunk[pos + 1 : pos + 2] == b"u" else 2)
        if end > len(chunk):  # unfinished: hold it, and the high surrogate it may pair with
            return last_start if last_high else start
        last_high = bool(_HIGH.fullmatch(chunk[start:end]))
        last_start = start
        pos = end
    return last_start if last_high else len(chunk)


def find_mark(value: Any) -> str | None:
    """Why a parsed record is unusable when it holds a mark (its reason), else None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.isascii():
                continue
            for mark, reason in _REASONS.items():
                if mark in item:
                    return reason
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
