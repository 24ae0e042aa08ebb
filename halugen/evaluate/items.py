"""What a recognition experiment judges: samples from the store or HaluEval's files.

Each item carries the task's fields under HaluEval's names (both the right and the
hallucinated answer), or, for the general task, the response and its human label.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import orjson

from ..errors import InputError
from ..records import fingerprint
from ..seeds import expand_paths
from ..store.db import Store
from ..tasks import get_task
from ..tasks.columns import field_columns
from .judge import EvalItem

__all__ = ["item_fields", "items_from_files", "items_from_store"]


def item_fields(task: str) -> tuple[str, ...]:
    """The fields an item of ``task`` needs (HaluEval's names for HaluEval's tasks), in the
    order of its records; a task folder declares them."""
    return get_task(task).record_fields


def _item(task: str, fields: dict[str, str], item_id: str, label: bool | None = None) -> EvalItem:
    key = fingerprint({"task": task, "fields": fields})
    return EvalItem(task=task, key=key, item_id=item_id, fields=fields, human_label=label)


def items_from_store(store: Store, task: str, *, gen_run: str | None = None) -> Iterator[EvalItem]:
    """Accepted samples of ``task`` (general: annotated items with a resolved label)."""
    if task == "general":
        sql = (
            "SELECT i.item_id, i.query, i.response, r.label FROM annotation_items i "
            "JOIN annotation_resolved r USING (item_id) ORDER BY i.item_id"
        )
        for item_id, query, response, label in store.iter_rows(sql):
            fields = {"user_query": query, "chatgpt_response": response, "hallucination": label}
            yield _item(task, fields, item_id, label == "yes")
        return
    names = item_fields(task)
    where, params = "WHERE task = ?", [task]
    if gen_run:
        where += " AND run_id = ?"
        params.append(gen_run)
    sql = (
        f"SELECT seed_id, {field_columns(names)} FROM samples {where} "
        f"ORDER BY run_id, source_file, source_line, seed_key"
    )
    for row in store.iter_rows(sql, params):
        yield _item(task, dict(zip(names, row[1:], strict=True)), row[0] or "")


def items_from_files(paths: Sequence[str], task: str) -> Iterator[EvalItem]:
    """HaluEval's released files (JSON lines) of ``task``; a bad line is an InputError."""
    names = item_fields(task)
    for path in expand_paths(paths):
        base = os.path.basename(path)
        with open(path, "rb") as f:
            seen_any = False
            for line_no, raw in enumerate(f, 1):
                raw = raw.strip()
                if not raw:
                    continue
                seen_any = True
                try:
                    rec = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    raise InputError(
                        f"{path}:{line_no}: not a JSON line (expected HaluEval's "
                        f"{task} layout: {', '.join(names)})"
                    ) from None
                if not isinstance(rec, dict) or any(n not in rec for n in names):
                    have = ", ".join(rec) if isinstance(rec, dict) else type(rec).__name__
                    raise InputError(
                        f"{path}:{line_no}: expected fields {', '.join(names)} "
                        f"(HaluEval's {task} layout), found {have}"
                    )
                if task == "general":
                    label = str(rec["hallucination"]).strip().lower()
                    if label not in ("yes", "no"):
                        raise InputError(f"{path}:{line_no}: hallucination must be yes or no")
                    fields = {
                        "user_query": str(rec["user_query"]).strip(),
                        "chatgpt_response": str(rec["chatgpt_response"]).strip(),
                        "hallucination": label,
                    }
                    item_id = str(rec.get("ID", f"{base}:{line_no}"))
                    yield _item(task, fields, item_id, label == "yes")
                else:
                    fields = {n: " ".join(str(rec[n]).split()) for n in names}
                    yield _item(task, fields, f"{base}:{line_no}")
            if not seen_any:
                raise InputError(f"{path} is empty")
