"""What a recognition experiment judges: samples from the store or HaluEval's files; and
the one reader of HaluEval's benchmark files, which ``eval`` and ``audit`` both use.

``read_halueval`` reads a file of HaluEval's layout (JSON lines with HaluEval's field names;
the task given, or told by the first record's fields): every record as read, with its line,
its bytes and its id, or a one-line ``InputError`` naming the file and line. Each side then
takes the fields it needs: ``eval`` builds ``EvalItem``s (texts with their whitespace folded,
so a trailing newline cannot tell a right summary from a hallucinated one), ``audit`` its
``Item``s (texts exactly as given, since an artifact must be measured, not cleaned away).
For the general task an item carries the response and its human label.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import InputError
from ..records import fingerprint
from ..seeds import expand_paths
from ..seeds.limits import LONG_LINE, split_lines
from ..store.annotation_queries import item_queries
from ..store.db import Store
from ..store.sample_queries import task_sample_fields
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog
from .judge import EvalItem

if TYPE_CHECKING:
    from ..annotate.resolve import LabelRule

__all__ = [
    "HaluEvalRecord",
    "halueval_task",
    "items_from_files",
    "items_from_store",
    "partial_general_items",
    "read_halueval",
]


@dataclass(frozen=True, slots=True)
class HaluEvalRecord:
    """One record of a HaluEval file, as read."""

    task: str
    path: str
    line_no: int
    record: Mapping[str, Any]  # the JSON object, values as the file has them
    raw: bytes  # the line as read, without its line break

    @property
    def where(self) -> str:
        """``<file name>:<line>``: where the record is, whatever its ID says."""
        return f"{os.path.basename(self.path)}:{self.line_no}"

    @property
    def item_id(self) -> str:
        """Its ``ID`` (the general file has one), else ``where``."""
        return str(self.record.get("ID") or self.where)

    @property
    def label(self) -> bool | None:
        """The general task's human label (True: hallucinated); None for the other tasks."""
        if self.task != "general":
            return None
        return str(self.record.get("hallucination", "")).strip().lower() == "yes"

    def text(self, name: str) -> str:
        """A field as a string ("" when absent or null), exactly as given."""
        value = self.record.get(name)
        return value if isinstance(value, str) else "" if value is None else str(value)


def halueval_task(record: Mapping[str, Any], tasks: TaskCatalog | None = None) -> str | None:
    """The task of ``tasks`` (default: the built-in ones) whose HaluEval fields ``record``
    has, or None."""
    catalog = TaskCatalog() if tasks is None else tasks
    specs = [catalog[task] for task in catalog]
    # the right text's field only that task's records have (right_answer, chatgpt_response...)
    tells = [(spec.name, spec.right_field) for spec in specs]
    for spec in specs:
        if spec.right_field in record and all(f in record for f in spec.record_fields):
            return spec.name
    for task, tell in tells:  # a record of the task with a field missing: named as such
        if tell in record:
            return task
    return None


def read_halueval(
    path: str, task: TaskSpec | None = None, *, tasks: TaskCatalog | None = None
) -> Iterator[HaluEvalRecord]:
    """The records of one HaluEval-format file (JSON lines), in order.

    ``task`` None: told by the first record's fields (among ``tasks``, default the built-in
    ones). A line that is not a JSON object with
    the task's fields (and, for the general task, a ``hallucination`` of yes or no) is an
    ``InputError`` naming the file and line; so is a file with no records.
    """
    spec = task
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, also on errors
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with f:
        seen = False
        for line_no, raw in split_lines(f):  # LF, CRLF or CR alone (seeds/limits.py)
            if raw is None:
                raise InputError(f"{path}:{line_no}: {LONG_LINE}")
            if not raw.strip():
                continue
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise InputError(
                    f"{path}:{line_no}: not a JSON line (HaluEval's files hold one JSON "
                    f"object per line{f' with {_names(spec)}' if spec else ''})"
                ) from None
            if not isinstance(rec, dict):
                raise InputError(f"{path}:{line_no}: a JSON line must be an object")
            if spec is None:
                name = halueval_task(rec, tasks)
                if name is None:
                    raise InputError(
                        f"{path}:{line_no}: no HaluEval fields (expected e.g. right_answer and "
                        f"hallucinated_answer; found {', '.join(rec) or 'none'}); give --task"
                    )
                spec = (TaskCatalog() if tasks is None else tasks)[name]
            # the answers first: they say which task's file this is
            missing = sorted(
                (n for n in spec.record_fields if n not in rec),
                key=lambda n: not n.startswith(("right_", "hallucinated_", "chatgpt_")),
            )
            if missing:
                raise InputError(
                    f"{path}:{line_no}: missing {', '.join(missing)} for the {spec.name} task "
                    f"(HaluEval's {spec.name} layout: {_names(spec)}; found {', '.join(rec)})"
                )
            if spec.name == "general":
                label = str(rec["hallucination"]).strip().lower()
                if label not in ("yes", "no"):
                    raise InputError(f"{path}:{line_no}: hallucination must be yes or no")
            seen = True
            yield HaluEvalRecord(spec.name, path, line_no, rec, raw)
        if not seen:
            raise InputError(f"{path} has no records")


