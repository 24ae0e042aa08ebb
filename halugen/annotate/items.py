"""Items to annotate: what one is, how it gets into the store, from which sources.

An item is one (query, response) pair that annotators label. Sources:

- a pre-selection run (``add_preselected``): the K queries whose sampled responses agree
  least (``preselect_ranked``, lowest mean BERTScore first), every response of each becomes
  an item ``pre:<fingerprint of run and query>:<idx>`` (``preselect_item_id``: short enough
  to read and say, the same every time). Items added before under the long form
  ``<run>:<query_key>:<idx>`` keep that id: labels and leases in the store refer to it;
- HaluEval's ``general_data.json`` (``add_halueval_general``): items ``halueval:<ID>``
  without HaluEval's labels, for annotating them afresh (``formats.import_halueval_general``
  brings the labels too);
- a plain JSON-lines file (``add_jsonl``) of ``{item_id?, query, response}``; without an
  ``item_id`` the id is ``jsonl:<fingerprint of query and response>``, so a re-import finds it.

Adding is idempotent: an id already in the store with the same texts is skipped silently; with
different texts it is skipped and reported, never overwritten (labels refer to the old texts).
Bad records are skipped and reported through the optional ``skipped`` list; a file in which
no record is usable is not of the format at all and raises ``InputError`` naming its first
problem with file:line.

Also here, because every annotation module needs them: the label and span-kind vocabularies,
the ``Skip`` report, the JSON reader shared by the importers and ``append_rows``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import duckdb
import orjson

from ..errors import InputError, StoreError, UsageError
from ..records import canonical_json, fingerprint, kind_of
from ..store import annotation_queries as queries
from ..store.atomic import insert_at_once
from ..store.db import Store, now
from ..store.rows import AnnotationItemRow, Record

__all__ = [
    "KINDS",
    "LABELS",
    "BadJSON",
    "HaluEvalGeneral",
    "Item",
    "RecordProblem",
    "Skip",
    "add_halueval_general",
    "add_jsonl",
    "add_preselected",
    "append_rows",
    "halueval_item_ids",
    "halueval_items_taken",
    "insert_items",
    "jsonl_item_id",
    "parse_halueval_general",
    "preselect_item_id",
    "read_records",
    "require_usable",
    "text_of",
]

LABELS = ("yes", "no")  # hallucinated?
# Span kinds of the HaluEval annotation guide, in the order it lists them.
KINDS = ("unverifiable", "non-factual", "irrelevant")


@dataclass(frozen=True)
class Skip:
    """A record left out of an import, with where it was and why."""

    where: str  # "file:line" or another locator ("run <id>")
    reason: str
    kept: bool = False  # True: a warning about a record that was kept (e.g. under a new id)

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class RecordProblem(Exception):
    """A record cannot be used; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class Item:
    item_id: str
    source: str  # preselect | halueval | labelstudio | jsonl
    query: str
    response: str
    run_id: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(frozen=True)
class BadJSON:
    """A line of a JSON-lines file that is not JSON (``read_records`` yields it)."""

    reason: str


