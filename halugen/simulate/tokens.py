"""The simulator's own "tokenizer": a byte-length rule, cheap enough for thousands of calls/s.

English text averages about four UTF-8 bytes per BPE token, so ``ceil(bytes / 4)`` lands
close to tiktoken's counts for prose without paying for a real tokenizer on every request.
The chat framing overhead follows OpenAI's published figures (see ``halugen.prompts``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..prompts import PER_MESSAGE_TOKENS, PER_REQUEST_TOKENS

__all__ = ["BYTES_PER_TOKEN", "count_prompt", "count_text", "truncate_to_tokens"]

BYTES_PER_TOKEN = 4


def count_text(text: str) -> int:
    """Tokens of a piece of text: ceil(utf-8 bytes / 4)."""
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def count_prompt(contents: Iterable[str]) -> int:
    """Prompt tokens of a request whose messages have these contents."""
    total = PER_REQUEST_TOKENS
    for content in contents:
        total += PER_MESSAGE_TOKENS + count_text(content)
    return total


def truncate_to_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_tokens`` by the byte rule; returns (text, was_cut)."""
    data = text.encode("utf-8")
    limit = max_tokens * BYTES_PER_TOKEN
    if len(data) <= limit:
        return text, False
    # errors="ignore" drops a multi-byte character split by the cut instead of mangling it
    return data[:limit].decode("utf-8", errors="ignore"), True
