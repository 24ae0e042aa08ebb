"""Recognition results as the paper's tables: terminal (Rich), Markdown and CSV.

``results_from_store`` groups the ``judgements`` table by (task, model, strategy) and computes
each group's metrics and baselines; the renderers lay them out as one accuracy table (rows:
strategy and model, columns: the four tasks, with HaluEval's ChatGPT numbers as a labelled
reference row under each strategy) followed by one table of all metrics per task.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from .judge import STRATEGIES
from .metrics import Judged, Metrics, baselines, compute

__all__ = [
    "PAPER_CHATGPT",
    "PAPER_LABEL",
    "ResultRow",
    "render_csv",
    "render_markdown",
    "render_rich",
    "report_tables",
    "results_from_store",
]

# HaluEval (Li et al., 2023): ChatGPT's recognition accuracy (%), strategy -> task.
PAPER_CHATGPT: dict[str, dict[str, float]] = {
    "plain": {"qa": 62.59, "dialogue": 72.40, "summarization": 58.53, "general": 79.44},
    "knowledge": {"qa": 76.83, "dialogue": 73.80},
    "cot": {"qa": 59.58, "dialogue": 71.39, "summarization": 61.21},
    "contrast": {"qa": 49.19, "dialogue": 68.67, "summarization": 49.46},
}
PAPER_LABEL = "ChatGPT (paper)"

TASK_TITLES = {
    "qa": "QA",
    "dialogue": "Dialogue",
    "summarization": "Summarization",
    "general": "General",
}
_DASH = "—"
_NOTE = (
    "Accuracy in %, invalid replies counted wrong (the paper's convention); ± is the half-width "
    f"of the Wilson 95% interval. {PAPER_LABEL}: HaluEval's published numbers, for reference."
)
_CONTRAST_NOTE = (
    "contrast: accuracy = right picks of the hallucinated text out of two (chance 50%); the "
    "Yes/No metrics and baselines do not apply."
)
_NO_BASELINES: dict[str, float | None] = {
    "always_no": None,
    "always_yes": None,
    "length_only": None,
}


@dataclass(frozen=True)
class ResultRow:
    """Metrics of one (task, model, strategy) group over the selected runs."""

    task: str
    model: str
    strategy: str
    metrics: Metrics
    # always_no / always_yes / length_only accuracies; all None for contrast (not Yes/No)
    baselines: Mapping[str, float | None]
    runs: tuple[str, ...] = field(default=())


def _order(value: str, known: Sequence[str]) -> tuple[int, str]:
    return (known.index(value), "") if value in known else (len(known), value)


def _row_key(row: ResultRow) -> tuple[Any, ...]:
    return (_order(row.task, tuple(TASK_TITLES)), _order(row.strategy, STRATEGIES), row.model)


def results_from_store(conn: Any, run_ids: Sequence[str] | None = None) -> list[ResultRow]:
    """Rows for every (task, model, strategy) in the ``judgements`` table.

    ``conn`` is a ``Store`` or a DuckDB connection; ``run_ids`` limits the runs read (None:
    all). Judgements of several runs with the same model and strategy are pooled; the same
    item judged twice within one run (a resumed run writing again) counts once, the latest.
    """
    conn = getattr(conn, "conn", conn)
    where, params = "", []
    if run_ids is not None:
        if not run_ids:
            return []
        where = f"WHERE run_id IN ({', '.join('?' for _ in run_ids)})"
        params = list(run_ids)
    sql = (
        "SELECT task, model, strategy, run_id, truth, verdict, shown_length FROM judgements "
        f"{where} QUALIFY row_number() OVER (PARTITION BY run_id, task, model, strategy, "
        "item_key, shown ORDER BY created_at DESC) = 1 "
        # item order fixes the length baseline's folds: keys are hashes, unrelated to truth
        "ORDER BY task, model, strategy, item_key, run_id, shown"
    )
    cur = conn.cursor() if hasattr(conn, "cursor") else conn
    cur.execute(sql, params)
    groups: dict[tuple[str, str, str], tuple[list[Judged], set[str]]] = {}
    while batch := cur.fetchmany(10_000):
        for task, model, strategy, run_id, truth, verdict, length in batch:
            judged, runs = groups.setdefault((task, model, strategy), ([], set()))
            judged.append(Judged(bool(truth), verdict, length))
            runs.add(run_id)
    rows = [
        ResultRow(
            task=task,
            model=model,
            strategy=strategy,
            metrics=compute(judged),
            baselines=dict(_NO_BASELINES) if strategy == "contrast" else baselines(judged),
            runs=tuple(sorted(runs)),
        )
        for (task, model, strategy), (judged, runs) in groups.items()
    ]
    return sorted(rows, key=_row_key)


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


def _summary(rows: Sequence[ResultRow]) -> list[tuple[str, str, dict[str, str]]]:
    """(model label, strategy, task -> cell) per line of the accuracy table, paper rows
    included: the measured models of a strategy, then the paper's row for it."""
    by_line: dict[tuple[str, str], dict[str, str]] = {}
    for r in sorted(rows, key=_row_key):
        by_line.setdefault((r.strategy, r.model), {})[r.task] = _acc_cell(r.metrics)
    strategies = sorted({s for s, _ in by_line}, key=lambda s: _order(s, STRATEGIES))
    lines: list[tuple[str, str, dict[str, str]]] = []
    for strategy in strategies:
        models = sorted(m for s, m in by_line if s == strategy)
        lines.extend((m, strategy, by_line[(strategy, m)]) for m in models)
        paper = PAPER_CHATGPT.get(strategy)
        if paper:
            lines.append((PAPER_LABEL, strategy, {t: f"{v:.2f}" for t, v in paper.items()}))
    return lines


