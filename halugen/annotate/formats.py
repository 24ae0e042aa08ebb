"""Annotations in and out of the store, in the formats annotation teams use.

**Label Studio JSON** (labelstudio.py: ``export_labelstudio`` / ``import_labelstudio``): a
JSON array of tasks, the shape Label Studio exports and imports. Each task holds ``data``
(``item_id``, ``query``, ``response``) and one entry per annotator under ``annotations``,
whose ``result`` has

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
``halueval``), which resolution takes as a ``single`` label. Every record is kept: one with an
empty or missing ``ID`` becomes ``halueval:~<fingerprint of its texts>``, one whose ``ID`` is
taken by other texts (earlier in the file, or in the store) ``halueval:<ID>~<fingerprint>``,
each with a warning; the export writes the released ``ID`` back. Spans are texts there, not
offsets: each is looked up in the response (from the end of the previous one, then from the
start); one not found whole is split at line breaks and each line looked up (HaluEval joins
separate passages with newlines). Texts that are not found (HaluEval also writes remarks such
as "Incomplete answer") keep no offsets: the item's ``meta_json`` keeps them under
``unlocated_spans``, next to the released list under ``hallucination_spans``. The export
writes every item with a resolved label (``resolve.LabelRule``: by default one with
``per_item`` labels or a released one, resolved from the labels as they are now); while the
resolution still equals HaluEval's own annotation it writes the released span list
verbatim, otherwise the texts of the resolved spans ("no" items get none). ``ID`` is
HaluEval's for its items and the item id for the others.

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
from dataclasses import dataclass
from typing import Any

import orjson

from ..store import annotation_queries as queries
from ..store.db import Store
from .items import (
    LABELS,
    BadJSON,
    HaluEvalGeneral,
    Item,
    RecordProblem,
    Skip,
    halueval_item_ids,
    halueval_items_taken,
    insert_items,
    jsonl_item_id,
    parse_halueval_general,
    read_records,
    require_usable,
    text_of,
)
from .labels import Annotation, _items, _keep_matching, _latest, _responses, insert_annotations
from .resolve import ItemResolution, LabelRule, current_resolutions
from .spans import canonical_spans, check_spans, load_spans, locate_spans

__all__ = [
    "GeneralExport",
    "export_halueval_general",
    "export_jsonl",
    "import_halueval_general",
    "import_jsonl",
]


# -- JSON lines ----------------------------------------------------------------------------
def export_jsonl(store: Store, path: str | os.PathLike[str]) -> int:
    """One line per latest annotation (per item and annotator); returns lines written."""
    latest = _latest(store)
    n = 0
    with open(path, "wb") as f:
        for item_id, query, response, _meta in _items(store):
            for _, annotator, label, sj, note in latest.get(item_id, []):
                line: dict[str, Any] = {
                    "item_id": item_id,
                    "annotator": annotator,
                    "label": label,
                    "spans": [
                        {
                            "start": s["start"],
                            "end": s["end"],
                            "text": s["text"],
                            "kind": s.get("kind"),
                        }
                        for s in load_spans(sj)
                    ],
                }
                if note:
                    line["note"] = note
                line["query"], line["response"] = query, response
                f.write(orjson.dumps(line) + b"\n")
                n += 1
    return n


def import_jsonl(
    store: Store, path: str | os.PathLike[str], skipped: list[Skip] | None = None
) -> int:
    """Annotations from JSON lines ``{item_id, annotator, label, spans, ...}``; returns added."""
    problems: list[Skip] = []
    known = _responses(store, queries.item_ids(store))
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
                    raise RecordProblem(
                        f"unknown item {item_id} and no query/response to add it from"
                    )
                response = text_of(value, "response")
                items.append(Item(item_id, "jsonl", text_of(value, "query"), response))
                known[item_id] = response
            note = value.get("note")
            ann = Annotation(
                item_id,
                annotator,
                label,
                check_spans(value.get("spans"), response),
                note if isinstance(note, str) and note.strip() else None,
                "import",
            )
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
def import_halueval_general(
    store: Store, path: str | os.PathLike[str], skipped: list[Skip] | None = None
) -> int:
    """HaluEval's ``general_data.json`` as annotated items; returns annotations added.

    Every record that is a HaluEval general record is kept: one without a usable ``ID``, or
    whose ``ID`` another record (in the file or the store) has with other texts, gets a
    derived item id and a warning in ``skipped`` (``Skip.kept``); its released ``ID`` stays in
    the item's meta, so the export writes it back as it was.
    """
    problems: list[Skip] = []
    items: list[Item] = []
    pending: list[tuple[str, Annotation, str]] = []
    parsed: list[tuple[str, HaluEvalGeneral]] = []
    for pos, value in read_records(path):
        where = f"{os.fspath(path)}:{pos}"
        try:
            if isinstance(value, BadJSON):
                raise RecordProblem(value.reason)
            parsed.append((where, parse_halueval_general(value)))
        except RecordProblem as err:
            problems.append(Skip(where, str(err)))
    for where, rec, item_id, warning in halueval_item_ids(parsed, halueval_items_taken(store)):
        if warning:
            problems.append(Skip(where, warning, kept=True))
        located, missing = locate_spans(rec.spans, rec.response)
        meta: dict[str, Any] = {"halueval_id": rec.id, "hallucination_spans": list(rec.spans)}
        if missing:
            meta["unlocated_spans"] = missing
        items.append(Item(item_id, "halueval", rec.query, rec.response, meta=meta))
        if rec.label is None:
            problems.append(
                Skip(
                    where, "no field hallucination (or hallucination_label): kept unlabelled", True
                )
            )
            continue
        try:
            spans = check_spans(located, rec.response) if rec.label == "yes" else ()
        except RecordProblem as err:  # not expected: located spans are cut from the text
            problems.append(Skip(where, str(err)))
            continue
        pending.append(
            (
                where,
                Annotation(item_id, "halueval", rec.label, spans, None, "halueval"),
                rec.response,
            )
        )
    require_usable(path, len(items), problems, "HaluEval general")
    insert_items(store, items, problems)
    added = insert_annotations(store, _keep_matching(store, pending, problems), problems)
    if skipped is not None:
        skipped.extend(problems)
    return added


@dataclass(frozen=True)
class GeneralExport:
    rows: int  # records written
    partial: int  # items left out: fewer labels than the rule asks for


def export_halueval_general(
    store: Store, path: str | os.PathLike[str], rule: LabelRule | None = None
) -> GeneralExport:
    """Resolved items in HaluEval's ``general_data.json`` layout.

    Resolved from the labels as they are now (``current_resolutions``): no ``resolve`` step
    is needed first, and an imported HaluEval file exports as it came. Items the rule does not
    admit (fewer than ``per_item`` labels) are left out and counted; with ``allow_partial``
    they are written, and every record carries ``n_labels``, its number of labels.
    """
    rule = rule or LabelRule()
    admitted: dict[str, ItemResolution] = {}
    partial = 0
    for entry in current_resolutions(store):
        if rule.admits(entry.resolution.n_labels, entry.released):
            admitted[entry.item_id] = entry
        else:
            partial += 1
    rows = queries.export_items(store)
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for item_id, query, response, meta_json, h_label, h_sj in rows:
            found = admitted.get(item_id)
            if found is None:
                continue
            res = found.resolution
            label, spans = res.label, res.spans
            meta = orjson.loads(meta_json) if meta_json else {}
            meta = meta if isinstance(meta, dict) else {}
            released = meta.get("hallucination_spans")
            if label != "yes":
                texts: list[str] = []
            elif (
                isinstance(released, list)
                and h_label == label
                and canonical_spans(spans) == canonical_spans(load_spans(h_sj))
            ):
                texts = released
            else:
                texts = [s["text"] for s in spans]
            record: dict[str, Any] = {
                "ID": str(meta.get("halueval_id", item_id)),
                "user_query": query,
                "chatgpt_response": response,
                "hallucination": label,
                "hallucination_spans": texts,
            }
            if rule.allow_partial:
                record["n_labels"] = res.n_labels
            # json.dumps' layout with the text as written, as HaluEval's file has it
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return GeneralExport(n, partial)
