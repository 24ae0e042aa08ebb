"""How much one record may hold, checked while a seed file is read: bad input costs only itself.

A record nested deeper than ``MAX_DEPTH`` arrays or objects, or a text longer than
``MAX_TEXT_BYTES``, is refused before a parser builds it: ijson builds the path of every
value it meets, so 50,000 nested arrays in a 128 KB file cost it quadratic time and memory
(22 s and 6 GB), and a multi-gigabyte string is held whole. No real seed nests that deep
(HotpotQA's context, the deepest, is four levels) or holds a text that long (a CNN/DailyMail
article is a few KB; a 50 MB document is still read, and cut to fit when it is sent).

``NestingGuard`` watches the bytes of a JSON array on their way to ijson and ends the stream
where the first such record starts; the reader then says which record it was
(``message``) after yielding the ones before it. JSON lines are split here too
(``split_lines``): every line ending (``\\n``, ``\\r\\n`` and a lone ``\\r``, as old Mac
files have) ends a line, and a line longer than ``MAX_LINE_BYTES`` is skipped without being
held. A line is checked by ``line_problem`` before orjson reads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO, Protocol

__all__ = [
    "LONG_LINE",
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "MAX_TEXT_BYTES",
    "NestingGuard",
    "line_problem",
    "split_lines",
    "too_long",
]

MAX_DEPTH = 64  # arrays or objects inside one record
# one text (a JSON string, a CSV cell): above a 50 MB document, which is cut to fit the
# context window and served (tests/e2e/test_huge_field.py), far below what exhausts memory
MAX_TEXT_BYTES = 64 * 2**20
MAX_LINE_BYTES = 128 * 2**20  # one JSON line
_CHUNK = 64 * 1024
LONG_LINE = f"line longer than {MAX_LINE_BYTES // 2**20} MB: more than halugen reads in one record"

_STRUCTURE = re.compile(rb'[\[\]{}"]')
_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # a backslash and the character it escapes
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
# the rest of a string's body from here: stops at its closing quote, or at a backslash that
# ends the chunk (its escaped character comes with the next one)
_STRING_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
_OPENERS = (0x5B, 0x7B)  # [ {
_QUOTE = 0x22
_BACKSLASH = 0x5C
_LINE_END = re.compile(rb"\r\n|\r|\n")


def too_long(size: int, limit: int) -> str:
    """The reason for a text or line over ``limit`` bytes."""
    return f"longer than halugen reads ({size / 2**20:.1f} MB; at most {limit // 2**20} MB)"


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class NestingGuard:
    """A JSON array's bytes, read through, ending where a record breaks the limits.

    ``problem`` says why (None while every record is within them); the reader knows which
    record it was: the one after those it got.
    """

    def __init__(self, raw: _Readable) -> None:
        self._raw = raw
        self._depth = 0  # the array itself is 1
        self._in_string = False
        self._escaped = False  # a backslash ended the last chunk inside a string
        self._string_bytes = 0
        self._ended = False
        self.problem: str | None = None

    def read(self, size: int = -1) -> bytes:
        if self._ended:
            return b""
        data = self._raw.read(size)
        cut = self._scan(data)
        if cut < len(data):
            self._ended = True
            return data[:cut]
        return data

    def message(self, path: str, record: int) -> str:
        """The one line that refuses the file at ``record`` (1-based), which broke a limit."""
        before = record - 1
        read = f"the {before} record(s) before it were read" if before else "no record was read"
        return f"{path}: record {record} {self.problem}; remove it or fix the file ({read})"

    def _scan(self, data: bytes) -> int:
        """Where ``data`` must end (``len(data)`` when nothing breaks a limit).

        The fast way, at the speed of bytes methods: escapes are cut out, quotes and
        brackets kept, split at the quotes (strings are every other piece) and the brackets
        outside strings counted; a chunk where a limit is broken is walked again byte by
        byte from the state it started in, to find where."""
        state, original = self._state(), data
        if self._escaped and data:
            self._escaped = False
            self._string_bytes += 1
            data = data[1:]  # the character the last chunk's backslash escapes
        if b"\\" in data:  # JSON has escapes only inside strings: cut them out
            data = _ESCAPE.sub(b"", data)
            if data.endswith(b"\\"):  # a backslash whose character is in the next chunk
                data = data[:-1]
                self._escaped = True
        if len(data) > MAX_TEXT_BYTES:  # a whole text could fit in it: measure each
            return self._exactly(state, original)
        inside = self._in_string
        if inside:  # the string open since an earlier chunk: its length so far
            close = data.find(b'"')
            self._string_bytes += len(data) if close < 0 else close
            if self._string_bytes > MAX_TEXT_BYTES:
                return self._exactly(state, original)
        # quotes and brackets alone; strings are every other piece between quotes
        pieces = data.translate(None, _NOT_STRUCTURE).split(b'"')
        outside = b"".join(pieces[1::2] if inside else pieces[0::2])
        self._in_string = inside ^ (len(pieces) % 2 == 0)
        if self._in_string and len(pieces) > 1:  # a string opened here goes on
            self._string_bytes = len(data) - data.rfind(b'"') - 1
        opens = outside.count(b"[") + outside.count(b"{")
        if self._depth + opens > MAX_DEPTH + 1:  # it may go too deep: walk the brackets
            depth = self._depth
            for char in outside:
                depth += 1 if char in _OPENERS else -1
                if depth > MAX_DEPTH + 1:
                    return self._exactly(state, original)
        self._depth += opens - (len(outside) - opens)
        return len(original)

    def _state(self) -> tuple[int, bool, bool, int]:
        return self._depth, self._in_string, self._escaped, self._string_bytes

    def _exactly(self, state: tuple[int, bool, bool, int], data: bytes) -> int:
        self._depth, self._in_string, self._escaped, self._string_bytes = state
        return self._scan_exact(data)

    def _scan_exact(self, data: bytes) -> int:
        """Where ``data`` must end (``len(data)`` when nothing breaks a limit), found byte
        by byte: the slow way, only for a chunk where ``_scan`` saw a limit broken."""
        pos, end = 0, len(data)
        if self._escaped and end:
            self._escaped = False
            pos = 1  # the character the last chunk's backslash escapes
            self._string_bytes += 1
        while pos < end:
            if self._in_string:
                stop = _STRING_BODY.match(data, pos).end()  # type: ignore[union-attr]
                self._string_bytes += stop - pos
                if self._string_bytes > MAX_TEXT_BYTES:
                    self.problem = "holds a text " + too_long(self._string_bytes, MAX_TEXT_BYTES)
                    return pos
                if stop >= end:
                    return end  # the string goes on in the next chunk
                if data[stop] == _BACKSLASH:  # the last byte: an escape cut in two
                    self._escaped = True
                    self._string_bytes += 1
                    return end
                self._in_string = False
                pos = stop + 1
                continue
            found = _STRUCTURE.search(data, pos)
            if found is None:
                return end
            at = found.start()
            char = data[at]
            pos = at + 1
            if char == _QUOTE:
                self._in_string = True
                self._string_bytes = 0
            elif char in _OPENERS:
                self._depth += 1
                if self._depth > MAX_DEPTH + 1:
                    self.problem = f"is nested deeper than {MAX_DEPTH} arrays or objects"
                    return at
            else:
                self._depth -= 1
        return end


def line_problem(line: bytes) -> str | None:
    """Why one JSON line is refused (nested too deep, a text too long), or None; at the
    speed of ``bytes.count`` for a line that cannot be too deep."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH and len(line) <= MAX_TEXT_BYTES:
        return None
    guard = NestingGuard(_NOTHING)
    guard._depth = 1  # as if in an array: the line is one element
    guard._scan(line)
    return guard.problem


