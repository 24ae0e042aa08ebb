"""What the organiser view shows: progress per annotator, disagreements, ties to settle.

Read from the store on every request (labels from ``annotations_latest``), with the leases of
the running server, so the view shows what the store holds now. The organiser sees who voted
what; annotators never do.

- **Disagreement**: an item whose latest labels are not all the same.
- **Tie to settle**: a disagreement with as many yes as no votes and no free place left for
  another vote (labels plus other people's leases fill its cap). The assignment will not
  bring a deciding vote by itself: the organiser opens one more place (``add_place``), or
  accepts what ``annotate resolve`` does with a tie (it resolves to "yes", method ``tie``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..store import annotation_queries as queries
from .assign import Assigner

__all__ = ["EXPORTS", "MAX_LISTED", "PARTIAL_FILE", "overview", "wants_partial"]

MAX_LISTED = 500  # rows per list; the counts are always complete
# format -> (file name offered for download, content type)
EXPORTS: dict[str, tuple[str, str]] = {
    "jsonl": ("annotations.jsonl", "application/x-ndjson"),
    "labelstudio": ("labelstudio.json", "application/json"),
    "halueval": ("general_data.json", "application/x-ndjson"),
}
# HaluEval's layout with the items that have fewer labels than the server hands out too
# (``?allow_partial=1``, each record with its n_labels): a name of its own, so the two
# downloads never overwrite each other
PARTIAL_FILE = "general_data_partial.json"
_SNIPPET = 160


def _snippet(text: str) -> str:
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


def overview(assigner: Assigner, known: Iterable[str] = ()) -> dict[str, Any]:
    """The organiser view's data. Every annotator is listed, also before their first label:
    ``known`` (the names in the tokens file), whoever has logged in, whoever holds items."""
    store = assigner.store
    leased = assigner.leases.by_item()
    names = set(known) | {who for holders in leased.values() for who in holders}
    names |= set(queries.annotator_names(store))
    per_annotator: dict[str, dict[str, Any]] = {
        name: {"annotator": name, "labelled": 0, "yes": 0, "no": 0, "last": None} for name in names
    }
    for name, labelled, yes, no, last in queries.annotator_label_counts(store):
        per_annotator[name] = {
            "annotator": name,
            "labelled": int(labelled),
            "yes": int(yes),
            "no": int(no),
            "last": last.isoformat(sep=" ", timespec="seconds") + "Z" if last else None,
        }
    for row in per_annotator.values():
        row["in_progress"] = len(assigner.leases.held_by(row["annotator"]))
        row["available"] = assigner.progress(row["annotator"]).available
    overall = assigner.progress("").as_dict()["overall"]

    votes: dict[str, list[tuple[str, str]]] = {}
    for item_id, annotator, label in queries.disagreeing_votes(store):
        votes.setdefault(item_id, []).append((annotator, label))
    texts = _queries(assigner, sorted(votes))
    caps = _caps(assigner, sorted(votes))
    disagreements, ties = [], []
    for item_id, item_votes in votes.items():
        yes = sum(1 for _, label in item_votes if label == "yes")
        no = len(item_votes) - yes
        voters = {a for a, _ in item_votes}
        waiting = len(leased.get(item_id, set()) - voters)
        cap = caps.get(item_id, assigner.per_item)
        free = max(0, cap - len(item_votes) - waiting)
        row = {
            "item_id": item_id,
            "query": _snippet(texts.get(item_id, "")),
            "yes": yes,
            "no": no,
            "votes": [{"annotator": a, "label": label} for a, label in item_votes],
            "cap": cap,
            "in_progress": waiting,
            "free_places": free,
        }
        disagreements.append(row)
        if yes == no and free == 0 and waiting == 0:
            ties.append(row)
    return {
        "per_item": assigner.per_item,
        "overall": overall,
        "annotators": sorted(per_annotator.values(), key=lambda r: r["annotator"]),
        "disagreements": disagreements[:MAX_LISTED],
        "disagreement_count": len(disagreements),
        "ties": ties[:MAX_LISTED],
        "tie_count": len(ties),
        "exports": [
            *(
                {"format": fmt, "file": name, "url": f"/api/organiser/export/{fmt}"}
                for fmt, (name, _) in EXPORTS.items()
            ),
            {
                "format": "halueval",
                "file": PARTIAL_FILE,
                "url": "/api/organiser/export/halueval?allow_partial=1",
                "partial": True,
            },
        ],
    }


def wants_partial(query: Mapping[str, str]) -> bool:
    """Whether an export request asks for partly labelled items too (``?allow_partial=1``)."""
    return query.get("allow_partial") in ("1", "true", "yes")


def _queries(assigner: Assigner, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}
    return queries.first_queries(assigner.store, ids)


def _caps(assigner: Assigner, ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    rows = queries.extra_place_counts(assigner.store, ids)
    return {item_id: assigner.per_item + int(n) for item_id, n in rows}
