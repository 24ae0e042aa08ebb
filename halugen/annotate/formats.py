"""Annotations in and out of the store, in the formats annotation teams use.

**Label Studio JSON** (``export_labelstudio`` / ``import_labelstudio``): a JSON array of tasks,
the shape Label Studio exports and imports. Each task holds ``data`` (``item_id``, ``query``,
``response``) and one entry per annotator under ``annotations``, whose ``result`` has

- a ``choices`` result ``hallucinated`` → ``response`` with ``Yes`` or ``No``;
- one ``labels`` result ``spans`` → ``response`` per span: character offsets ``start``/``end``
  into the response, its ``text``, and one of ``Unverifiable`` / ``Non-factual`` /
  ``Irrelevant`` (an empty list for a span without a kind, as HaluEval's);
- a ``textarea`` result ``note`` when the annotator left a note.

``LABELSTUDIO_CONFIG`` is the matching labelling interface to paste into a project.
Annotators: Label Studio's importer resolves ``completed_by: {"email": ...}`` to a project
member and rejects an unknown email, so an annotator whose name is an email address is written
that way; every annotation also carries ``halugen_annotator`` (ignored by Label Studio), which
is what an import reads first. Otherwise the importer takes ``completed_by``'s email, else
``labelstudio-user-<id>``, else ``labelstudio``. Offsets are read as code points; an exported
region whose text only matches under JavaScript's UTF-16 offsets (older Label Studio versions,
text with emoji) is converted. An annotation without a Yes/No choice but with spans counts as
"yes" (the spans mark hallucinations); with neither it is skipped. Cancelled annotations
(``was_cancelled``) are skipped. Tasks without ``data.item_id`` become ``labelstudio:<id>``.

**JSON lines** (``export_jsonl`` / ``import_jsonl``): one annotation per line,
``{item_id, annotator, label, spans: [{start, end, text, kind}], note?, query, response}``
with character offsets into the response. ``query``/``response`` make the file self-contained:
an import creates items it does not know from them (a line for an unknown item without them
is skipped).

**HaluEval general** (``import_halueval_general`` / ``export_halueval_general``): HaluEval's
``general_data.json``, JSON lines of ``ID, user_query, chatgpt_response, hallucination,
hallucination_spans`` (another release has ``hallucination_label`` and no spans). Imported
as already-annotated data: item ``halueval:<ID>`` and one annotation by ``halueval`` (source
``halueval``), which resolution takes as a ``single`` label. Spans are texts there, not
offsets: each is looked up in the response (from the end of the previous one, then from the
start); one not found whole is split at line breaks and each line looked up (HaluEval joins
separate passages with newlines). Texts that are not found (HaluEval also writes remarks such
as "Incomplete answer") keep no offsets: the item's ``meta_json`` keeps them under
``unlocated_spans``, next to the released list under ``hallucination_spans``. The export
writes every resolved item; while the resolution still equals HaluEval's own annotation it
writes the released span list verbatim, otherwise the texts of the resolved spans ("no" items
get none). ``ID`` is HaluEval's for its items and the item id for the others.

Annotations keep the web page's rules: a "no" with spans is skipped, overlapping spans of
one kind are merged and of different kinds make the annotation skipped.

Every importer is idempotent (an item id already present is not added again, an annotation
equal in item, annotator, label and spans to any stored one is not added again) and skips bad
records, reporting them in the optional ``skipped`` list; a file with no usable record raises
``InputError`` naming the first problem with file:line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..store.db import Store
from .items import (
    KINDS,
    LABELS,
    BadJSON,
    Item,
    RecordProblem,
    Skip,
    append_rows,
    insert_items,
    jsonl_item_id,
    parse_halueval_general,
    read_records,
    require_usable,
    text_of,
)

__all__ = [
    "LABELSTUDIO_CONFIG",
    "Annotation",
    "canonical_spans",
    "check_spans",
    "export_halueval_general",
    "export_jsonl",
    "export_labelstudio",
    "import_halueval_general",
    "import_jsonl",
    "import_labelstudio",
    "insert_annotations",
    "load_spans",
    "locate_spans",
    "spans_json",
]

LABELSTUDIO_CONFIG = """<View>
  <Header value="User query"/>
  <Text name="query" value="$query"/>
  <Header value="Response"/>
  <Text name="response" value="$response"/>
  <Choices name="hallucinated" toName="response" choice="single" showInLine="true"
           required="true">
    <Choice value="Yes"/>
    <Choice value="No"/>
  </Choices>
  <Labels name="spans" toName="response">
    <Label value="Unverifiable"/>
    <Label value="Non-factual"/>
    <Label value="Irrelevant"/>
  </Labels>
  <TextArea name="note" toName="response" rows="2"/>
