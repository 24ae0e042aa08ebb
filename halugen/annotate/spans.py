"""Hallucinated spans: checking them against a response, storing and finding them.

A span is ``{"start", "end", "text", "kind"}`` with character offsets (Python code points)
into the response; ``kind`` is unverifiable / non-factual / irrelevant, or None for spans
imported without one (HaluEval's).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from .items import (
    KINDS,
    RecordProblem,
)

__all__ = ["Span", "canonical_spans", "check_spans", "load_spans", "locate_spans", "spans_json"]

Span = dict[str, Any]  # {"start", "end", "text", "kind"}


def _kind(value: Any) -> str | None:
    """A span kind in our spelling; ``RecordProblem`` for an unknown one."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RecordProblem(f"span kind {value!r} is not a string")
    key = value.strip().lower().replace("_", "-").replace(" ", "-")
    key = {"nonfactual": "non-factual"}.get(key, key)
    if key not in KINDS:
        raise RecordProblem(f"unknown span kind {value!r} (expected one of {', '.join(KINDS)})")
    return key


def _offset(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordProblem(f"span {name} {value!r} is not an integer")
    return value


def check_spans(raw: Any, response: str) -> tuple[Span, ...]:
    """Spans ``[{start, end, text?, kind?}]`` checked against ``response``, sorted.

    Offsets must satisfy 0 ≤ start < end ≤ len(response); a given ``text`` must equal
    ``response[start:end]``; ``kind`` must be one of ``KINDS`` or absent. Overlapping spans of
    one kind are merged; overlapping spans of different kinds are refused (as the web page
    refuses them).
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RecordProblem("spans is not a list")
    out = []
    for s in raw:
        if not isinstance(s, dict):
            raise RecordProblem("a span is not an object")
        start, end = _offset(s.get("start"), "start"), _offset(s.get("end"), "end")
        if not 0 <= start < end <= len(response):
            raise RecordProblem(
                f"span [{start}, {end}) is outside the response (length {len(response)})"
            )
        text = response[start:end]
        if s.get("text") is not None and s["text"] != text:
            raise RecordProblem(
                f"span [{start}, {end}) text {s['text']!r} does not match "
                f"the response there ({text!r})"
            )
        out.append({"start": start, "end": end, "text": text, "kind": _kind(s.get("kind"))})
    out.sort(key=lambda x: (x["start"], x["end"]))
    # overlapping spans of one kind are one span; of different kinds, a contradiction
    merged: list[Span] = []
    for span in out:
        last = merged[-1] if merged else None
        if last is not None and span["start"] < last["end"]:
            if span["kind"] != last["kind"]:
                raise RecordProblem(
                    f"spans [{last['start']}, {last['end']}) and [{span['start']}, "
                    f"{span['end']}) overlap with different kinds"
                )
            end = max(last["end"], span["end"])
            merged[-1] = {**last, "end": end, "text": response[last["start"] : end]}
        else:
            merged.append(span)
    return tuple(merged)


def canonical_spans(spans: Iterable[Span]) -> tuple[tuple[int, int, str | None], ...]:
    """The comparable core of spans (offsets and kind), sorted: equal marks, equal value."""
    return tuple(
        sorted(
            ((int(s["start"]), int(s["end"]), s.get("kind")) for s in spans),
            key=lambda t: (t[0], t[1], t[2] or ""),
        )
    )


def spans_json(spans: Iterable[Span]) -> str:
    """The stored form of spans: a JSON list of {start, end, text, kind}, sorted."""
    ordered = sorted(spans, key=lambda x: (x["start"], x["end"], x.get("kind") or ""))
    return orjson.dumps(
        [
            {"start": s["start"], "end": s["end"], "text": s["text"], "kind": s.get("kind")}
            for s in ordered
        ]
    ).decode()


def load_spans(text: str | None) -> list[Span]:
    """Spans from their stored JSON; anything unreadable counts as no spans."""
    try:
        value = orjson.loads(text or "[]")
    except orjson.JSONDecodeError:
        return []
    return [s for s in value if isinstance(s, dict)] if isinstance(value, list) else []


def locate_spans(texts: Sequence[str], response: str) -> tuple[list[Span], list[str]]:
    """Offsets of span texts in ``response``: (located spans, texts not found).

    Each text is looked up after the end of the previous one found, then from the start; a
    text not found whole is split at line breaks and each non-blank line looked up; when
    a line is missing the whole text counts as not found (its found lines are still kept).
    """
    found: list[Span] = []
    missing: list[str] = []
    cursor = 0

    def find(part: str) -> tuple[int, int] | None:
        nonlocal cursor
        at = response.find(part, cursor)
        if at < 0:
            at = response.find(part)
        if at < 0 or not part:
            return None
        cursor = at + len(part)
        return at, at + len(part)

    for text in texts:
        hit = find(text) if text.strip() else None
        if hit is not None:
            found.append({"start": hit[0], "end": hit[1], "text": text, "kind": None})
            continue
        lines = [ln.strip() for ln in text.split("\n") if ln.strip()] if "\n" in text else []
        whole = bool(lines)
        for line in lines:
            hit = find(line)
            if hit is None:
                whole = False
            else:
                found.append({"start": hit[0], "end": hit[1], "text": line, "kind": None})
        if not whole:
            missing.append(text)
    unique = {(s["start"], s["end"]): s for s in found}
    return sorted(unique.values(), key=lambda s: (s["start"], s["end"])), missing
