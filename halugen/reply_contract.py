"""The reply contract every judge prompt ends with, and the strict reader that holds it.

A judge (the recognition eval, the filter, the verify stage, a user's task) is asked for one
line, the last of its reply: ``Verdict: Yes`` / ``Verdict: No`` for a yes/no question, or
``Choice: 1`` ... ``Choice: n`` for "which of these". Where the endpoint has structured
outputs the same answer is asked as a JSON object whose one field is an enum
(``{"verdict": "Yes"}``, ``{"choice": 2}``); where logprobs are chosen, the token after the
label is scored.

The reader commits an answer only from that position:

- the last non-empty line of the visible reply is the contract line, exactly (the label,
  a colon, one allowed value; case, markdown emphasis around either part and one final
  ``.`` are ignored, being typography, not words);
- or the reply is a JSON object (fenced or not) holding the contract's field with an
  allowed value, and no other field whose name could carry a verdict (``_VERDICT_KEY``:
  ``{"verdict": "No", "hallucinated": true}`` says two things);
- or the whole reply is one allowed value ("Yes", "**No**", "2.").

Anything else is *unsure* (``None``): the reader never interprets prose, so a reply in a
style nobody foresaw can cost a re-ask (``Contract.reask``), never a verdict read backwards.
A reply whose earlier lines hold a contract line with another value is unsure too: it
committed to both sides. Which answer a value means (Yes = hallucinated, Yes = supported) is
the prompt's business, not the reader's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .reply_text import json_value, visible_text
from .structured_outputs import json_schema_format

__all__ = ["CHOICE_LABEL", "VERDICT", "VERDICT_LABEL", "Contract", "choice_contract"]

VERDICT_LABEL = "Verdict"
CHOICE_LABEL = "Choice"

# Typography that may wrap a label or a value without changing a word of it.
_EMPHASIS = "*_`"
# A JSON key beside the contract's field that could hold an answer of its own.
_VERDICT_KEY = re.compile(
    r"verdict|hallucinat|correct|faithful|support|judg|label|answer|result|decision"
    r"|conclusion|choice|pick|final|prediction|classification",
    re.IGNORECASE,
)
_LINE = re.compile(r"^\s*(?:[>#]+\s*)?(?P<label>[^:：]{1,40}?)\s*[:：]\s*(?P<value>.*?)\s*$")


def _bare(text: str) -> str:
    """``text`` without emphasis marks around it (``** **Yes**``), surrounding space and
    one final period."""
    text = _unwrapped(text)
    if text.endswith("."):
        text = _unwrapped(text[:-1])
    return text


def _unwrapped(text: str) -> str:
    while True:
        bare = text.strip().strip(_EMPHASIS).strip()
        if bare == text:
            return text
        text = bare


@dataclass(frozen=True, slots=True)
class Contract:
    """One reply contract: a label and the values it allows, matched without case."""

    label: str
    values: tuple[str, ...]

    @property
    def field(self) -> str:
        """The JSON field that carries the answer in a structured reply."""
        return self.label.lower()

    def line(self, value: str) -> str:
        """The contract line for ``value``, as a prompt shows it (``Verdict: Yes``)."""
        return f"{self.label}: {value}"

    def spelled(self) -> str:
        """Every allowed line, for a prompt: ``"Verdict: Yes" or "Verdict: No"``."""
        lines = [f'"{self.line(v)}"' for v in self.values]
        return lines[0] if len(lines) == 1 else ", ".join(lines[:-1]) + " or " + lines[-1]

    def schema(self) -> dict[str, Any]:
        """The JSON schema asked for where the endpoint has structured outputs."""
        if all(v.isdigit() for v in self.values):
            value: dict[str, Any] = {"type": "integer", "enum": [int(v) for v in self.values]}
        else:
            value = {"type": "string", "enum": list(self.values)}
        return {
            "type": "object",
            "properties": {self.field: value},
            "required": [self.field],
            "additionalProperties": False,
        }

    def response_format(
        self, name: str | None = None, *, reasoning: bool = False
    ) -> dict[str, Any]:
        """The OpenAI ``response_format`` asking for this contract as JSON (``structured_outputs``);
        ``reasoning``: a free ``reasoning`` field first, for a judge asked to think first (a
        model writes the properties in schema order)."""
        properties: dict[str, Any] = {"reasoning": {"type": "string"}} if reasoning else {}
        properties[self.field] = self.schema()["properties"][self.field]
        return json_schema_format(name or self.field, properties)

    def reask(self) -> str:
        """The short strict follow-up sent once when a reply could not be read."""
        return (
            f"Your reply did not end with the line the instructions ask for. Reply again with "
            f"exactly one line and nothing else: {self.spelled()}."
        )

    def value_of(self, word: str) -> str | None:
        """The allowed value ``word`` is (ignoring case and typography), else None."""
        bare = _bare(word).casefold()
        for value in self.values:
            if bare == value.casefold():
                return value
        return None

    def _line_value(self, line: str) -> tuple[bool, str | None]:
        """(is it this contract's line, the allowed value it holds or None)."""
        m = _LINE.match(line)
        if m is None or _bare(m["label"]).casefold() != self.label.casefold():
            return False, None
        return True, self.value_of(m["value"])

    def _from_json(self, obj: Mapping[str, Any]) -> str | None:
        keys = {str(k).casefold(): v for k, v in obj.items()}
        if self.field not in keys:
            return None
        if any(k != self.field and _VERDICT_KEY.search(k) for k in keys):
            return None  # a second answer beside the contract's: which one counts?
        raw = keys[self.field]
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            return None
        return self.value_of(str(raw))

    def read(self, text: str | None) -> str | None:
        """The allowed value the reply commits to by the contract, or None (unsure)."""
        visible = visible_text(text)
        if not visible:
            return None
        parsed = json_value(visible)
        if isinstance(parsed, list) and len(parsed) == 1:
            parsed = parsed[0]
        if isinstance(parsed, dict):
            return self._from_json(parsed)
        lines = [line for line in visible.splitlines() if line.strip()]
        if len(lines) == 1:
            whole = self.value_of(lines[0])
            if whole is not None:
                return whole
        is_line, value = self._line_value(lines[-1])
        if not is_line or value is None:
            return None
        for earlier in lines[:-1]:
            other_is_line, other = self._line_value(earlier)
            if other_is_line and other != value:
                return None
        return value


VERDICT = Contract(VERDICT_LABEL, ("Yes", "No"))


def choice_contract(n: int) -> Contract:
    """The contract for picking one of ``n`` numbered options (``Choice: 1`` ... ``n``)."""
    if n < 1:
        raise ValueError(f"a choice needs at least one option, not {n}")
    return Contract(CHOICE_LABEL, tuple(str(i) for i in range(1, n + 1)))
