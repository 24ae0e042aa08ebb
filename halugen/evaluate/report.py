"""Recognition results laid out as the paper's tables, for the one table renderer
(``tables.py``).

The rows are ``results_from_store``'s (results.py): one per (task, data source, model,
strategy, scoring, reader) -- what was judged (a file, a generation run, the store's
samples), by whom, how, whether the verdict was read from text or scored from logprobs, and
by which reader (strict: the reply contract; lenient: interpreted prose) -- so a row never
pools different data, scoring or readers, and says which it is. ``report_tables``
lays them out as one accuracy table (rows: strategy and model, columns: the four tasks, with
HaluEval's ChatGPT numbers (paper.py) as a reference row under each strategy, named by the
paper's table it comes from) followed by one table of all metrics per task, where invalid
first replies, re-asks and final invalids are counted apart, and one table of the most common
reply shapes per model, with what each was read as; ``csv_table`` as one line per row with
every metric as a fraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..paper import PAPER_CHATGPT, PAPER_FOOTNOTE, PAPER_LABEL, paper_label
from ..tasks.catalog import TaskCatalog
from ..tasks.schema import STRATEGIES
from .metrics import Metrics
from .results import (
    SHAPES_PER_ROW,
    TASK_TITLES,
    ResultRow,
    order_key,
    row_key,
    task_description,
    task_title,
)

__all__ = ["csv_table", "report_tables"]

_DASH = "—"
_NOTE = (
    "Accuracy in %, invalid replies counted wrong (the paper's convention); ± is the half-width "
    "of the Wilson 95% interval. ChatGPT (HaluEval Table n): the paper's published numbers, for "
    f"reference, from the table named. {PAPER_FOOTNOTE} Verdicts read strictly (the reply "
    'contract\'s line only) unless a label says "lenient read" (prose interpreted, '
    "eval --read lenient)."
)
_REASK_NOTE = (
    "Invalid 1st: first replies the reader could not read; each was asked once more "
    "(Re-asked); Invalid: still unreadable after that, counted wrong."
)
_CONTRAST_NOTE = (
    "contrast: accuracy = right picks of the hallucinated text out of two (chance 50%); the "
    "Yes/No metrics and baselines do not apply."
)

# -- cells -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return _DASH if value is None else f"{value * 100:.1f}"


def _acc_cell(m: Metrics) -> str:
    if m.accuracy is None or m.accuracy_ci is None:
        return _DASH
    half = (m.accuracy_ci[1] - m.accuracy_ci[0]) / 2
    return f"{m.accuracy * 100:.1f} ±{half * 100:.1f}"


def _tasks(rows: Sequence[ResultRow]) -> list[str]:
    """The paper's four task columns, then any other task found, in a stable order."""
    extra = sorted({r.task for r in rows} - set(TASK_TITLES))
    return [*TASK_TITLES, *extra]


def _label(model: str, scoring: str, source: str = "", reader: str = "strict") -> str:
    how = [scoring] if scoring != "parse" else []
    how += [f"{reader} read"] if reader != "strict" else []
    label = f"{model} ({', '.join(how)})" if how else model
    return f"{label} [{source}]" if source else label


def _summary(rows: Sequence[ResultRow]) -> list[tuple[str, str, dict[str, str]]]:
    """(model label, strategy, task -> cell) per line of the accuracy table, paper rows
    included: the measured models of a strategy, then the paper's row for it.

    A line is one (strategy, model, scoring); its cells may come from one source per task
    (a qa file and a dialogue file). When one task has several sources for the line, the
    line splits into one per source, named in its label: cells never pool sources.
    """
    by_line: dict[tuple[str, str, str, str], list[ResultRow]] = {}
    for r in sorted(rows, key=row_key):
        by_line.setdefault((r.strategy, r.model, r.scoring, r.reader), []).append(r)
    strategies = sorted({s for s, _, _, _ in by_line}, key=lambda s: order_key(s, STRATEGIES))
    lines: list[tuple[str, str, dict[str, str]]] = []
    for strategy in strategies:
        for (s, model, scoring, reader), group in sorted(by_line.items()):
            if s != strategy:
                continue
            tasks = [r.task for r in group]
            if len(tasks) == len(set(tasks)):
                lines.append(
                    (
                        _label(model, scoring, reader=reader),
                        strategy,
                        {r.task: _acc_cell(r.metrics) for r in group},
                    )
                )
                continue
            for source in dict.fromkeys(r.source for r in group):
                cells = {r.task: _acc_cell(r.metrics) for r in group if r.source == source}
                lines.append((_label(model, scoring, source, reader), strategy, cells))
        paper = PAPER_CHATGPT.get(strategy)
        if paper:
            cells = {t: f"{v:.2f}" for t, v in paper.items()}
            lines.append((paper_label(strategy), strategy, cells))
    return lines