</View>
"""

_LS_KIND = {"unverifiable": "Unverifiable", "non-factual": "Non-factual",
            "irrelevant": "Irrelevant"}
_LS_CHOICE = {"yes": "Yes", "no": "No"}

Span = dict[str, Any]  # {"start", "end", "text", "kind"}


@dataclass(frozen=True)
class Annotation:
    item_id: str
    annotator: str
    label: str  # yes | no
    spans: tuple[Span, ...]  # checked against the item's response, sorted
    note: str | None = None
    source: str = "import"  # web | import | halueval

    def __post_init__(self) -> None:
        # the web page refuses this contradiction too; keep the store free of it
        if self.label == "no" and self.spans:
            raise RecordProblem("label 'no' with hallucinated spans")


# -- spans ---------------------------------------------------------------------------------
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
            raise RecordProblem(f"span [{start}, {end}) text {s['text']!r} does not match "
                                f"the response there ({text!r})")
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
                    f"{span['end']}) overlap with different kinds")
            end = max(last["end"], span["end"])
            merged[-1] = {**last, "end": end, "text": response[last["start"]:end]}
        else:
            merged.append(span)
    return tuple(merged)


def canonical_spans(spans: Iterable[Span]) -> tuple[tuple[int, int, str | None], ...]:
    """The comparable core of spans (offsets and kind), sorted: equal marks, equal value."""
    return tuple(sorted(
        ((int(s["start"]), int(s["end"]), s.get("kind")) for s in spans),
        key=lambda t: (t[0], t[1], t[2] or ""),
    ))


def spans_json(spans: Iterable[Span]) -> str:
    """The stored form of spans: a JSON list of {start, end, text, kind}, sorted."""
    ordered = sorted(spans, key=lambda x: (x["start"], x["end"], x.get("kind") or ""))
    return orjson.dumps([{"start": s["start"], "end": s["end"], "text": s["text"],
                          "kind": s.get("kind")} for s in ordered]).decode()


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


# -- writing annotations -------------------------------------------------------------------
def insert_annotations(store: Store, annotations: Iterable[tuple[str, Annotation]],
                       skipped: list[Skip] | None = None) -> int:
    """Append the annotations not stored yet; ``(where, annotation)`` pairs; returns added.

    An annotation of an unknown item is skipped and reported. One equal in (item,
    annotator, label, spans) to any stored row, or to an earlier one of this call, is
    skipped silently: importing the same file twice adds nothing.
    """
    items = {r[0] for r in store.query("SELECT DISTINCT item_id FROM annotation_items")}
    seen = {
        (item_id, annotator, label, canonical_spans(load_spans(sj)))
        for item_id, annotator, label, sj in store.query(
            "SELECT item_id, annotator, label, spans_json FROM annotations")
    }
    rows = []
    for where, a in annotations:
        if a.item_id not in items:
            if skipped is not None:
                skipped.append(Skip(where, f"unknown item {a.item_id}"))
            continue
        key = (a.item_id, a.annotator, a.label, canonical_spans(a.spans))
        if key in seen:
            continue
        seen.add(key)
        rows.append((a.item_id, a.annotator, a.label, spans_json(a.spans), a.note, a.source))
    append_rows(store, "annotations", rows)
    return len(rows)


def _responses(store: Store, ids: Iterable[str]) -> dict[str, str]:
    """The stored response of each item (the first row of an id wins, as on insert)."""
    wanted = set(ids)
    return {
        item_id: response
        for item_id, response in store.query(
            "SELECT item_id, response FROM annotation_items "
            "QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1")
        if item_id in wanted
    }


def _keep_matching(store: Store, pending: list[tuple[str, Annotation, str]],
                   skipped: list[Skip]) -> list[tuple[str, Annotation]]:
    """Annotations whose offsets were checked against the same response the store holds."""
    stored = _responses(store, (a.item_id for _, a, _ in pending))
    out = []
    for where, a, response in pending:
        if a.item_id in stored and stored[a.item_id] != response:
            skipped.append(Skip(where, f"item {a.item_id} is stored with a different "
                                       f"response; its offsets would not fit"))
            continue
        out.append((where, a))
    return out


# -- Label Studio --------------------------------------------------------------------------
def _latest(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Latest annotation per (item, annotator), grouped by item, oldest first."""
    by_item: dict[str, list[tuple[Any, ...]]] = {}
    for row in store.query(
        "SELECT item_id, annotator, label, spans_json, note FROM annotations_latest "
        "ORDER BY item_id, created_at, annotator"
    ):
        by_item.setdefault(row[0], []).append(row)
    return by_item


