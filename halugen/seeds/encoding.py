"""The text encoding of a seed file, told from its first bytes, and UTF-8 for every reader.

Every reader parses UTF-8 bytes. A file that starts with a UTF-8 byte-order mark has it
dropped; a UTF-16 or UTF-32 file (by its byte-order mark, or UTF-16/32 without one when its
first characters are plain ASCII with the zero bytes those encodings give them) is decoded
and re-encoded as UTF-8 while it is read, in small chunks, so it streams like any other file.
Encodings Python cannot decode, named by their byte-order marks (UTF-7, UTF-1, UTF-EBCDIC,
SCSU, BOCU-1), are refused with a message naming the encoding.

Code units that do not decode (a lone UTF-16 surrogate, a cut final character) come out as
bytes that are not UTF-8, which each reader then reports as a bad record of its own, like
any other undecodable bytes: they are never replaced silently.
"""

from __future__ import annotations

import codecs
import io
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

from ..errors import InputError

__all__ = ["UTF8_BOM", "detect_encoding", "utf8_stream"]

UTF8_BOM = b"\xef\xbb\xbf"

# (byte-order mark, Python codec, name for messages); longer marks first (UTF-32 LE starts
# with UTF-16 LE's mark)
_READABLE = (
    (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32 LE"),
    (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32 BE"),
    (b"\xff\xfe", "utf-16-le", "UTF-16 LE"),
    (b"\xfe\xff", "utf-16-be", "UTF-16 BE"),
)
_REFUSED = (
    (b"\x2b\x2f\x76", "UTF-7"),
    (b"\xf7\x64\x4c", "UTF-1"),
    (b"\xdd\x73\x66\x73", "UTF-EBCDIC"),
    (b"\x0e\xfe\xff", "SCSU"),
    (b"\xfb\xee\x28", "BOCU-1"),
)
_HEAD = 4
_CHUNK = 64 * 1024
_UNDECODABLE = "halugen.undecodable"


def _undecodable(err: UnicodeError) -> tuple[str, int]:
    # A lone surrogate encodes (with surrogatepass) to bytes that are not UTF-8, so the
    # reader meets them as it meets any other undecodable bytes.
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return "\udcff", err.end


codecs.register_error(_UNDECODABLE, _undecodable)


def detect_encoding(head: bytes) -> tuple[str, str, int]:
    """``(codec, name, length of the byte-order mark)`` of a file starting with ``head``.

    ``codec`` is "utf-8" for UTF-8 (with or without a mark) and for anything unknown, which
    the readers then judge byte by byte. ``InputError`` for a mark of an encoding that
    cannot be read (its message names the encoding; the caller adds the file).
    """
    if head.startswith(UTF8_BOM):
        return "utf-8", "UTF-8 with a byte-order mark", len(UTF8_BOM)
    for mark, codec, name in _READABLE:
        if head.startswith(mark):
            return codec, f"{name} (byte-order mark)", len(mark)
    for mark, name in _REFUSED:
        if head.startswith(mark):
            raise InputError(f"is {name} text (by its byte-order mark)")
    if len(head) >= 4:
        # No mark, but the zero bytes of ASCII characters in UTF-32 / UTF-16 are plain.
        a, b, c, d = head[:4]
        if a and not b and not c and not d:
            return "utf-32-le", "UTF-32 LE", 0
        if not a and not b and not c and d:
            return "utf-32-be", "UTF-32 BE", 0
        if a and not b and c and not d:
            return "utf-16-le", "UTF-16 LE", 0
        if not a and b and not c and d:
            return "utf-16-be", "UTF-16 BE", 0
    return "utf-8", "UTF-8", 0


def utf8_stream(raw: BinaryIO, path: str) -> BinaryIO:
    """``raw`` positioned after any byte-order mark, as UTF-8 bytes.

    ``raw`` must be at its start and seekable (a plain or gzip file). Raises ``InputError``
    for an encoding that cannot be read, naming ``path`` and what to do.
    """
    head = raw.read(_HEAD)
    try:
        codec, name, skip = detect_encoding(head)
    except InputError as err:
        raise InputError(
            f"seed file {path} {err}; save it as UTF-8 (or UTF-16) and try again"
        ) from None
    raw.seek(skip)
    if codec == "utf-8":
        return raw
    return io.BufferedReader(_Transcoder(raw, codec, skip, name), _CHUNK)


class _Transcoder(io.RawIOBase):
    """Bytes of another Unicode encoding, read as UTF-8, chunk by chunk."""

    def __init__(self, raw: BinaryIO, codec: str, start: int, name: str) -> None:
        self._raw = raw
        self._codec = codec
        self._start = start  # where the text starts in ``raw`` (after the mark)
        self.encoding = name
        self._restart()

    def _restart(self) -> None:
        self._raw.seek(self._start)
        self._decoder = codecs.getincrementaldecoder(self._codec)(errors=_UNDECODABLE)
        self._pending = b""
        self._pos = 0  # UTF-8 bytes handed out so far
        self._eof = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        # Readers only rewind to where they were (e.g. after a look at the first record):
        # start over and skip forward, which stays exact without an index of the file.
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end of a transcoded file")
        if offset < self._pos:
            self._restart()
        while self._pos < offset:
            skipped = self.read(min(_CHUNK, offset - self._pos))
            if not skipped:
                break
        return self._pos

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        want = len(view)
        while len(self._pending) < want and not self._eof:
            data = self._raw.read(_CHUNK)
            final = not data
            text = self._decoder.decode(data, final)
            self._pending += text.encode("utf-8", "surrogatepass")
            self._eof = final
        n = min(want, len(self._pending))
        view[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        self._pos += n
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()
