"""Label Studio's JSON: export tasks with their annotations, import them back.

``LABELSTUDIO_CONFIG`` is the labelling interface that matches (paste it into a project).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ..store.db import Store
from .items import (
    LABELS,
    BadJSON,
    Item,
    RecordProblem,
    Skip,
    insert_items,
    read_records,
    require_usable,
    text_of,
)
from .labels import Annotation, _items, _keep_matching, _latest, insert_annotations
from .spans import Span, _kind, _offset, check_spans, load_spans

__all__ = ["LABELSTUDIO_CONFIG", "export_labelstudio", "import_labelstudio"]

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

_LS_KIND = {
    "unverifiable": "Unverifiable",
    "non-factual": "Non-factual",
    "irrelevant": "Irrelevant",
}
_LS_CHOICE = {"yes": "Yes", "no": "No"}


def export_labelstudio(store: Store, path: str | os.PathLike[str]) -> int:
    """Write every item as a Label Studio task with its latest annotations; returns tasks."""
    latest = _latest(store)
    tasks = []
    ann_id = 0
    for task_id, (item_id, query, response, _meta) in enumerate(_items(store), 1):
        annotations = []
        for _, annotator, label, sj, note in latest.get(item_id, []):
            ann_id += 1
            result: list[dict[str, Any]] = [
                {
                    "id": f"h{ann_id}",
                    "from_name": "hallucinated",
                    "to_name": "response",
                    "type": "choices",
                    "value": {"choices": [_LS_CHOICE.get(label, label)]},
                }
            ]
            for k, s in enumerate(load_spans(sj), 1):
                kind = s.get("kind")
                result.append(
                    {
                        "id": f"s{ann_id}-{k}",
                        "from_name": "spans",
                        "to_name": "response",
                        "type": "labels",
                        "value": {
                            "start": s["start"],
                            "end": s["end"],
                            "text": s["text"],
                            "labels": [_LS_KIND.get(kind, kind)] if kind else [],
                        },
                    }
                )
            if note:
                result.append(
                    {
                        "id": f"n{ann_id}",
                        "from_name": "note",
                        "to_name": "response",
                        "type": "textarea",
                        "value": {"text": [note]},
                    }
                )
            entry: dict[str, Any] = {
                "id": ann_id,
                "result": result,
                "was_cancelled": False,
                "ground_truth": False,
                "halugen_annotator": annotator,
            }
            if "@" in annotator:
                entry["completed_by"] = {"email": annotator}
            annotations.append(entry)
        tasks.append(
            {
                "id": task_id,
                "data": {"item_id": item_id, "query": query, "response": response},
                "annotations": annotations,
            }
        )
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
    kinds = {k for k in map(_kind, labels) if k is not None}
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
    choices: list[tuple[bool, Any]] = []
    spans: list[Span] = []
    notes: list[str] = []
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
            notes.extend(
                t
                for t in (texts if isinstance(texts, list) else [texts])
                if isinstance(t, str) and t.strip()
            )
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
    return Annotation(
        item_id,
        _ls_annotator(ann),
        label,
        check_spans(spans, response),
        "\n".join(notes) or None,
        "import",
    )


def import_labelstudio(
    store: Store, path: str | os.PathLike[str], skipped: list[Skip] | None = None
) -> tuple[int, int]:
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
        items.append(
            Item(item_id, "labelstudio", query, response, meta={"labelstudio_id": task.get("id")})
        )
        for k, ann in enumerate(anns, 1):
            try:
                pending.append(
                    (f"{where} annotation {k}", _ls_annotation(ann, item_id, response), response)
                )
            except RecordProblem as err:
                problems.append(Skip(f"{where} annotation {k}", str(err)))
    require_usable(path, len(items), problems, "Label Studio JSON")
    added_items = insert_items(store, items, problems)
    added = insert_annotations(store, _keep_matching(store, pending, problems), problems)
    if skipped is not None:
        skipped.extend(problems)
    return added_items, added
