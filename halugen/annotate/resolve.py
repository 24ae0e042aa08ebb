"""``halugen annotate resolve``: one label per item from its annotators, and agreement figures.

Per item, from each annotator's latest label (``annotations_latest``):

- one label → that label, method ``single`` (e.g. HaluEval's released labels), share 1;
- a strict majority → the majority label, method ``majority``, share = its votes / labels;
- a tie → ``yes``, method ``tie`` (when ``yes`` is among the tied labels; else the first tied
  label alphabetically). Conservative on purpose: an item half the annotators call
  hallucinated is not certified clean, and ``method = 'tie'`` marks it for adjudication.

Spans of the resolved label: the union of the spans of the annotators who voted that label
(a character is marked when any of them marked it), as maximal intervals. Each interval's
kind is the majority kind inside it, weighed in characters: every voter's marked characters
in the interval vote for their span's kind; a tie goes to the kind listed first in ``KINDS``;
spans without a kind (HaluEval's) vote only when no span there has one.

Agreement over the whole store:

- Fleiss' kappa over the items with exactly the modal number of labels among items with ≥ 2
  (usually 3; a larger count wins a tie for the mode), categories = labels seen there;
- percent agreement (mean pairwise) and Krippendorff's alpha (nominal) over all items with
  ≥ 2 labels — alpha copes with items that have fewer labels than the rest;
- span agreement: mean over items with ≥ 2 "yes" voters of their mean pairwise
  character-level F1 (``agreement.span_agreement``).

Which items are resolved (``LabelRule``): an item is complete when it has ``per_item``
labels or more, or carries a released label (HaluEval's ``general_data.json``, imported with
annotator ``halueval``: one label that already stands for HaluEval's own annotators). A
partial item is left out of the resolutions and of every export of general data unless the
rule allows partial items (``--allow-partial``); the exports then write each record's label
count. ``current_resolutions`` computes the resolutions from the labels as they are now, so an
export needs no ``resolve`` step before it and is never behind the labels.

Resolutions are appended to ``annotation_resolutions`` only for items whose resolution
changed (the view ``annotation_resolved`` picks the latest), so resolving twice writes
nothing the second time.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import UsageError
from ..options.table import default
from ..store import annotation_queries as queries
from ..store.db import Store
from ..store.rows import AnnotationAgreementRow, AnnotationResolutionRow, Record
from .agreement import (
    fleiss_kappa,
    krippendorff_alpha_nominal,
    majority,
    percent_agreement,
    span_agreement,
    span_union,
)
from .items import KINDS, append_rows
from .spans import load_spans, spans_json

__all__ = [
    "RESOLVE_ACTION",
    "ItemResolution",
    "LabelRule",
    "Resolution",
    "ResolveReport",
    "current_resolutions",
    "format_report",
    "report_from_json",
    "report_to_json",
    "resolve_action",
    "resolve_all",
    "resolve_item",
    "resolve_spans",
]


@dataclass
class ResolveReport:
    items: int  # items with at least one label
    resolved: int  # resolved by a strict majority
    ties: int
    single: int  # items with exactly one label
    fleiss_kappa: float | None
    percent_agreement: float | None
    krippendorff_alpha: float | None
    label_counts: dict[str, int]  # resolved labels
    raters_per_item: dict[int, int]  # number of labels -> number of items
    kappa_items: int = 0  # items the kappa was computed over
    kappa_raters: int | None = None  # their number of labels (the mode)
    span_agreement: float | None = None
    written: int = 0  # resolution rows appended (changed items only)
    partial: int = 0  # items left out: fewer labels than the rule asks for
    per_item: int = 3  # the labels an item needs to be resolved


@dataclass(frozen=True)
class Resolution:
    label: str
    spans: list[dict[str, Any]]
    n_labels: int
    agreement: float
    method: str  # majority | single | tie


@dataclass(frozen=True, kw_only=True)
class LabelRule:
    """Which items count as resolved: ``per_item`` labels or more, or a released label;
    with ``allow_partial`` every labelled item (the exports then write its label count)."""

    # the defaults are the settings' (options/recognition.py: --per-item, --allow-partial)
    per_item: int = default("per_item")
    allow_partial: bool = default("allow_partial")

    def __post_init__(self) -> None:
        if self.per_item < 1:
            raise ValueError("per_item must be at least 1")

    def is_partial(self, n_labels: int, released: bool) -> bool:
        """Fewer labels than ``per_item`` and no released label."""
        return not released and n_labels < self.per_item

    def admits(self, n_labels: int, released: bool) -> bool:
        return self.allow_partial or not self.is_partial(n_labels, released)

    def left_out(self, partial: int) -> str | None:
        """The note for ``partial`` items left out, naming the way to keep them."""
        if not partial or self.allow_partial:
            return None
        return (
            f"left out {partial} item(s) with fewer than {self.per_item} labels "
            f"(--per-item); --allow-partial takes them, each with its label count"
        )

    def refused(self, partial: int) -> str:
        """The error of a command that will not go on without ``partial`` items nor with
        them unasked (``eval``: a benchmark quietly smaller than its labels is wrong)."""
        return (
            f"{partial} annotated item(s) have fewer than {self.per_item} labels (--per-item): "
            f"label them first, lower --per-item, or give --allow-partial to take them too"
        )

    def taken(self, partial: int) -> str | None:
        """The note for ``partial`` items taken with ``allow_partial``."""
        if not partial or not self.allow_partial:
            return None
        return f"took {partial} item(s) with fewer than {self.per_item} labels (--allow-partial)"


@dataclass(frozen=True)
class ItemResolution:
    item_id: str
    response: str
    votes: list[tuple[str, list[dict[str, Any]]]]  # (label, spans), one per annotator
    resolution: Resolution
    released: bool  # one of the labels is a released one (annotator halueval)


def _kind_order(kind: str) -> tuple[int, str]:
    return (KINDS.index(kind) if kind in KINDS else len(KINDS), kind)


def resolve_spans(
    spans_per_voter: Sequence[Sequence[dict[str, Any]]], response: str
) -> list[dict[str, Any]]:
    """Union of the voters' spans, each interval with its majority kind (see module doc)."""
    length = len(response)
    clipped = [
        [(max(0, int(s["start"])), min(length, int(s["end"])), s.get("kind")) for s in spans]
        for spans in spans_per_voter
    ]
    regions = span_union([[(s, e) for s, e, _ in spans] for spans in clipped])
    out = []
    for a, b in regions:
        votes: Counter[str | None] = Counter()
        for spans in clipped:
            for s, e, kind in spans:
                overlap = min(e, b) - max(s, a)
                if overlap > 0:
                    votes[kind] += overlap
        named = {k: v for k, v in votes.items() if k is not None}
        kind = None
        if named:
            top = max(named.values())
            kind = min((k for k, v in named.items() if v == top), key=_kind_order)
        out.append({"start": a, "end": b, "text": response[a:b], "kind": kind})
    return out


