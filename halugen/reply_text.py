"""What a model's reply says once the parts no reader should weigh are taken out.

Steps every reader of judge replies may share (the recognition verdicts, the filter's
choice): ``visible_text`` drops invisible characters (a byte-order mark, zero-width
spaces, soft hyphens), folds compatibility forms (full-width letters and colons) and cuts
the reasoning a reasoning model writes before its answer (``<think>…</think>`` and the
like); ``json_object`` finds the JSON object a structured-output reply (or a model that
answers in JSON unasked) holds, ``json_value`` any JSON value; ``labelled_lines`` turns the
other shapes models put their answer in into ``Label: value`` lines: a LaTeX
``\\boxed{...}`` (as "Final answer: ..."), an XML-style ``<label>value</label>``, and a
markdown table whose header or first column names the label. ``without_marks`` drops emoji
and other pictographs (✅, ❌, ⚠️): decoration whose meaning differs from model to model,
so the words around them decide.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["json_object", "json_value", "labelled_lines", "visible_text", "without_marks"]

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


def json_value(text: str) -> dict[str, Any] | list[Any] | None:
    """The JSON object or array ``text`` consists of (a ```json fence around it is fine).

    Only a reply that is one value as a whole counts: an object quoted inside prose is
    the model talking about JSON, not answering in it.
    """
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    if (body[:1], body[-1:]) not in (("{", "}"), ("[", "]")):
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        # a Python-style dict ({'verdict': 'Yes'}) is what some models write for JSON
        try:
            value = ast.literal_eval(body)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict | list) else None


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` consists of, else None (``json_value``)."""
    value = json_value(text)
    return value if isinstance(value, dict) else None


# -- marks and shapes ----------------------------------------------------------------------

# Joiners and variation selectors that only shape an emoji.
_EMOJI_PARTS = frozenset("\ufe0e\ufe0f\u200d\u20e3")


def without_marks(text: str) -> str:
    """``text`` with pictographs (Unicode "other symbols": ✅ ❌ ⚠️ 🔴 ✔) replaced by spaces."""
    if text.isascii():
        return text
    return "".join(" " if c in _EMOJI_PARTS or unicodedata.category(c) == "So" else c for c in text)


# \boxed{...} with one level of nested braces (\boxed{\text{Yes}}).
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_LATEX_WRAP = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}"
)
_MATH_DELIMITERS = re.compile(r"\$\$?|\\[\[\]()]")
_ENDS_WITH_LABEL = re.compile(r"[^\W\d][^:\n]{0,40}:[\s*_`]*$")


def _boxed_lines(text: str) -> str:
    """Each line holding a ``\\boxed{X}``: "label: X" when the line is labelled already
    ("Final answer: $\\boxed{No}$"), else its prose, then a line "Final answer: X"."""
    if "\\boxed" not in text:
        return text
    out = []
    for line in text.splitlines():
        boxes = list(_BOXED.finditer(line))
        if not boxes:
            if _MATH_DELIMITERS.sub("", line).strip() or not line.strip():
                out.append(line)
            continue  # a line of only "$$" or "\\[" around a box
        value = boxes[-1].group(1)
        for _ in range(3):
            value = _LATEX_WRAP.sub(r"\1", value)
        value = " ".join(value.replace("\\", " ").split()) or "(empty)"
        before = _MATH_DELIMITERS.sub("", line[: boxes[0].start()]).rstrip()
        if _ENDS_WITH_LABEL.search(before):
            out.append(f"{before} {value}")
        else:
            if before.strip():
                out.append(before)
            out.append(f"Final answer: {value}")
    return "\n".join(out)


_TAG = re.compile(r"<([A-Za-z][\w -]{0,40})>\s*([^<>\n]{0,200}?)\s*</\1>", re.IGNORECASE)
_TABLE_ROW = re.compile(r"^\s*\|(.*)\|?\s*$")
_TABLE_RULE = re.compile(r"^[\s|:\-]+$")


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def _table_lines(rows: list[list[str]], is_label: Callable[[str], bool]) -> list[str]:
    """A table as label lines: by its header when one of the header cells is a label and
    one row follows it ("| Verdict |" over "| No |"), else by its first column when it has
    two ("| Verdict | No |"). Other tables say nothing a label line could."""
    header, body = rows[0], rows[1:]
    if len(body) == 1 and any(is_label(h) for h in header):
        return [f"{h}: {v}" for h, v in zip(header, body[0], strict=False) if h]
    if all(len(r) == 2 for r in rows):
        return [f"{k}: {v}" for k, v in body if k]
    return []


def _tables(text: str, is_label: Callable[[str], bool]) -> str:
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not (_TABLE_ROW.match(lines[i]) and lines[i].count("|") >= 2):
            out.append(lines[i])
            i += 1
            continue
        block = []
        while i < len(lines) and _TABLE_ROW.match(lines[i]) and lines[i].count("|") >= 2:
            block.append(lines[i])
            i += 1
        rows = [_cells(r) for r in block if not _TABLE_RULE.match(r)]
        if len(rows) >= 2 and any(_TABLE_RULE.match(r) for r in block[1:2]):
            out.extend(_table_lines(rows, is_label))
        else:
            out.extend(block)  # not a markdown table: left as written
    return "\n".join(out)


def labelled_lines(text: str, is_label: Callable[[str], bool]) -> str:
    """``text`` with its answer shapes written as ``Label: value`` lines.

    ``is_label`` tells a reader's labels from other words (a table's "Verdict" column
    from its "Claim" column, a ``<verdict>`` tag from ``<b>``). A ``\\boxed{X}`` becomes
    "Final answer: X" ("(empty)" when the box is); the rest of the text is kept.
    """
    text = _boxed_lines(text)
    text = _TAG.sub(
        lambda m: f"\n{m.group(1)}: {m.group(2)}\n" if is_label(m.group(1)) else m.group(0), text
    )
    if "|" in text:
        text = _tables(text, is_label)
    return text