def _is_paper(label: str) -> bool:
    return label.startswith(PAPER_LABEL[:-1])


_DETAIL_HEADERS = (
    "Model",
    "Strategy",
    "Scoring",
    "Reader",
    "Source",
    "n",
    "Items",
    "Accuracy [95% CI]",
    "Acc. valid",
    "Invalid 1st",
    "Re-asked",
    "Invalid",
    "Precision",
    "Recall",
    "F1",
    "Yes-rate",
    "Bal. acc.",
    "Always No",
    "Always Yes",
    "Length only",
)
_FIRST_NUMBER = 5  # columns before it are text


def _interval_note(m: Metrics) -> str:
    return f" (cluster bootstrap, {m.clusters} dialogues)" if m.interval != "wilson" else ""


def _detail(row: ResultRow) -> list[str]:
    m, b = row.metrics, row.baselines
    acc = _DASH
    if m.accuracy is not None and m.accuracy_ci is not None:
        acc = f"{_pct(m.accuracy)} [{_pct(m.accuracy_ci[0])}, {_pct(m.accuracy_ci[1])}]"
        acc += "*" if m.interval != "wilson" else ""
    yes_no = row.strategy != "contrast"

    def only(value: float | None) -> str:
        return _pct(value) if yes_no else _DASH

    return [
        row.model,
        row.strategy,
        row.scoring,
        row.reader,
        row.source,
        str(m.n),
        str(row.items),
        acc,
        _pct(m.accuracy_valid),
        _pct(row.first_invalid / m.n if m.n else None),
        str(row.reasked),
        _pct(m.invalid_rate),
        only(m.precision),
        only(m.recall),
        only(m.f1),
        only(m.yes_rate),
        only(m.balanced_accuracy),
        _pct(b.get("always_no")),
        _pct(b.get("always_yes")),
        _pct(b.get("length_only")),
    ]


def _detail_notes(group: Sequence[ResultRow]) -> list[str]:
    notes = [_REASK_NOTE] if any(r.first_invalid or r.reasked for r in group) else []
    if any(r.strategy == "contrast" for r in group):
        notes.append(_CONTRAST_NOTE)
    clustered = [r for r in group if r.metrics.interval != "wilson"]
    if clustered:
        counts = ", ".join(str(r.metrics.clusters) for r in clustered)
        notes.append(
            f"*: items from one dialogue are not independent; the interval resamples whole "
            f"dialogues (cluster bootstrap over {counts} dialogues)"
            + (
                ", or at 0% and 100% is the exact (Clopper-Pearson) interval over them."
                if any(r.metrics.interval == "exact" for r in clustered)
                else "."
            )
        )
    return notes


def _by_task(rows: Sequence[ResultRow]) -> list[tuple[str, list[ResultRow]]]:
    out = []
    for task in _tasks(rows):
        group = sorted((r for r in rows if r.task == task), key=row_key)
        if group:
            out.append((task, group))
    return out


# -- tables ----------------------------------------------------------------------------


_SHAPES_TITLE = "First replies: the most common shapes"
_SHAPES_NOTE = (
    f"Up to {SHAPES_PER_ROW} per task, model and strategy: each judge's first reply with "
    "whitespace collapsed, digits as 0 and a long reply cut in the middle, what the reader made "
    "of it, and how often it came (share of that row's judgements)."
)
_SHAPE_HEADERS = ("Task", "Model", "Strategy", "Reply", "Read as", "Count", "Share")
_SHAPE_FIRST_NUMBER = 5


def _shape_lines(rows: Sequence[ResultRow], tasks: TaskCatalog | None = None) -> list[list[str]]:
    lines = []
    for r in sorted(rows, key=row_key):
        label = _label(r.model, r.scoring, reader=r.reader)
        for s in r.shapes:
            share = s.count / r.metrics.n if r.metrics.n else None
            task = task_title(r.task, tasks)
            lines.append([task, label, r.strategy, s.shape, s.verdict, str(s.count), _pct(share)])
    return lines


