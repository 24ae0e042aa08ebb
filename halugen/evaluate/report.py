"""Recognition results as the paper's tables, for the one table renderer (``tables.py``).

``results_from_store`` groups the ``judgements`` table by (task, data source, model, strategy,
scoring) -- what was judged (a file, a generation run, the store's samples), by whom, how, and
whether the verdict was read from text or scored from logprobs -- so a row never pools
different data or different scoring, and says which it is. ``report_tables`` lays the rows out
as one accuracy table (rows: strategy and model, columns: the four tasks, with HaluEval's
ChatGPT numbers as a labelled reference row under each strategy) followed by one table of all
metrics per task; ``csv_table`` as one line per row with every metric as a fraction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .judge import STRATEGIES
from .metrics import Judged, Metrics, baselines, compute

__all__ = [
    "PAPER_CHATGPT",
    "PAPER_LABEL",
    "ResultRow",
    "csv_table",
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
    """Metrics of one (task, data source, model, strategy, scoring) group."""

    task: str
    model: str
    strategy: str
    metrics: Metrics
    # always_no / always_yes / length_only accuracies; all None for contrast (not Yes/No)
    baselines: Mapping[str, float | None]
    runs: tuple[str, ...] = field(default=())
    # what was judged: "file: a.json", "run: <generation run>", "store: eval run <id>"
    source: str = ""
    scoring: str = "parse"  # parse (the verdict read from text) | logprobs (P(Yes))
    items: int = 0  # distinct items among the judgements (one item may be shown both ways)


def _order(value: str, known: Sequence[str]) -> tuple[int, str]:
    return (known.index(value), "") if value in known else (len(known), value)


def _row_key(row: ResultRow) -> tuple[Any, ...]:
    return (
        _order(row.task, tuple(TASK_TITLES)),
        _order(row.strategy, STRATEGIES),
        row.model,
        row.scoring,
        row.source,
    )


def run_source(config_json: str | None, run_id: str) -> tuple[str, str]:
    """(data source, scoring) of an eval run, from its stored settings.

    Files are named as given; a generation run by its id; the store's samples without
    ``--gen-run`` by the eval run itself, since what the store held may differ from one eval
    to the next: two such runs are never pooled.
    """
    try:
        config = orjson.loads(config_json) if config_json else {}
    except orjson.JSONDecodeError:
        config = {}
    if not isinstance(config, dict):
        config = {}
    scoring = str(config.get("scoring") or "parse")
    if config.get("data"):
        return "file: " + ", ".join(str(p) for p in config["data"]), scoring
    if config.get("gen_run"):
        return f"run: {config['gen_run']}", scoring
    return f"store: eval run {run_id}", scoring


def _dialogue_clusters(cur: Any) -> dict[tuple[str, str], str]:
    """(task, seed id) -> its OpenDialKG dialogue (file and row) for the store's samples."""
    cur.execute(
        "SELECT DISTINCT task, seed_id, source_file, source_line FROM samples "
        "WHERE dataset = 'opendialkg' AND seed_id IS NOT NULL"
    )
    return {(t, sid): f"{f}:{line}" for t, sid, f, line in cur.fetchall()}