# -- reading files -------------------------------------------------------------------------
def read_records(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(position, value)`` for each record of a JSON array or JSON-lines file.

    The position is the 1-based line (JSON lines) or element index (array). A line that is
    not JSON yields a ``BadJSON`` value (one bad line must not end the file); CRLF line
    ends and a UTF-8 byte-order mark are fine. A missing, unreadable or empty file, or a
    broken array, raises ``InputError``.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise InputError(f"{name} not found (check the path)") from None
    except IsADirectoryError:
        raise InputError(f"{name} is a directory, not a file") from None
    except OSError as err:
        raise InputError(f"cannot read {name}: {err.strerror or err}") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    head = data.lstrip(b" \t\r\n")[:1]
    if not head:
        raise InputError(f"{name} is empty")
    if head == b"[":
        try:
            values = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise InputError(f"{name}: not valid JSON ({err})") from None
        yield from enumerate(values, 1)
        return
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        line = raw.strip()
        if not line:
            continue
        try:
            yield line_no, orjson.loads(line)
        except orjson.JSONDecodeError as err:
            yield line_no, BadJSON(f"invalid JSON ({str(err).splitlines()[0]})")


def require_usable(
    path: str | os.PathLike[str], used: int, problems: Sequence[Skip], fmt: str
) -> None:
    """Raise ``InputError`` when a file gave problems and not one usable record."""
    if used == 0 and problems:
        raise InputError(
            f"{os.fspath(path)} is not a {fmt} file: {problems[0]} "
            f"({len(problems)} record(s) unusable, none usable)"
        )


def _where(path: str | os.PathLike[str], pos: int) -> str:
    return f"{os.fspath(path)}:{pos}"


def text_of(record: dict[str, Any], name: str, *, required: bool = True) -> str:
    """``record[name]`` as a non-blank string, kept exactly as written (offsets refer to it)."""
    value = record.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        what = "missing" if name not in record else f"not a string ({type(value).__name__})"
        raise RecordProblem(f"field {name} is {what}")
    if required and not value.strip():
        raise RecordProblem(f"field {name} is empty")
    return value


# -- writing -------------------------------------------------------------------------------
# Arrow types of the annotation tables' columns (an all-NULL column needs one); text otherwise.


def append_rows(store: Store, table: str, rows: Sequence[Record]) -> None:
    """Append ``table``'s records (rows.py) in one transaction.

    Row i gets ``created_at`` = now + i microseconds: tables whose "latest row wins"
    (``annotations_latest``, ``annotation_resolved``) then order rows of one import the way
    they came, never by chance of an equal timestamp.
    """
    if not rows:
        return
    start = now()
    try:
        stamps = [start + timedelta(microseconds=i) for i in range(len(rows))]
        insert_at_once(store.conn, table, rows, stamps)
    except duckdb.Error as exc:
        raise StoreError(f"writing {table} failed: {str(exc).splitlines()[0]}") from None


def insert_items(
    store: Store, items: Iterable[Item], skipped: list[Skip] | None = None, *, where: str = ""
) -> int:
    """Add the items whose id is new; returns how many were added.

    An id already present (in the store or earlier in ``items``) with the same query and
    response is skipped silently; with different texts it is reported in ``skipped``.
    """
    existing = {
        item_id: (query, response) for item_id, query, response in queries.item_texts(store)
    }
    rows: list[Record] = []
    for item in items:
        have = existing.get(item.item_id)
        if have is not None:
            if have != (item.query, item.response) and skipped is not None:
                skipped.append(
                    Skip(
                        where or item.item_id,
                        f"item {item.item_id} exists with a different query or "
                        f"response; kept the stored one",
                    )
                )
            continue
        existing[item.item_id] = (item.query, item.response)
        rows.append(
            AnnotationItemRow(
                item_id=item.item_id,
                source=item.source,
                run_id=item.run_id,
                query=item.query,
                response=item.response,
                meta_json=canonical_json(item.meta).decode() if item.meta else None,
            )
        )
    append_rows(store, "annotation_items", rows)
    return len(rows)


# -- sources -------------------------------------------------------------------------------
def add_preselected(store: Store, run_id: str, k: int, skipped: list[Skip] | None = None) -> int:
    """Items from the K best-ranked queries of a pre-selection run: every response of each.

    "Best" is the ``preselect_ranked`` order: the least similar responses first (the
    queries the model is least sure about). Returns the number of new items.
    """
    if k < 1:
        raise UsageError(f"K must be at least 1, got {k}")
    # a query scored twice (a resumed run) counts once, at its best rank; NaN scores (fewer
    # than two responses) say nothing about disagreement and are never picked
    ranked = queries.ranked_queries(store, run_id, k)
    if not ranked:
        raise UsageError(
            f"run {run_id!r} has no scored queries (run the pre-selection first; "
            f"see 'halugen status')"
        )
    responses: dict[str, list[tuple[int, str]]] = {}
    # a response re-written on resume appears twice; its latest row counts
    for query_key, idx, response in queries.latest_preselect_responses(store, run_id):
        responses.setdefault(query_key, []).append((idx, response))
    # ids of this run's items from before short ids: they stay (labels refer to them)
    stored = set(queries.item_ids_of_run(store, run_id, "preselect"))
    items = []
    for rank, (query_key, query_id, query, score, _, scorer) in enumerate(ranked, 1):
        got = responses.get(query_key, [])
        if not got and skipped is not None:
            skipped.append(
                Skip(
                    f"run {run_id}",
                    f"query {query_id or query_key} has a score but no stored responses",
                )
            )
        for idx, response in got:
            if not response.strip():
                if skipped is not None:
                    skipped.append(
                        Skip(
                            f"run {run_id}",
                            f"query {query_id or query_key} response {idx} is empty",
                        )
                    )
                continue
            legacy = f"{run_id}:{query_key}:{idx}"
            items.append(
                Item(
                    item_id=legacy
                    if legacy in stored
                    else preselect_item_id(run_id, query_key, idx),
                    source="preselect",
                    query=query,
                    response=response,
                    run_id=run_id,
                    meta={
                        "query_id": query_id,
                        "query_key": query_key,
                        "idx": idx,
                        "score": score,
                        "rank": rank,
                        "scorer": scorer,
                    },
                )
            )
    return insert_items(store, items, skipped, where=f"run {run_id}")


def preselect_item_id(run_id: str, query_key: str, idx: int) -> str:
    """The item of response ``idx`` to a pre-selected query: ``pre:`` + 12 hex digits of the
    run and query + the response's index, e.g. ``pre:3fa9c2d1b0e4:2``."""
    return f"pre:{fingerprint([run_id, query_key], size=12)}:{idx}"


@dataclass(frozen=True)
class HaluEvalGeneral:
    """One record of HaluEval's ``general_data.json``."""

    id: str  # "" when the record has no usable ID (``id_problem`` says why)
    query: str
    response: str
    label: str | None  # yes | no; None when the record carries no label
    spans: tuple[str, ...]  # hallucination_spans as released: texts, no offsets
    id_problem: str = ""

    @property
    def item_id(self) -> str:
        return f"halueval:{self.id}"


def parse_halueval_general(value: Any) -> HaluEvalGeneral:
    """A ``general_data.json`` record; ``RecordProblem`` when it is not one.

    Two releases exist: ``hallucination`` + ``hallucination_spans``, and one with
    only ``hallucination_label``; both are read. A record without a usable ``ID`` (missing,
    empty, not a string or number) is still read: its ``id`` is "" and ``id_problem`` says
    why, and the importer gives it a derived id (``halueval_item_ids``).
    """
    if not isinstance(value, dict):
        raise RecordProblem(f"not a JSON object ({type(value).__name__})")
    if "chatgpt_response" not in value:
        raise RecordProblem("missing field chatgpt_response (not a HaluEval general record)")
    ident = value.get("ID")
    id_problem = ""
    if "ID" not in value:
        id_problem = "no field ID"
    elif isinstance(ident, bool) or not isinstance(ident, str | int | float):
        id_problem = f"field ID is {kind_of(ident)}, not a string or a number"
    elif not str(ident).strip():
        id_problem = "field ID is empty"
    query = text_of(value, "user_query")
    response = text_of(value, "chatgpt_response")
    label_field = "hallucination" if "hallucination" in value else "hallucination_label"
    raw_label = value.get(label_field)
    label = None
    if raw_label is not None:
        label = str(raw_label).strip().lower() if isinstance(raw_label, str) else None
        if label not in LABELS:
            raise RecordProblem(f"field {label_field} is {raw_label!r}, expected 'yes' or 'no'")
    spans = value.get("hallucination_spans") or []
    if not isinstance(spans, list) or not all(isinstance(s, str) for s in spans):
        raise RecordProblem("field hallucination_spans is not a list of strings")
    ident_text = "" if id_problem else str(ident).strip()
    return HaluEvalGeneral(ident_text, query, response, label, tuple(spans), id_problem)


def halueval_item_ids(
    records: Iterable[tuple[str, HaluEvalGeneral]], taken: dict[str, tuple[str, str]]
) -> Iterator[tuple[str, HaluEvalGeneral, str, str]]:
    """``(where, record, item id, warning)`` for each ``(where, record)``: every record kept.

    The id is ``halueval:<ID>``; when the record has no usable ID it is derived from its
    texts (``halueval:~<fingerprint>``), and when ``<ID>`` is already taken — earlier in the
    file or in the store (``taken``: item id -> (query, response), updated here) — by other
    texts, from both (``halueval:<ID>~<fingerprint>``). Derived ids are stable, so importing
    the same file again finds them. ``warning`` is "" or one line saying what was done.
    """
    first: dict[str, str] = {}  # item id -> where it first came in this file
    for where, rec in records:
        texts = (rec.query, rec.response)
        digest = fingerprint({"query": rec.query, "response": rec.response}, size=12)
        warning = ""
        if not rec.id:
            item_id = f"halueval:~{digest}"
            warning = f"{rec.id_problem}: kept as item {item_id}"
        else:
            item_id = rec.item_id
            have = taken.get(item_id)
            if have is not None and have != texts:
                seen = first.get(item_id)
                derived = f"{item_id}~{digest[:8]}"
                at = f"at {seen}" if seen else "in the store"
                warning = f"ID {rec.id} is also {at} with other texts: kept as item {derived}"
                item_id = derived
            elif have is not None and item_id in first:
                warning = (
                    f"ID {rec.id} repeats the record at {first[item_id]} with the same texts: "
                    "one item, both labels stored (the later one counts)"
                )
        taken.setdefault(item_id, texts)
        first.setdefault(item_id, where)
        yield where, rec, item_id, warning


def add_halueval_general(
    store: Store, path: str | os.PathLike[str], skipped: list[Skip] | None = None
) -> int:
    """Items from HaluEval's ``general_data.json``, without its labels; returns new items."""
    problems: list[Skip] = []
    items = []
    parsed: list[tuple[str, HaluEvalGeneral]] = []
    for pos, value in read_records(path):
        try:
            if isinstance(value, BadJSON):
                raise RecordProblem(value.reason)
            parsed.append((_where(path, pos), parse_halueval_general(value)))
        except RecordProblem as err:
            problems.append(Skip(_where(path, pos), str(err)))
    for where, rec, item_id, warning in halueval_item_ids(parsed, halueval_items_taken(store)):
        if warning:
            problems.append(Skip(where, warning, kept=True))
        items.append(
            Item(item_id, "halueval", rec.query, rec.response, meta={"halueval_id": rec.id})
        )
    require_usable(path, len(items), problems, "HaluEval general")
    if skipped is not None:
        skipped.extend(problems)
    return insert_items(store, items, skipped)


def halueval_items_taken(store: Store) -> dict[str, tuple[str, str]]:
    """``item id -> (query, response)`` of the HaluEval items in the store."""
    return {i: (q, r) for i, q, r in queries.halueval_items(store)}


def jsonl_item_id(query: str, response: str) -> str:
    """The id of an item given without one: stable across re-imports of the same texts."""
    return f"jsonl:{fingerprint({'query': query, 'response': response}, size=16)}"


def add_jsonl(store: Store, path: str | os.PathLike[str], skipped: list[Skip] | None = None) -> int:
    """Items from JSON lines (or an array) of ``{item_id?, query, response}``."""
    problems: list[Skip] = []
    items = []
    for pos, value in read_records(path):
        try:
            if isinstance(value, BadJSON):
                raise RecordProblem(value.reason)
            if not isinstance(value, dict):
                raise RecordProblem(f"not a JSON object ({type(value).__name__})")
            query = text_of(value, "query")
            response = text_of(value, "response")
            item_id = value.get("item_id")
            if item_id is None:
                item_id = jsonl_item_id(query, response)
            elif not isinstance(item_id, str) or not item_id.strip():
                raise RecordProblem("item_id is not a non-empty string")
        except RecordProblem as err:
            problems.append(Skip(_where(path, pos), str(err)))
            continue
        meta = {k: v for k, v in value.items() if k not in ("item_id", "query", "response")}
        items.append(Item(item_id, "jsonl", query, response, meta=meta or None))
    require_usable(path, len(items), problems, "JSON-lines items")
    if skipped is not None:
        skipped.extend(problems)
    return insert_items(store, items, skipped)