_CSV_FIELDS = (
    "source",
    "task",
    "model",
    "strategy",
    "scoring",
    "reader",
    "data_source",
    "n",
    "items",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "accuracy_ci_method",
    "accuracy_valid",
    "first_invalid",
    "reasked",
    "invalid_rate",
    "precision",
    "recall",
    "f1",
    "yes_rate",
    "balanced_accuracy",
    "tp",
    "fp",
    "tn",
    "fn",
    "invalid",
    "always_no",
    "always_yes",
    "length_only",
    "runs",
)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def csv_table(rows: Sequence[ResultRow]) -> Any:
    """One line per (task, data source, model, strategy, scoring, reader), ratios as fractions (not
    %), then the paper's reference numbers as lines with ``source`` = "paper", the model
    naming the paper's table, and only the accuracy filled (``source`` tells measured from
    published; ``data_source`` is what was judged; ``first_invalid`` and ``reasked`` count
    judgements, ``invalid`` those still unreadable after the re-ask), as a
    ``halugen.tables.TableData`` (``halugen report --format csv``)."""
    from ..tables import TableData

    lines: list[list[Any]] = []
    for r in sorted(rows, key=row_key):
        m, b = r.metrics, r.baselines
        lo, hi = m.accuracy_ci if m.accuracy_ci is not None else (None, None)
        yes_no = r.strategy != "contrast"  # the Yes/No metrics do not apply to contrast

        def only(value: float | None, yes_no: bool = yes_no) -> str:
            return _num(value) if yes_no else ""

        lines.append(
            [
                "measured",
                r.task,
                r.model,
                r.strategy,
                r.scoring,
                r.reader,
                r.source,
                m.n,
                r.items,
                _num(m.accuracy),
                _num(lo),
                _num(hi),
                m.interval + (f" ({m.clusters} clusters)" if m.clusters else ""),
                _num(m.accuracy_valid),
                r.first_invalid,
                r.reasked,
                _num(m.invalid_rate),
                only(m.precision),
                only(m.recall),
                only(m.f1),
                only(m.yes_rate),
                only(m.balanced_accuracy),
                m.tp,
                m.fp,
                m.tn,
                m.fn,
                m.invalid,
                _num(b.get("always_no")),
                _num(b.get("always_yes")),
                _num(b.get("length_only")),
                " ".join(r.runs),
            ]
        )
    for strategy, tasks in PAPER_CHATGPT.items():
        for task, value in tasks.items():
            line = dict.fromkeys(_CSV_FIELDS, "")
            line.update(
                source="paper",
                task=task,
                model=paper_label(strategy),
                strategy=strategy,
                accuracy=_num(value / 100),
            )
            lines.append([line[f] for f in _CSV_FIELDS])
    return TableData(None, _CSV_FIELDS, lines, name="results")


def _task_notes(names: Sequence[str], tasks: TaskCatalog | None) -> list[str]:
    """What each task folder's task is, as its task.toml describes it."""
    return [f"{task_title(t, tasks)}: {d}" for t in names if (d := task_description(t, tasks))]


def report_tables(rows: Sequence[ResultRow], tasks: TaskCatalog | None = None) -> list[Any]:
    """The accuracy table and one details table per task as ``halugen.tables.TableData``,
    for any of the table formats (``halugen report --format``); ``tasks`` names the task
    folders' tasks by their titles."""
    from ..tables import TableData

    names = _tasks(rows)
    tables = [
        TableData(
            "Recognition accuracy (%)",
            ["Model", "Strategy", *(task_title(t, tasks) for t in names)],
            [[m, s, *(c.get(t, _DASH) for t in names)] for m, s, c in _summary(rows)],
            name="accuracy",
            caption=" ".join([_NOTE, *_task_notes(names, tasks)]),
            align=["l", "l", *("r" for _ in names)],
        )
    ]
    for task, group in _by_task(rows):
        tables.append(
            TableData(
                f"{task_title(task, tasks)}: details",
                list(_DETAIL_HEADERS),
                [_detail(r) for r in group],
                name=f"details_{task}",
                caption=" ".join(_detail_notes(group)) or None,
                align=["l" if i < _FIRST_NUMBER else "r" for i in range(len(_DETAIL_HEADERS))],
            )
        )
    shapes = _shape_lines(rows, tasks)
    if shapes:
        tables.append(
            TableData(
                _SHAPES_TITLE,
                list(_SHAPE_HEADERS),
                shapes,
                name="reply_shapes",
                caption=_SHAPES_NOTE,
                align=["l" if i < _SHAPE_FIRST_NUMBER else "r" for i in range(len(_SHAPE_HEADERS))],
            )
        )
    return tables
