"""What an audit reads: benchmark items as (right, hallucinated) pairs, or labelled responses.

From any HaluEval-format file (read by ``evaluate.items.read_halueval``, the reader ``eval``
uses too; the task is told by the fields) or from the store's samples (a run, a task). Texts
are kept exactly as given: a trailing newline or a double space is an artifact a classifier
may use, so it must be measured, not cleaned away.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import orjson

from ..errors import UsageError
from ..evaluate.items import halueval_task, read_halueval
from ..store.columns import SAMPLE_COLUMNS
from ..store.db import Store
from ..store.sample_queries import audit_samples
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog

__all__ = ["Item", "fields_of", "items_from_file", "items_from_store", "task_of"]


def fields_of(spec: TaskSpec) -> tuple[str, str, str, str]:
    """(right field, hallucinated field, the question side, the knowledge side) of the task
    ``spec``, as its task.toml declares them ("" where it has none). "general" has one
    response and a human label instead of a pair."""
    hallucinated = spec.hallucinated_field if spec.generated else ""
    return spec.right_field, hallucinated, spec.question_field, spec.knowledge_field


@dataclass(frozen=True, slots=True)
class Item:
    """One benchmark item. ``hallucinated`` is None for a general-track response, whose
    truth is ``label`` (True: the annotators found hallucination)."""

    task: str
    item_id: str
    right: str  # the right text (general: the response)
    hallucinated: str | None
    question: str  # question / dialogue history / user query; "" when the task has none
    knowledge: str  # knowledge / document; "" when the task has none
    pattern: str = ""  # the pattern the generator named ("" for HaluEval's files)
    cluster: str = ""  # items of one cluster (an OpenDialKG dialogue) are not independent
    label: bool | None = None
    raw: bytes = b""  # the record's line as read (files), written as is by a balanced export
    # a stored sample's run and seed key ("" for a file's record): what a hard split records
    run_id: str = ""
    seed_key: str = ""


task_of = halueval_task  # the task whose HaluEval fields a record has


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _item(
    spec: TaskSpec,
    rec: dict,
    item_id: str,
    *,
    pattern: str = "",
    cluster: str = "",
    raw: bytes = b"",
    sample: tuple[str, str] = ("", ""),
) -> Item:
    task = spec.name
    right, hallucinated, question, knowledge = fields_of(spec)
    label = None
    if task == "general":
        value = str(rec.get("hallucination", "")).strip().lower()
        if value not in ("yes", "no"):
            raise ValueError("hallucination must be yes or no")
        label = value == "yes"
    return Item(
        task=task,
        item_id=item_id,
        right=_text(rec.get(right)),
        hallucinated=_text(rec.get(hallucinated)) if hallucinated else None,
        question=_text(rec.get(question)) if question else "",
        knowledge=_text(rec.get(knowledge)) if knowledge else "",
        label=label,
        pattern=pattern,
        cluster=cluster,
        raw=raw,
        run_id=sample[0],
        seed_key=sample[1],
    )


def items_from_file(
    path: str, task: TaskSpec | None = None, *, tasks: TaskCatalog | None = None
) -> Iterator[Item]:
    """The items of one HaluEval-format file (JSON lines), in order (``read_halueval``:
    ``task`` None is told by the first record's fields, among ``tasks``, default the
    built-in ones; a bad line is an ``InputError`` naming the file and line). Each line is
    a cluster of its own, whatever its ID says."""
    catalog = TaskCatalog() if tasks is None else tasks
    for rec in read_halueval(path, task, tasks=catalog):
        spec = task if task is not None else catalog[rec.task]
        yield _item(spec, dict(rec.record), rec.item_id, raw=rec.raw, cluster=rec.where)


def items_from_store(
    store: Store,
    *,
    task: str | None = None,
    runs: Sequence[str] | None = None,
    tasks: TaskCatalog | None = None,
) -> Iterator[Item]:
    """Accepted samples (of ``task``, of ``runs``), with their patterns and clusters;
    ``tasks`` declares the tasks the rows name (default: the built-in ones).

    OpenDialKG seeds of one dialogue share a cluster (its file and row); every other item
    is a cluster of its own.
    """
    if task == "general":
        raise UsageError(
            "the general track's items come from annotation, not generation: audit its "
            "HaluEval file with --data general_data.json"
        )
    names = SAMPLE_COLUMNS
    catalog = TaskCatalog() if tasks is None else tasks
    for row in audit_samples(store, task, runs):
        run_id, row_task, seed_id, seed_key, pattern, dataset, src, line = row[:8]
        rec = {n: v for n, v in zip(names, row[8:-1], strict=True) if v is not None}
        if row[-1]:  # a task folder's own fields
            rec.update(orjson.loads(row[-1]))
        cluster = f"{src}:{line}" if dataset == "opendialkg" else f"{run_id}:{seed_key}"
        yield _item(
            catalog[row_task],
            rec,
            seed_id or seed_key,
            pattern=pattern or "",
            cluster=cluster,
            sample=(str(run_id), str(seed_key)),
        )
