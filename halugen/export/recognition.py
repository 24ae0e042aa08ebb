"""The recognition test as data for other harnesses: one item per shown answer, with its label.

A sample of the store becomes two items, one showing the right text (label ``No``: no
hallucination) and one showing the hallucinated text (label ``Yes``), as ``halugen eval``
would show either. An annotated general-track item becomes one item, labelled by its
resolved human label. Each item carries the fields halugen's judge templates fill
(``question``/``dialogue_history``/``document``/``user_query``, ``knowledge`` when the
task has it, and the shown text as ``answer``/``response``/``summary``), so a harness
prompt built from the same template reads the same fields.

``data_file_rows`` writes them as ``<task>.jsonl``; ``prompt_messages`` gives a template's
messages with ``{{field}}`` placeholders, from which the harness files are built.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from ..annotate.resolve import LabelRule
from ..evaluate.judge import EvalItem, judge_template, judge_values, shown_texts
from ..records import fingerprint
from ..store.db import Store
from ..store.export_queries import all_of, sample_field_rows, task_filters
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog
from .samples import pick_sample_runs
from .selection import Picked, Selection
from .suspects import without_suspects

__all__ = [
    "HARNESS_STRATEGIES",
    "TaskData",
    "harness_strategies",
    "prompt_messages",
    "write_task_data",
]

# Strategies a harness file is written for: one verdict per shown text. (cot needs its own
# answer extraction, contrast shows two texts per item; both stay with `halugen eval`.)
HARNESS_STRATEGIES = ("plain", "knowledge")


@dataclass(frozen=True)
class TaskData:
    task: str
    path: Path  # the data file
    items: int
    yes: int  # items whose label is Yes
    runs: tuple[str, ...]
    spec: TaskSpec  # the task's declaration


def harness_strategies(spec: TaskSpec) -> tuple[str, ...]:
    """``plain``, and ``knowledge`` where the task has it (qa, dialogue)."""
    return tuple(s for s in HARNESS_STRATEGIES if s in spec.strategies)


def prompt_messages(spec: TaskSpec, strategy: str) -> list[tuple[str, str]]:
    """(role, text) of the judge template, fields left as ``{{name}}``."""
    template = judge_template(spec, strategy)
    return [
        (role, "".join(s if isinstance(s, str) else "{{" + s[0] + "}}" for s in segs))
        for role, segs in template.parts
    ]


def _item_fields(spec: TaskSpec, item: EvalItem, shown_text: str) -> dict[str, str]:
    return judge_values(spec, harness_strategies(spec)[-1], item, shown_text)


def _sample_items(
    store: Store, spec: TaskSpec, picked: Picked, filters: str, params: list[Any]
) -> Iterator[dict[str, Any]]:
    task = spec.name
    names = spec.record_fields
    keep, keep_params = Selection((picked,)).clause(("task",))
    predicate = all_of(filters, keep)
    rows = sample_field_rows(
        store, names, predicate, [*params, *keep_params], lead=("run_id", "seed_id", "seed_key")
    )
    for run_id, seed_id, seed_key, *values in rows:
        fields = {n: "" if v is None else str(v) for n, v in zip(names, values, strict=True)}
        item = EvalItem(
            task=task,
            key=fingerprint({"task": task, "fields": fields}),
            item_id=seed_id or seed_key,
            fields=fields,
        )
        right, hallucinated = shown_texts(spec, item)
        for shown, text, label in (("right", right, "No"), ("hallucinated", hallucinated, "Yes")):
            yield {
                "id": f"{task}:{item.item_id}:{shown}",
                "task": task,
                "run_id": run_id,
                "seed_id": item.item_id,
                "item_key": item.key,
                "shown": shown,
                "label": label,
                **_item_fields(spec, item, text),
            }


def _general_items(
    store: Store, spec: TaskSpec, labels: LabelRule, partial: list[int]
) -> Iterator[dict[str, Any]]:
    from ..evaluate.items import general_items

    for item, n_labels in general_items(store, labels, partial):
        right, _ = shown_texts(spec, item)
        count = {"n_labels": n_labels} if labels.allow_partial else {}
        yield {
            "id": f"general:{item.item_id}",
            "task": "general",
            "run_id": None,
            "seed_id": item.item_id,
            "item_key": item.key,
            "shown": "response",
            "label": "Yes" if item.human_label else "No",
            **judge_values(spec, "plain", item, right),
            **count,
        }


def write_task_data(
    store: Store,
    directory: Path,
    *,
    task: str | None,
    where: str | None,
    run: str | None,
    all_runs: bool,
    labels: LabelRule | None = None,
    include_suspect: bool = False,
    catalog: TaskCatalog,
) -> tuple[list[TaskData], Selection]:
    """``<task>.jsonl`` in ``directory`` for every task with samples (and for ``general``
    when annotated items have resolved labels); returns what was written. ``catalog``
    declares the tasks the store's rows name (a task it does not hold is left out)."""
    if task is not None:
        catalog[task]  # UsageError for a task neither built in nor a folder's
    # samples the verify stage flagged are left out unless asked for (export/suspects.py)
    samples_where = where if include_suspect else without_suspects(where)
    filters, params = task_filters(None if task == "general" else task, samples_where)
    selection = Selection(())
    if task != "general":
        selection = pick_sample_runs(store, filters, params, run=run, all_runs=all_runs)
    partial: list[int] = []  # general items with too few labels, counted as read
    sources: list[tuple[TaskSpec, Iterator[dict[str, Any]], tuple[str, ...]]] = [
        (spec, _sample_items(store, spec, p, filters, params), p.runs)
        for p in sorted(selection.picked, key=lambda p: p.unit[0])
        if (spec := catalog.get(p.unit[0])) is not None
    ]
    if task in (None, "general") and not where and run is None:
        general = catalog["general"]
        sources.append(
            (general, _general_items(store, general, labels or LabelRule(), partial), ())
        )
    written: list[TaskData] = []
    directory.mkdir(parents=True, exist_ok=True)
    for spec, items, runs in sources:
        name = spec.name
        path = directory / f"{name}.jsonl"
        n = yes = 0
        with path.open("wb") as f:
            for record in items:
                f.write(orjson.dumps(record) + b"\n")
                n += 1
                yes += record["label"] == "Yes"
        if n == 0:
            path.unlink()
            continue
        written.append(TaskData(name, path, n, yes, runs, spec))
    note = (labels or LabelRule()).left_out(sum(partial))
    if note:
        selection = replace(selection, notes=(*selection.notes, note))
    return written, selection