def _items(store: Store) -> list[tuple[Any, ...]]:
    return store.query(
        "SELECT item_id, query, response, meta_json FROM annotation_items "
        "QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1 "
        "ORDER BY created_at, item_id"
    )


def export_labelstudio(store: Store, path: str | os.PathLike[str]) -> int:
    """Write every item as a Label Studio task with its latest annotations; returns tasks."""
    latest = _latest(store)
    tasks = []
    ann_id = 0
    for task_id, (item_id, query, response, _meta) in enumerate(_items(store), 1):
        annotations = []
        for _, annotator, label, sj, note in latest.get(item_id, []):
            ann_id += 1
            result: list[dict[str, Any]] = [{
                "id": f"h{ann_id}", "from_name": "hallucinated", "to_name": "response",
                "type": "choices",
                "value": {"choices": [_LS_CHOICE.get(label, label)]},
            }]
            for k, s in enumerate(load_spans(sj), 1):
                kind = s.get("kind")
                result.append({
                    "id": f"s{ann_id}-{k}", "from_name": "spans", "to_name": "response",
                    "type": "labels",
                    "value": {"start": s["start"], "end": s["end"], "text": s["text"],
                              "labels": [_LS_KIND.get(kind, kind)] if kind else []},
                })
            if note:
                result.append({"id": f"n{ann_id}", "from_name": "note", "to_name": "response",
                               "type": "textarea", "value": {"text": [note]}})
            entry: dict[str, Any] = {"id": ann_id, "result": result, "was_cancelled": False,
                                     "ground_truth": False, "halugen_annotator": annotator}
            if "@" in annotator:
                entry["completed_by"] = {"email": annotator}
            annotations.append(entry)
        tasks.append({"id": task_id,
                      "data": {"item_id": item_id, "query": query, "response": response},
                      "annotations": annotations})
    Path(path).write_bytes(orjson.dumps(tasks, option=orjson.OPT_INDENT_2))
    return len(tasks)


def _from_utf16(text: str, offset: int) -> int | None:
    """The code-point index of a UTF-16 code-unit offset into ``text`` (None: inside a pair)."""
    units = 0
    for i, ch in enumerate(text):
        if units == offset:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > offset:
            return None
    return len(text) if units == offset else None


def _ls_span(value: dict[str, Any], response: str) -> Span:
    start, end = _offset(value.get("start"), "start"), _offset(value.get("end"), "end")
    text = value.get("text")
    if isinstance(text, str) and response[start:end] != text:
        s16, e16 = _from_utf16(response, start), _from_utf16(response, end)
        if s16 is not None and e16 is not None and response[s16:e16] == text:
            start, end = s16, e16
    labels = value.get("labels") or []
    if not isinstance(labels, list):
        raise RecordProblem("span labels is not a list")
    kinds = {_kind(x) for x in labels} - {None}
    if len(kinds) > 1:
        raise RecordProblem(f"span [{start}, {end}) has several kinds {sorted(kinds)}")
    return {"start": start, "end": end, "text": text, "kind": next(iter(kinds), None)}


def _ls_annotator(ann: dict[str, Any]) -> str:
    name = ann.get("halugen_annotator")
    if isinstance(name, str) and name.strip():
        return name.strip()
    by = ann.get("completed_by")
    if isinstance(by, dict):
        if isinstance(by.get("email"), str) and by["email"].strip():
            return by["email"].strip()
        by = by.get("id")
    if isinstance(by, int) and not isinstance(by, bool):
        return f"labelstudio-user-{by}"
    if isinstance(by, str) and by.strip():
        return by.strip()
    return "labelstudio"


