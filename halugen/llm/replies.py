"""What a model's reply says once the parts no reader should weigh are taken out.

Two steps every reader of judge replies shares (the recognition verdicts, the filter's
choice): ``visible_text`` drops invisible characters (a byte-order mark, zero-width
spaces, soft hyphens), folds compatibility forms (full-width letters and colons) and cuts
the reasoning a reasoning model writes before its answer (``<think>…</think>`` and the
like); ``json_object`` finds the JSON object a structured-output reply (or a model that
answers in JSON unasked) holds.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from typing import Any

import orjson

__all__ = ["json_object", "visible_text"]

# Characters that render as nothing but break word matching: BOM, zero-width space /
# joiners, word joiner, soft hyphen, left-to-right and right-to-left marks.
_INVISIBLE = dict.fromkeys(map(ord, "\ufeff\u200b\u200c\u200d\u2060\u00ad\u200e\u200f"))

# Reasoning blocks of the reasoning models we know of: DeepSeek-R1 / Qwen3 / QwQ
# (<think>), others (<thinking>, <reasoning>, <reflection>), Mistral's [THINK], and the
# OpenThoughts/Sky-T1 markers. Matched non-greedily so text between two blocks stays.
_BLOCKS = (
    (r"<think>", r"</think>"),
    (r"<thinking>", r"</thinking>"),
    (r"<thought>", r"</thought>"),
    (r"<reasoning>", r"</reasoning>"),
    (r"<reflection>", r"</reflection>"),
    (r"\[THINK\]", r"\[/THINK\]"),
    (r"<\|begin_of_thought\|>", r"<\|end_of_thought\|>"),
)
_BLOCK = re.compile(
    "|".join(f"{o}.*?{c}" for o, c in _BLOCKS),
    re.IGNORECASE | re.DOTALL,
)
# A closing tag with no opening one: some servers strip the opening tag from the content.
_ORPHAN_CLOSE = re.compile("|".join(c for _, c in _BLOCKS), re.IGNORECASE)
# An opening tag never closed: the reply ran out while reasoning; nothing after it counts.
_UNCLOSED_OPEN = re.compile("|".join(o for o, _ in _BLOCKS), re.IGNORECASE)
# Wrappers of the final answer that carry no meaning themselves.
_SOLUTION_TAGS = re.compile(
    r"<\|(?:begin|end)_of_solution\|>|</?(?:answer|output|final|response)>", re.IGNORECASE
)
# gpt-oss "harmony" text when a server passes the channels through: the final channel.
_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\s*<\|message\|>", re.IGNORECASE)
_HARMONY_TOKEN = re.compile(r"<\|[a-z_]+\|>", re.IGNORECASE)

_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def visible_text(text: str | None) -> str:
    """``text`` without invisible characters and reasoning blocks, NFKC-folded, stripped.

    A reply that is all reasoning (an opening tag never closed) has no visible answer and
    gives "". Only the structure is removed: words are never changed.
    """
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text.translate(_INVISIBLE))
    final = list(_HARMONY_FINAL.finditer(text))
    if final:
        text = _HARMONY_TOKEN.sub(" ", text[final[-1].end() :])
    text = _BLOCK.sub("\n", text)
    closes = list(_ORPHAN_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opening = _UNCLOSED_OPEN.search(text)
    if opening:
        text = text[: opening.start()]
    text = _SOLUTION_TAGS.sub("\n", text)
    return text.strip()


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` consists of (a ```json fence around it is fine), else None.

    Only a reply that is one object as a whole counts: an object quoted inside prose is
    the model talking about JSON, not answering in it.
    """
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        # a Python-style dict ({'verdict': 'Yes'}) is what some models write for JSON
        try:
            value = ast.literal_eval(body)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) else None
