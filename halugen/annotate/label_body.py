"""What a label submitted from the page must look like, and its reading (``parse_label``):
a yes/no verdict, spans with offsets inside the response and a known kind, an optional note."""

from __future__ import annotations

import itertools
from typing import Any

from .items import KINDS, LABELS

__all__ = ["MAX_NOTE", "MAX_SPANS", "LabelError", "parse_label"]

MAX_SPANS = 500
MAX_NOTE = 4000


class LabelError(ValueError):
    """A label body that cannot be stored; the message is shown to the annotator."""


def _offset(value: object, what: str) -> int:
    if type(value) is not int:  # bool is an int subclass: refuse it too
        raise LabelError(f"span {what} must be an integer")
    return value


def parse_label(body: object, response: str) -> tuple[str, list[dict[str, Any]], str | None]:
    """Check a POST /api/label body against the stored response.

    Returns (label, spans sorted by start with ``text`` cut from the response, note).
    Offsets count Unicode code points of the stored response (Python string indices).
    """
    if not isinstance(body, dict):
        raise LabelError("body must be a JSON object")
    label = body.get("label")
    if label not in LABELS:
        raise LabelError("label must be 'yes' or 'no'")
    raw_spans = body.get("spans", [])
    if not isinstance(raw_spans, list):
        raise LabelError("spans must be a list")
    if len(raw_spans) > MAX_SPANS:
        raise LabelError(f"at most {MAX_SPANS} spans")
    spans: list[dict[str, Any]] = []
    for s in raw_spans:
        if not isinstance(s, dict):
            raise LabelError("each span must be an object {start, end, kind}")
        start, end = _offset(s.get("start"), "start"), _offset(s.get("end"), "end")
        if not 0 <= start < end <= len(response):
            raise LabelError(
                f"span [{start}, {end}) is outside the response (0..{len(response)}) or empty"
            )
        kind = s.get("kind")
        if kind not in KINDS:
            raise LabelError(f"span kind must be one of {', '.join(KINDS)}")
        spans.append({"start": start, "end": end, "text": response[start:end], "kind": kind})
    spans.sort(key=lambda s: (s["start"], s["end"]))
    for a, b in itertools.pairwise(spans):
        if b["start"] < a["end"]:
            raise LabelError(
                f"spans [{a['start']}, {a['end']}) and [{b['start']}, {b['end']}) overlap"
            )
    if label == "no" and spans:
        raise LabelError("a response marked not hallucinated cannot have hallucinated spans")
    note = body.get("note")
    if note is not None and not isinstance(note, str):
        raise LabelError("note must be a string")
    if note is not None and len(note) > MAX_NOTE:
        raise LabelError(f"note longer than {MAX_NOTE} characters")
    return label, spans, (note or None)
