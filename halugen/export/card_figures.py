"""The figures a dataset card shows for its samples: the accuracy of judges that never read
the text (always Yes, always No, length only) and the recognition results stored for them."""

from __future__ import annotations

from ..records import fingerprint
from ..store.db import Store
from ..store.export_queries import file_field_rows, latest_task_judgements
from ..tasks.catalog import TaskCatalog
from .card_header import CardFile

__all__ = ["baseline_lines", "recognition_lines"]


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def baseline_lines(store: Store, file: CardFile, tasks: TaskCatalog) -> list[list[str]]:
    """Per task: judges that never read the text, over both sides of every sample
    (``tasks``: the declarations; a task it does not describe is left out)."""
    from ..evaluate.metrics import Judged, baselines

    lines = []
    for task in file.tasks:
        spec = tasks.get(task)
        if spec is None:
            continue
        right, hallucinated = spec.right_field, spec.hallucinated_field
        judged: list[Judged] = []
        for r, h in file_field_rows(store, file.query, file.params, [right, hallucinated], task):
            judged.append(Judged(False, "invalid", len(r or "")))
            judged.append(Judged(True, "invalid", len(h or "")))
        if not judged:
            continue
        b = baselines(judged)
        lines.append(
            [
                task,
                f"{len(judged):,}",
                _pct(b["always_yes"]),
                _pct(b["always_no"]),
                _pct(b["length_only"]),
            ]
        )
    return lines


def recognition_lines(store: Store, file: CardFile, tasks: TaskCatalog) -> list[list[str]]:
    """Recognition results stored for these samples: eval runs that judged them."""
    from ..evaluate.metrics import Judged, compute

    lines = []
    for task in file.tasks:
        spec = tasks.get(task)
        if spec is None:
            continue
        fields = spec.record_fields  # what `halugen eval` fingerprints into an item key
        keys = set()
        for row in file_field_rows(store, file.query, file.params, fields, task):
            keys.add(fingerprint({"task": task, "fields": dict(zip(fields, row, strict=True))}))
        if not keys:
            continue
        groups: dict[tuple[str, str, str], list[Judged]] = {}
        for run_id, model, strategy, item_key, truth, verdict in latest_task_judgements(
            store, task
        ):
            if item_key in keys:
                groups.setdefault((run_id, model, strategy), []).append(
                    Judged(bool(truth), verdict)
                )
        for (run_id, model, strategy), judged in sorted(groups.items()):
            m = compute(judged)
            ci = (
                f" [{_pct(m.accuracy_ci[0])}, {_pct(m.accuracy_ci[1])}]"
                if m.accuracy_ci is not None
                else ""
            )
            lines.append([task, model, strategy, run_id, f"{m.n:,}", _pct(m.accuracy) + ci])
    return lines