_DETAIL_HEADERS = (
    "Model",
    "Strategy",
    "n",
    "Accuracy [95% CI]",
    "Acc. valid",
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


def _detail(row: ResultRow) -> list[str]:
    m, b = row.metrics, row.baselines
    acc = _DASH
    if m.accuracy is not None and m.accuracy_ci is not None:
        acc = f"{_pct(m.accuracy)} [{_pct(m.accuracy_ci[0])}, {_pct(m.accuracy_ci[1])}]"
    yes_no = row.strategy != "contrast"

    def only(value: float | None) -> str:
        return _pct(value) if yes_no else _DASH

    return [
        row.model,
        row.strategy,
        str(m.n),
        acc,
        _pct(m.accuracy_valid),
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


def _by_task(rows: Sequence[ResultRow]) -> list[tuple[str, list[ResultRow]]]:
    out = []
    for task in _tasks(rows):
        group = sorted((r for r in rows if r.task == task), key=_row_key)
        if group:
            out.append((task, group))
    return out


# -- renderers ---------------------------------------------------------------------------


def render_rich(rows: Sequence[ResultRow]) -> list[Table]:
    """The accuracy table, then one details table per task; print each with a Console."""
    tasks = _tasks(rows)
    main = Table(title="Recognition accuracy (%)", caption=_NOTE, title_justify="left")
    main.add_column("Model")
    main.add_column("Strategy")
    for t in tasks:
        main.add_column(TASK_TITLES.get(t, t), justify="right")
    previous = None
    for model, strategy, cells in _summary(rows):
        if previous is not None and strategy != previous:
            main.add_section()
        previous = strategy
        style = "dim italic" if model == PAPER_LABEL else None
        main.add_row(model, strategy, *(cells.get(t, _DASH) for t in tasks), style=style)
    tables: list[Table] = [main]
    for task, group in _by_task(rows):
        caption = _CONTRAST_NOTE if any(r.strategy == "contrast" for r in group) else None
        detail = Table(
            title=f"{TASK_TITLES.get(task, task)}: details", caption=caption, title_justify="left"
        )
        for i, header in enumerate(_DETAIL_HEADERS):
            detail.add_column(header, justify="left" if i < 2 else "right", no_wrap=i == 3)
        for r in group:
            detail.add_row(*_detail(r))
        tables.append(detail)
    return tables


def _md_table(headers: Sequence[str], lines: Iterable[Sequence[str]], right_from: int) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    align = ["---" if i < right_from else "---:" for i in range(len(headers))]
    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "| " + " | ".join(align) + " |"]
    out.extend("| " + " | ".join(esc(c) for c in line) + " |" for line in lines)
    return "\n".join(out)


def render_markdown(rows: Sequence[ResultRow]) -> str:
    """The same tables as Markdown (GitHub pipe tables)."""
    tasks = _tasks(rows)
    parts = [
        "## Recognition accuracy (%)",
        "",
        _md_table(
            ["Model", "Strategy", *(TASK_TITLES.get(t, t) for t in tasks)],
            ([m, s, *(c.get(t, _DASH) for t in tasks)] for m, s, c in _summary(rows)),
            right_from=2,
        ),
        "",
        _NOTE,
    ]
    for task, group in _by_task(rows):
        parts += [
            "",
            f"### {TASK_TITLES.get(task, task)}: details",
            "",
            _md_table(_DETAIL_HEADERS, (_detail(r) for r in group), right_from=2),
        ]
        if any(r.strategy == "contrast" for r in group):
            parts += ["", _CONTRAST_NOTE]
    return "\n".join(parts) + "\n"


_CSV_FIELDS = (
    "source",
    "task",
    "model",
    "strategy",
    "n",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "accuracy_valid",
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


def render_csv(rows: Sequence[ResultRow]) -> str:
    """One line per (task, model, strategy), ratios as fractions (not %), then the paper's
    reference numbers as lines with ``source`` = "paper" and only the accuracy filled."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(_CSV_FIELDS)
    for r in sorted(rows, key=_row_key):
        m, b = r.metrics, r.baselines
        lo, hi = m.accuracy_ci if m.accuracy_ci is not None else (None, None)
        yes_no = r.strategy != "contrast"  # the Yes/No metrics do not apply to contrast

        def only(value: float | None, yes_no: bool = yes_no) -> str:
            return _num(value) if yes_no else ""

        w.writerow(
            [
                "measured",
                r.task,
                r.model,
                r.strategy,
                m.n,
                _num(m.accuracy),
                _num(lo),
                _num(hi),
                _num(m.accuracy_valid),
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
                model=PAPER_LABEL,
                strategy=strategy,
                accuracy=_num(value / 100),
            )
            w.writerow([line[f] for f in _CSV_FIELDS])
    return buf.getvalue()


def report_tables(rows: Sequence[ResultRow]) -> list[Any]:
    """The accuracy table and one details table per task as ``halugen.tables.TableData``,
    for any of the table formats (``halugen report --format``)."""
    from ..tables import TableData

    tasks = _tasks(rows)
    tables = [
        TableData(
            "Recognition accuracy (%)",
            ["Model", "Strategy", *(TASK_TITLES.get(t, t) for t in tasks)],
            [[m, s, *(c.get(t, _DASH) for t in tasks)] for m, s, c in _summary(rows)],
            name="accuracy",
            caption=_NOTE,
            align=["l", "l", *("r" for _ in tasks)],
        )
    ]
    for task, group in _by_task(rows):
        contrast = any(r.strategy == "contrast" for r in group)
        tables.append(
            TableData(
                f"{TASK_TITLES.get(task, task)}: details",
                list(_DETAIL_HEADERS),
                [_detail(r) for r in group],
                name=f"details_{task}",
                caption=_CONTRAST_NOTE if contrast else None,
                align=["l", "l", *("r" for _ in _DETAIL_HEADERS[2:])],
            )
        )
    return tables