def resolve_item(
    votes: Sequence[tuple[str, Sequence[dict[str, Any]]]], response: str
) -> Resolution:
    """The resolution of one item from its (label, spans) votes, one per annotator."""
    labels = [label for label, _ in votes]
    n = len(labels)
    if n == 1:
        label, share, method = labels[0], 1.0, "single"
    else:
        top, share = majority(labels)
        if top is not None:
            label, method = top, "majority"
        else:
            counts = Counter(labels)
            most = max(counts.values())
            tied = sorted(k for k, v in counts.items() if v == most)
            label = "yes" if "yes" in tied else tied[0]
            method = "tie"
            share = most / n
    spans = resolve_spans([s for lab, s in votes if lab == label], response)
    return Resolution(label, spans, n, share, method)


def _mode(counts: Counter[int]) -> int | None:
    if not counts:
        return None
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def current_resolutions(store: Store) -> list[ItemResolution]:
    """Every labelled item resolved from its annotators' latest labels, as they are now."""
    by_item: dict[str, tuple[str, list[tuple[str, list[dict[str, Any]]]], bool]] = {}
    for item_id, label, sj, response, released in queries.resolved_labels(store):
        _, votes, was = by_item.setdefault(item_id, (response, [], False))
        votes.append((label, load_spans(sj)))
        if released and not was:
            by_item[item_id] = (response, votes, True)
    return [
        ItemResolution(item_id, response, votes, resolve_item(votes, response), released)
        for item_id, (response, votes, released) in by_item.items()
    ]