def _ls_annotation(ann: Any, item_id: str, response: str) -> Annotation:
    if not isinstance(ann, dict):
        raise RecordProblem("annotation is not an object")
    if ann.get("was_cancelled"):
        raise RecordProblem("annotation was cancelled")
    results = ann.get("result") or []
    if not isinstance(results, list):
        raise RecordProblem("annotation result is not a list")
    choices, spans, notes = [], [], []
    for r in results:
        if not isinstance(r, dict) or not isinstance(r.get("value"), dict):
            raise RecordProblem("a result has no value object")
        kind, value = r.get("type"), r["value"]
        if kind == "choices":
            choices.append((r.get("from_name") == "hallucinated", value.get("choices") or []))
        elif kind == "labels":
            spans.append(_ls_span(value, response))
        elif kind == "textarea":
            texts = value.get("text") or []
            notes.extend(t for t in (texts if isinstance(texts, list) else [texts])
                         if isinstance(t, str) and t.strip())
    # our "hallucinated" choice first, then any other choice
    choices.sort(key=lambda c: not c[0])
    label = None
    if choices:
        picked = choices[0][1]
        if not isinstance(picked, list) or len(picked) != 1 or not isinstance(picked[0], str):
            raise RecordProblem(f"choice {picked!r} is not one Yes/No")
        label = picked[0].strip().lower()
        if label not in LABELS:
            raise RecordProblem(f"unknown choice {picked[0]!r} (expected Yes or No)")
    elif spans:
        label = "yes"
    else:
        raise RecordProblem("no Yes/No choice and no spans")
    return Annotation(item_id, _ls_annotator(ann), label, check_spans(spans, response),
                      "\n".join(notes) or None, "import")


def import_labelstudio(store: Store, path: str | os.PathLike[str],
                       skipped: list[Skip] | None = None) -> tuple[int, int]:
    """Tasks and annotations of a Label Studio JSON export; returns (items, annotations) added."""
    problems: list[Skip] = []
    items: list[Item] = []
    pending: list[tuple[str, Annotation, str]] = []
    for pos, task in read_records(path):
        where = f"{os.fspath(path)}:{pos}"
        try:
            if isinstance(task, BadJSON):
                raise RecordProblem(task.reason)
            if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
                raise RecordProblem("not a Label Studio task (no data object)")
            data = task["data"]
            item_id = data.get("item_id")
            if not (isinstance(item_id, str) and item_id.strip()):
                if task.get("id") is None:
                    raise RecordProblem("task has neither data.item_id nor id")
                item_id = f"labelstudio:{task['id']}"
            response = text_of(data, "response" if "response" in data else "text")
            query = text_of(data, "query", required=False)
            anns = task.get("annotations", task.get("completions")) or []
            if not isinstance(anns, list):
                raise RecordProblem("annotations is not a list")
        except RecordProblem as err:
            problems.append(Skip(where, str(err)))
            continue
        items.append(Item(item_id, "labelstudio", query, response,
                          meta={"labelstudio_id": task.get("id")}))
        for k, ann in enumerate(anns, 1):
            try:
                pending.append((f"{where} annotation {k}",
                                _ls_annotation(ann, item_id, response), response))
            except RecordProblem as err:
                problems.append(Skip(f"{where} annotation {k}", str(err)))
    require_usable(path, len(items), problems, "Label Studio JSON")
    added_items = insert_items(store, items, problems)
    added = insert_annotations(store, _keep_matching(store, pending, problems), problems)
    if skipped is not None:
        skipped.extend(problems)
    return added_items, added


# -- JSON lines ----------------------------------------------------------------------------
def export_jsonl(store: Store, path: str | os.PathLike[str]) -> int:
    """One line per latest annotation (per item and annotator); returns lines written."""
    latest = _latest(store)
    n = 0
    with open(path, "wb") as f:
        for item_id, query, response, _meta in _items(store):
            for _, annotator, label, sj, note in latest.get(item_id, []):
                line: dict[str, Any] = {
                    "item_id": item_id, "annotator": annotator, "label": label,
                    "spans": [{"start": s["start"], "end": s["end"], "text": s["text"],
                               "kind": s.get("kind")} for s in load_spans(sj)],
                }
                if note:
                    line["note"] = note
                line["query"], line["response"] = query, response
                f.write(orjson.dumps(line) + b"\n")
                n += 1
    return n


