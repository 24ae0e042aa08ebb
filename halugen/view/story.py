"""One seed's story as the page shows it: its record, right vs hallucinated text with the
changed words marked, every candidate with why it was kept or turned down, its calls.

Built from ``store.view_queries.view_seed``; a task's right and hallucinated fields are
its spec's (``TaskSpec.right_field`` / ``hallucinated_field``), or, for a task this halugen
does not know, the fields named ``right_*`` / ``hallucinated_*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..tasks.catalog import TaskCatalog
from .worddiff import word_diff

__all__ = ["seed_story", "text_fields"]

# candidate statuses that are not a guard's verdict but a reply that could not be used
_UNUSABLE = {
    "unparseable": "its reply could not be read",
    "refusal": "the model refused",
    "truncated": "its reply was cut off",
    "content_filter": "the provider's content filter stopped it",
    "call_failed": "its call failed",
    "context_length": "the record was too long for the model",
}


def text_fields(
    task: str, fields: Mapping[str, Any], tasks: TaskCatalog | None = None
) -> tuple[str | None, str | None]:
    """(right field, hallucinated field) of ``task``, as ``tasks`` (default: the built-in
    tasks) declares it; else found by name, None where neither rule finds one."""
    spec = (TaskCatalog() if tasks is None else tasks).get(task)
    if spec is None:
        right = next((k for k in fields if k.startswith("right_")), None)
        hallucinated = next((k for k in fields if k.startswith("hallucinated_")), None)
        return right, hallucinated
    return spec.right_field, spec.hallucinated_field


def _sample_fields(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A samples row's fields by name, a task folder's own ones (extra_json) included."""
    out = {k: v for k, v in sample.items() if k != "extra_json" and v is not None}
    if sample.get("extra_json"):
        out.update(orjson.loads(sample["extra_json"]))
    return out


def _why(
    cand: Mapping[str, Any], decision: Mapping[str, Any] | None, sampled: bool
) -> tuple[str, str]:
    """(verdict: kept | filter | guard | unusable, why in words) for one candidate."""
    status = cand["status"]
    detail = f": {cand['detail']}" if cand.get("detail") else ""
    if status in _UNUSABLE:
        return "unusable", f"{_UNUSABLE[status]} ({status}){detail}"
    if status != "ok":
        return "guard", f"turned down by the guard {status}{detail}"
    if decision is None:
        return "filter", "not judged yet"
    chosen = decision.get("chosen")
    shown = orjson.loads(decision["shown_order"]) if decision.get("shown_order") else []
    if chosen == cand["idx"]:
        if not sampled:
            return "filter", f"picked by the filter ({decision['method']}), but no sample came"
        return "kept", {
            "only_valid": "kept: the only candidate that passed the guards",
            "identical": "kept: the candidates that passed were the same text",
            "judge": "chosen by the filter's judge",
            "judge_again": "chosen by the filter's judge, asked a second time",
        }.get(decision["method"], f"chosen by the filter ({decision['method']})")
    if cand["idx"] not in shown:
        return "filter", "the same text as another candidate: only one copy was judged"
    if chosen is None:
        reason = decision.get("detail") or decision["method"]
        return "filter", f"the filter chose none ({decision['method']}): {reason}"
    return "filter", f"the filter's judge chose candidate {chosen + 1} instead"


def seed_story(raw: Mapping[str, Any], tasks: TaskCatalog | None = None) -> dict[str, Any]:
    """The page's JSON for one seed (``view_seed``'s answer); ``tasks`` declares the tasks
    the store's rows name (default: the built-in ones)."""
    seed = dict(raw["seed"])
    record = orjson.loads(seed.pop("fields_json") or "{}")
    sample = raw["sample"]
    fields = _sample_fields(sample) if sample else {}
    right_field, hallucinated_field = text_fields(seed["task"], {**record, **fields}, tasks)
    right = fields.get(right_field) if right_field else None
    if right is None and right_field:
        right = record.get(right_field)
    hallucinated = fields.get(hallucinated_field) if hallucinated_field else None
    pair = None
    if isinstance(right, str) and isinstance(hallucinated, str):
        left, other = word_diff(right, hallucinated)
        pair = {
            "right_field": right_field,
            "hallucinated_field": hallucinated_field,
            "right": [[t, c] for t, c in left],
            "hallucinated": [[t, c] for t, c in other],
        }
    decision = raw["decision"]
    candidates = []
    for cand in raw["candidates"]:
        verdict, why = _why(cand, decision, sample is not None)
        candidates.append({**cand, "verdict": verdict, "why": why})
    calls = raw["calls"]
    return {
        "seed": seed,
        "record": record,
        "right_field": right_field,
        "right": right,
        "sample": None
        if sample is None
        else {
            "pattern": sample.get("pattern"),
            "template": sample.get("template"),
            "selected_by": sample.get("selected_by"),
            "model": sample.get("model"),
            "length_ratio": sample.get("length_ratio"),
        },
        "diff": pair,
        "candidates": candidates,
        "decision": decision,
        "calls": calls,
        "cost_usd": sum(c["cost_usd"] or 0.0 for c in calls),
        "verify": raw["verify"],
    }