def resolve_all(store: Store, rule: LabelRule | None = None) -> ResolveReport:
    """Resolve every item the rule admits, append changed resolutions, return the report.

    Agreement figures are over every labelled item (they measure the annotators); only the
    resolutions leave partial items out.
    """
    rule = rule or LabelRule()

    current = {r[0]: r[1:] for r in queries.stored_resolutions(store)}
    rows: list[Record] = []
    methods: Counter[str] = Counter()
    label_counts: Counter[str] = Counter()
    raters: Counter[int] = Counter()
    multi: list[list[str]] = []
    span_scores: list[float] = []
    partial = 0
    items = current_resolutions(store)
    for entry in items:
        item_id, response, votes, res = entry.item_id, entry.response, entry.votes, entry.resolution
        raters[res.n_labels] += 1
        if res.n_labels >= 2:
            multi.append([label for label, _ in votes])
        yes = [[(s["start"], s["end"]) for s in spans] for label, spans in votes if label == "yes"]
        if len(yes) >= 2:
            score = span_agreement(yes, len(response))
            if score is not None:
                span_scores.append(score)
        if not rule.admits(res.n_labels, entry.released):
            partial += 1
            continue
        methods[res.method] += 1
        label_counts[res.label] += 1
        row = AnnotationResolutionRow(
            item_id, res.label, spans_json(res.spans), res.n_labels, res.agreement, res.method
        )
        old = current.get(item_id)
        if old is None or not _same(old, row[1:]):
            rows.append(row)
    append_rows(store, "annotation_resolutions", rows)

    modal = _mode(Counter(len(labels) for labels in multi))
    kappa_rows = [labels for labels in multi if len(labels) == modal]
    categories = sorted({label for labels in kappa_rows for label in labels})
    kappa = fleiss_kappa([[labels.count(c) for c in categories] for labels in kappa_rows])
    report = ResolveReport(
        items=len(items),
        resolved=methods["majority"],
        ties=methods["tie"],
        single=methods["single"],
        fleiss_kappa=kappa,
        percent_agreement=percent_agreement(multi) if multi else None,
        krippendorff_alpha=krippendorff_alpha_nominal(multi),
        label_counts=dict(sorted(label_counts.items())),
        raters_per_item=dict(sorted(raters.items())),
        kappa_items=len(kappa_rows),
        kappa_raters=modal,
        span_agreement=sum(span_scores) / len(span_scores) if span_scores else None,
        written=len(rows),
        partial=partial,
        per_item=rule.per_item,
    )
    if report.items:
        append_rows(
            store,
            "annotation_agreement",
            [
                AnnotationAgreementRow(
                    report.items,
                    report.kappa_items,
                    report.kappa_raters,
                    report.fleiss_kappa,
                    report.percent_agreement,
                    report.krippendorff_alpha,
                    report.span_agreement,
                    orjson.dumps(
                        dataclasses.asdict(report), option=orjson.OPT_NON_STR_KEYS
                    ).decode(),
                )
            ],
        )
    return report


def _same(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    label, sj, n, agreement, method = old
    return (label, sj, n, method) == (new[0], new[1], new[2], new[4]) and (
        agreement is not None and abs(agreement - new[3]) < 1e-9
    )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_report(report: ResolveReport) -> str:
    """The report as a few plain lines, for the terminal."""
    raters = (
        ", ".join(
            f"{n} label{'s' if n != 1 else ''}: {c}" for n, c in report.raters_per_item.items()
        )
        or "none"
    )
    labels = ", ".join(f"{k} {v}" for k, v in report.label_counts.items()) or "none"
    kappa_scope = (
        f" over {report.kappa_items} items with {report.kappa_raters} labels"
        if report.kappa_items
        else ""
    )
    return "\n".join(
        [
            f"items with labels: {report.items} (majority {report.resolved}, ties {report.ties}, "
            f"single {report.single})",
            f"items by number of labels: {raters}",
            f"resolved labels: {labels}",
            f"Fleiss' kappa: {_fmt(report.fleiss_kappa)}{kappa_scope}",
            f"percent agreement: {_fmt(report.percent_agreement)}",
            f"Krippendorff's alpha: {_fmt(report.krippendorff_alpha)}",
            f"span agreement (character F1): {_fmt(report.span_agreement)}",
            f"items left out (fewer than {report.per_item} labels): {report.partial}",
            f"resolutions written: {report.written}",
        ]
    )


# -- resolving while ``annotate serve`` holds the store -----------------------------------------
RESOLVE_ACTION = "annotate.resolve"


def report_to_json(report: ResolveReport) -> dict[str, Any]:
    """The report as JSON (numbers of labels as text keys)."""
    data = dataclasses.asdict(report)
    data["raters_per_item"] = {str(k): v for k, v in report.raters_per_item.items()}
    return data


def report_from_json(data: dict[str, Any]) -> ResolveReport:
    """The report ``report_to_json`` made."""
    values = dict(data)
    values["raters_per_item"] = {int(k): v for k, v in values["raters_per_item"].items()}
    return ResolveReport(**values)


def resolve_action(store: Store) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """What the holder does when another process asks it to resolve (``RESOLVE_ACTION``):
    ``resolve_all`` on ``store`` (the holder's own connection, a cursor of its own) with the
    asker's ``per_item`` and ``allow_partial``."""

    def act(args: dict[str, Any]) -> dict[str, Any]:
        per_item, allow_partial = args.get("per_item", 3), args.get("allow_partial", False)
        if isinstance(per_item, bool) or not isinstance(per_item, int) or per_item < 1:
            raise UsageError(f"--per-item must be at least 1 (got {per_item!r})")
        if not isinstance(allow_partial, bool):
            raise UsageError(f"allow_partial must be true or false (got {allow_partial!r})")
        rule = LabelRule(per_item=per_item, allow_partial=allow_partial)
        return report_to_json(resolve_all(store, rule))

    return act