class _Nothing:
    def read(self, size: int = -1, /) -> bytes:
        return b""


_NOTHING = _Nothing()


def split_lines(f: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, line)`` for each line of ``f``, whatever its line endings; ``None``
    for a line longer than ``MAX_LINE_BYTES`` (skipped as it is read, never held)."""
    line_no = 0
    buffer = bytearray()
    scanned = 0  # the buffer up to here holds no line ending
    too_big = False  # inside a line that is over the limit: its bytes are dropped
    while chunk := f.read(_CHUNK):
        buffer += chunk
        start = 0
        while True:
            found = _LINE_END.search(buffer, max(start, scanned))
            # a "\r" that ends the buffer may be the first half of "\r\n": wait for more
            if found is None or (found.group() == b"\r" and found.end() == len(buffer)):
                break
            line_no += 1
            yield line_no, None if too_big else bytes(buffer[start : found.start()])
            too_big = False
            start = found.end()
        del buffer[:start]
        scanned = max(0, len(buffer) - 1)  # a "\r" at the end is looked at again
        if len(buffer) > MAX_LINE_BYTES:
            too_big = True
            del buffer[: len(buffer) - 1]
            if buffer != b"\r":
                buffer.clear()
            scanned = 0
    if buffer or too_big:
        line_no += 1
        yield line_no, None if too_big else bytes(buffer).rstrip(b"\r")