def _names(spec: TaskSpec) -> str:
    return ", ".join(spec.record_fields)


def _item(task: str, fields: dict[str, str], item_id: str, label: bool | None = None) -> EvalItem:
    key = fingerprint({"task": task, "fields": fields})
    return EvalItem(task=task, key=key, item_id=item_id, fields=fields, human_label=label)


def general_items(
    store: Store, labels: LabelRule | None = None, partial: list[int] | None = None
) -> Iterator[tuple[EvalItem, int]]:
    """Annotated items with a resolved label and their label counts, resolved from the labels
    as they are now; items with too few labels (``LabelRule.is_partial``) are counted in
    ``partial``, and left out unless ``labels`` allows partial items."""
    from ..annotate.resolve import LabelRule, current_resolutions

    rule = labels or LabelRule()
    queries = item_queries(store)
    n_partial = 0
    for entry in sorted(current_resolutions(store), key=lambda e: e.item_id):
        res = entry.resolution
        n_partial += rule.is_partial(res.n_labels, entry.released)
        if not rule.admits(res.n_labels, entry.released):
            continue
        fields = {
            "user_query": queries[entry.item_id],
            "chatgpt_response": entry.response,
            "hallucination": res.label,
        }
        yield _item("general", fields, entry.item_id, res.label == "yes"), res.n_labels
    if partial is not None:
        partial.append(n_partial)


def partial_general_items(store: Store, labels: LabelRule) -> int:
    """How many annotated items have too few labels for ``labels`` (``LabelRule.is_partial``)."""
    from ..annotate.resolve import current_resolutions

    return sum(
        labels.is_partial(e.resolution.n_labels, e.released) for e in current_resolutions(store)
    )


def items_from_store(
    store: Store, spec: TaskSpec, *, gen_run: str | None = None, labels: LabelRule | None = None
) -> Iterator[EvalItem]:
    """Accepted samples of the task ``spec`` (general: annotated items with a resolved label,
    those ``labels`` admits, see ``general_items``)."""
    task = spec.name
    if task == "general":
        yield from (item for item, _ in general_items(store, labels))
        return
    names = spec.record_fields
    for row in task_sample_fields(store, task, names, gen_run):
        yield _item(task, dict(zip(names, row[1:], strict=True)), row[0] or "")


def items_from_files(paths: Sequence[str], spec: TaskSpec) -> Iterator[EvalItem]:
    """HaluEval's released files (JSON lines) of the task ``spec`` (``read_halueval``)."""
    task = spec.name
    for path in expand_paths(paths):
        for rec in read_halueval(path, spec):
            if task == "general":
                fields = {
                    "user_query": rec.text("user_query").strip(),
                    "chatgpt_response": rec.text("chatgpt_response").strip(),
                    "hallucination": "yes" if rec.label else "no",
                }
                yield _item(task, fields, rec.item_id, rec.label)
            else:
                fields = {n: " ".join(rec.text(n).split()) for n in spec.record_fields}
                yield _item(task, fields, rec.item_id)