def results_from_store(conn: Any, run_ids: Sequence[str] | None = None) -> list[ResultRow]:
    """Rows for every (task, data source, model, strategy, scoring) in ``judgements``.

    ``conn`` is a ``Store`` or a DuckDB connection; ``run_ids`` limits the runs read (None:
    all). Runs pool into one row only when all five agree; within a row, the same item shown
    the same way is counted once (the latest), so ``n`` counts distinct prompts. Judgements
    of samples from one OpenDialKG dialogue share a cluster, and the accuracy interval then
    resamples dialogues (``metrics.cluster_bootstrap``).
    """
    conn = getattr(conn, "conn", conn)
    where, params = "", []
    if run_ids is not None:
        if not run_ids:
            return []
        where = f"WHERE j.run_id IN ({', '.join('?' for _ in run_ids)})"
        params = list(run_ids)
    cur = conn.cursor() if hasattr(conn, "cursor") else conn
    cur.execute(
        f"SELECT DISTINCT j.run_id, r.config_json, bool_or(j.p_yes IS NOT NULL) OVER "
        f"(PARTITION BY j.run_id) FROM judgements j LEFT JOIN runs r USING (run_id) {where}",
        params,
    )
    sources: dict[str, tuple[str, str]] = {}
    for run_id, config_json, has_p in cur.fetchall():
        source, scoring = run_source(config_json, run_id)
        if config_json is None:  # a run the store does not describe
            source, scoring = f"unknown: run {run_id}", "logprobs" if has_p else "parse"
        sources[run_id] = (source, scoring)
    clusters = _dialogue_clusters(cur)
    sql = (
        "SELECT task, model, strategy, run_id, item_key, item_id, shown, truth, verdict, "
        f"shown_length, created_at FROM judgements j {where} "
        # item order fixes the length baseline's folds: keys are hashes, unrelated to truth
        "ORDER BY task, model, strategy, item_key, shown, created_at"
    )
    cur.execute(sql, params)
    latest: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    while batch := cur.fetchmany(10_000):
        for task, model, strategy, run_id, key, item_id, shown, truth, verdict, length, at in batch:
            source, scoring = sources[run_id]
            group = (task, source, model, strategy, scoring)
            # rows arrive oldest first: the last one written wins
            latest[(*group, key, shown)] = (run_id, key, item_id, truth, verdict, length, at)
    groups: dict[tuple[str, ...], tuple[list[Judged], set[str], set[str]]] = {}
    for (task, source, model, strategy, scoring, _, _), value in latest.items():
        run_id, key, item_id, truth, verdict, length, _ = value
        judged, runs, keys = groups.setdefault((task, source, model, strategy, scoring),
                                               ([], set(), set()))  # fmt: skip
        cluster = clusters.get((task, item_id), "") if source.startswith(("run:", "store:")) else ""
        judged.append(Judged(bool(truth), verdict, length, cluster))
        runs.add(run_id)
        keys.add(key)
    rows = [
        ResultRow(
            task=task,
            model=model,
            strategy=strategy,
            metrics=compute(judged),
            baselines=dict(_NO_BASELINES) if strategy == "contrast" else baselines(judged),
            runs=tuple(sorted(runs)),
            source=source,
            scoring=scoring,
            items=len(keys),
        )
        for (task, source, model, strategy, scoring), (judged, runs, keys) in groups.items()
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


def _label(model: str, scoring: str, source: str = "") -> str:
    label = model if scoring == "parse" else f"{model} ({scoring})"
    return f"{label} [{source}]" if source else label


def _summary(rows: Sequence[ResultRow]) -> list[tuple[str, str, dict[str, str]]]:
    """(model label, strategy, task -> cell) per line of the accuracy table, paper rows
    included: the measured models of a strategy, then the paper's row for it.

    A line is one (strategy, model, scoring); its cells may come from one source per task
    (a qa file and a dialogue file). When one task has several sources for the line, the
    line splits into one per source, named in its label: cells never pool sources.
    """
    by_line: dict[tuple[str, str, str], list[ResultRow]] = {}
    for r in sorted(rows, key=_row_key):
        by_line.setdefault((r.strategy, r.model, r.scoring), []).append(r)
    strategies = sorted({s for s, _, _ in by_line}, key=lambda s: _order(s, STRATEGIES))
    lines: list[tuple[str, str, dict[str, str]]] = []
    for strategy in strategies:
        for (s, model, scoring), group in sorted(by_line.items()):
            if s != strategy:
                continue
            tasks = [r.task for r in group]
            if len(tasks) == len(set(tasks)):
                lines.append(
                    (
                        _label(model, scoring),
                        strategy,
                        {r.task: _acc_cell(r.metrics) for r in group},
                    )
                )
                continue
            for source in dict.fromkeys(r.source for r in group):
                cells = {r.task: _acc_cell(r.metrics) for r in group if r.source == source}
                lines.append((_label(model, scoring, source), strategy, cells))
        paper = PAPER_CHATGPT.get(strategy)
        if paper:
            lines.append((PAPER_LABEL, strategy, {t: f"{v:.2f}" for t, v in paper.items()}))
    return lines


_DETAIL_HEADERS = (
    "Model",
    "Strategy",
    "Scoring",
    "Source",
    "n",
    "Items",
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
_FIRST_NUMBER = 4  # columns before it are text
_ACCURACY_COLUMN = 6


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
        row.source,
        str(m.n),
        str(row.items),
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


def _detail_notes(group: Sequence[ResultRow]) -> list[str]:
    notes = []
    if any(r.strategy == "contrast" for r in group):
        notes.append(_CONTRAST_NOTE)
    clustered = [r for r in group if r.metrics.interval != "wilson"]
    if clustered:
        counts = ", ".join(str(r.metrics.clusters) for r in clustered)
        notes.append(
            f"*: items from one dialogue are not independent; the interval resamples whole "
            f"dialogues (cluster bootstrap over {counts} dialogues)."
        )
    return notes


def _by_task(rows: Sequence[ResultRow]) -> list[tuple[str, list[ResultRow]]]:
    out = []
    for task in _tasks(rows):
        group = sorted((r for r in rows if r.task == task), key=_row_key)
        if group:
            out.append((task, group))
    return out


# -- tables ----------------------------------------------------------------------------


_CSV_FIELDS = (
    "source",
    "task",
    "model",
    "strategy",
    "scoring",
    "data_source",
    "n",
    "items",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "accuracy_ci_method",
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


def csv_table(rows: Sequence[ResultRow]) -> Any:
    """One line per (task, data source, model, strategy, scoring), ratios as fractions (not
    %), then the paper's reference numbers as lines with ``source`` = "paper" and only the
    accuracy filled (``source`` tells measured from published; ``data_source`` is what was
    judged), as a ``halugen.tables.TableData`` (``halugen report --format csv``)."""
    from ..tables import TableData

    lines: list[list[Any]] = []
    for r in sorted(rows, key=_row_key):
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
                r.source,
                m.n,
                r.items,
                _num(m.accuracy),
                _num(lo),
                _num(hi),
                m.interval + (f" ({m.clusters} clusters)" if m.clusters else ""),
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
            lines.append([line[f] for f in _CSV_FIELDS])
    return TableData(None, _CSV_FIELDS, lines, name="results")


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
        tables.append(
            TableData(
                f"{TASK_TITLES.get(task, task)}: details",
                list(_DETAIL_HEADERS),
                [_detail(r) for r in group],
                name=f"details_{task}",
                caption=" ".join(_detail_notes(group)) or None,
                align=["l" if i < _FIRST_NUMBER else "r" for i in range(len(_DETAIL_HEADERS))],
            )
        )
    return tables