def import_jsonl(store: Store, path: str | os.PathLike[str],
                 skipped: list[Skip] | None = None) -> int:
    """Annotations from JSON lines ``{item_id, annotator, label, spans, ...}``; returns added."""
    problems: list[Skip] = []
    known = _responses(store, (r[0] for r in store.query(
        "SELECT DISTINCT item_id FROM annotation_items")))
    items: list[Item] = []
    pending: list[tuple[str, Annotation, str]] = []
    for pos, value in read_records(path):
        where = f"{os.fspath(path)}:{pos}"
        try:
            if isinstance(value, BadJSON):
                raise RecordProblem(value.reason)
            if not isinstance(value, dict):
                raise RecordProblem(f"not a JSON object ({type(value).__name__})")
            annotator = text_of(value, "annotator").strip()
            label = text_of(value, "label").strip().lower()
            if label not in LABELS:
                raise RecordProblem(f"unknown label {value['label']!r} (expected yes or no)")
            item_id = value.get("item_id")
            has_text = isinstance(value.get("response"), str)
            if item_id is None and has_text:
                item_id = jsonl_item_id(text_of(value, "query"), value["response"])
            if not (isinstance(item_id, str) and item_id.strip()):
                raise RecordProblem("item_id is missing or not a string")
            response = known.get(item_id)
            if response is None:
                if not has_text:
                    raise RecordProblem(f"unknown item {item_id} and no query/response to "
                                        f"add it from")
                response = text_of(value, "response")
                items.append(Item(item_id, "jsonl", text_of(value, "query"), response))
                known[item_id] = response
            note = value.get("note")
            ann = Annotation(item_id, annotator, label, check_spans(value.get("spans"), response),
                             note if isinstance(note, str) and note.strip() else None, "import")
        except RecordProblem as err:
            problems.append(Skip(where, str(err)))
            continue
        pending.append((where, ann, response))
    require_usable(path, len(pending), problems, "JSON-lines annotations")
    insert_items(store, items, problems)
    added = insert_annotations(store, _keep_matching(store, pending, problems), problems)
    if skipped is not None:
        skipped.extend(problems)
    return added


# -- HaluEval general ----------------------------------------------------------------------
def import_halueval_general(store: Store, path: str | os.PathLike[str],
                            skipped: list[Skip] | None = None) -> int:
    """HaluEval's ``general_data.json`` as annotated items; returns annotations added."""
    problems: list[Skip] = []
    items: list[Item] = []
    pending: list[tuple[str, Annotation, str]] = []
    for pos, value in read_records(path):
        where = f"{os.fspath(path)}:{pos}"
        try:
            if isinstance(value, BadJSON):
                raise RecordProblem(value.reason)
            rec = parse_halueval_general(value)
        except RecordProblem as err:
            problems.append(Skip(where, str(err)))
            continue
        located, missing = locate_spans(rec.spans, rec.response)
        meta: dict[str, Any] = {"halueval_id": rec.id,
                                "hallucination_spans": list(rec.spans)}
        if missing:
            meta["unlocated_spans"] = missing
        items.append(Item(rec.item_id, "halueval", rec.query, rec.response, meta=meta))
        if rec.label is None:
            problems.append(Skip(where, "no hallucination label; item added unlabelled"))
            continue
        try:
            spans = check_spans(located, rec.response) if rec.label == "yes" else ()
        except RecordProblem as err:  # not expected: located spans are cut from the text
            problems.append(Skip(where, str(err)))
            continue
        pending.append((where, Annotation(rec.item_id, "halueval", rec.label, spans, None,
                                          "halueval"), rec.response))
    require_usable(path, len(items), problems, "HaluEval general")
    insert_items(store, items, problems)
    added = insert_annotations(store, _keep_matching(store, pending, problems), problems)
    if skipped is not None:
        skipped.extend(problems)
    return added


def export_halueval_general(store: Store, path: str | os.PathLike[str]) -> int:
    """Resolved items in HaluEval's ``general_data.json`` layout; returns rows written."""
    rows = store.query(
        """
        SELECT i.item_id, i.query, i.response, i.meta_json, r.label, r.spans_json,
               h.label, h.spans_json
        FROM annotation_resolved r
        JOIN (SELECT * FROM annotation_items
              QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY created_at) = 1) i
          USING (item_id)
        LEFT JOIN annotations_latest h ON h.item_id = r.item_id AND h.annotator = 'halueval'
        ORDER BY i.created_at, i.item_id
        """
    )
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for item_id, query, response, meta_json, label, sj, h_label, h_sj in rows:
            meta = orjson.loads(meta_json) if meta_json else {}
            meta = meta if isinstance(meta, dict) else {}
            spans = load_spans(sj)
            released = meta.get("hallucination_spans")
            if label != "yes":
                texts: list[str] = []
            elif (isinstance(released, list) and h_label == label
                  and canonical_spans(spans) == canonical_spans(load_spans(h_sj))):
                texts = released
            else:
                texts = [s["text"] for s in spans]
            record = {"ID": str(meta.get("halueval_id", item_id)), "user_query": query,
                      "chatgpt_response": response, "hallucination": label,
                      "hallucination_spans": texts}
            # json.dumps' layout with the text as written, as HaluEval's file has it
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n
