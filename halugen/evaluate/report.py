"""Recognition results as the paper's tables, for the one table renderer (``tables.py``).

``results_from_store`` groups the ``judgements`` table by (task, data source, model, strategy,
scoring) -- what was judged (a file, a generation run, the store's samples), by whom, how, and
whether the verdict was read from text or scored from logprobs -- so a row never pools
different data or different scoring, and says which it is. ``report_tables`` lays the rows out
as one accuracy table (rows: strategy and model, columns: the four tasks, with HaluEval's
ChatGPT numbers as a reference row under each strategy, named by the paper's table it comes
from) followed by one table of all metrics per task, where invalid first replies, re-asks and
final invalids are counted apart, and one table of the most common reply shapes per model,
with what each was read as; ``csv_table`` as one line per row with every metric as a fraction.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PureWindowsPath
from typing import Any

import orjson

from ..llm.replies import visible_text
from .judge import STRATEGIES
from .metrics import Judged, Metrics, baselines, compute

__all__ = [
    "PAPER_CHATGPT",
    "PAPER_FOOTNOTE",
    "PAPER_LABEL",
    "PAPER_TABLE",
    "PAPER_TABLE8_BASELINE",
    "ReplyShape",
    "ResultRow",
    "csv_table",
    "paper_label",
    "paper_reference",
    "reply_shape",
    "report_tables",
    "results_from_store",
]

# HaluEval (Li et al., EMNLP 2023; arXiv 2305.11747): ChatGPT's recognition accuracy (%),
# strategy -> task. The plain row is Table 5 (accuracy of the LLMs); the strategy rows are
# Table 8 (ChatGPT with knowledge retrieval, CoT reasoning and sample contrast), whose own
# ChatGPT row gives General 86.22 where Table 5 gives 79.44 (PAPER_FOOTNOTE).
PAPER_CHATGPT: dict[str, dict[str, float]] = {
    "plain": {"qa": 62.59, "dialogue": 72.40, "summarization": 58.53, "general": 79.44},
    "knowledge": {"qa": 76.83, "dialogue": 73.80, "general": 90.73},
    "cot": {"qa": 59.58, "dialogue": 71.39, "summarization": 61.21, "general": 86.50},
    "contrast": {"qa": 49.19, "dialogue": 68.67, "summarization": 49.46},
}
PAPER_TABLE: dict[str, str] = {
    "plain": "Table 5",
    "knowledge": "Table 8",
    "cot": "Table 8",
    "contrast": "Table 8",
}
# Table 8's own row for ChatGPT without a strategy: it differs from Table 5 on General only.
PAPER_TABLE8_BASELINE: dict[str, float] = {
    "qa": 62.59,
    "dialogue": 72.40,
    "summarization": 58.53,
    "general": 86.22,
}
PAPER_LABEL = "ChatGPT (HaluEval)"
PAPER_FOOTNOTE = (
    "HaluEval Table 8 (knowledge, CoT, contrast) gives ChatGPT without a strategy "
    f"{PAPER_TABLE8_BASELINE['general']:.2f} on General, against "
    f"{PAPER_CHATGPT['plain']['general']:.2f} in Table 5 (plain): compare Table 8's General "
    "cells with 86.22."
)


def paper_label(strategy: str) -> str:
    """The label of the paper's reference row for ``strategy``, naming its table."""
    return f"ChatGPT (HaluEval {PAPER_TABLE.get(strategy, 'Table 8')})"


def paper_reference() -> list[dict[str, Any]]:
    """Every paper figure halugen prints, as records (model, strategy, task, accuracy as a
    fraction, table), for ``report --format json``."""
    return [
        {
            "model": paper_label(strategy),
            "strategy": strategy,
            "task": task,
            "accuracy": value / 100,
            "table": PAPER_TABLE[strategy],
        }
        for strategy, tasks in PAPER_CHATGPT.items()
        for task, value in tasks.items()
    ]


TASK_TITLES = {
    "qa": "QA",
    "dialogue": "Dialogue",
    "summarization": "Summarization",
    "general": "General",
}
_DASH = "—"
_NOTE = (
    "Accuracy in %, invalid replies counted wrong (the paper's convention); ± is the half-width "
    "of the Wilson 95% interval. ChatGPT (HaluEval Table n): the paper's published numbers, for "
    f"reference, from the table named. {PAPER_FOOTNOTE}"
)
_REASK_NOTE = (
    "Invalid 1st: first replies the reader could not read; each was asked once more "
    "(Re-asked); Invalid: still unreadable after that, counted wrong."
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
    first_invalid: int = 0  # judgements whose first reply was unreadable
    reasked: int = 0  # judgements asked a second time (an unreadable first reply)
    # the most common shapes of the first replies, with what they were read as
    shapes: tuple[ReplyShape, ...] = ()


@dataclass(frozen=True)
class ReplyShape:
    """A normalised first reply (``reply_shape``), what it was read as, how often."""

    shape: str
    verdict: str
    count: int


SHAPES_PER_ROW = 5
_SHAPE_EDGE = 24  # characters kept at each end of a long reply
_DIGITS = re.compile(r"\d+")


def reply_shape(raw: str | None) -> str:
    """A reply as a short shape: whitespace collapsed, digits as 0, a reasoning block as
    "<think>…</think>", a long reply cut in the middle. Replies that differ only in their
    numbers or their middle fall together, so the common shapes show what judges write."""
    text = raw or ""
    shown = visible_text(text)
    prefix = "<think>…</think> " if shown != text.strip() and shown else ""
    body = _DIGITS.sub("0", " ".join(shown.split()))
    if len(body) > 2 * _SHAPE_EDGE + 3:
        body = f"{body[:_SHAPE_EDGE].rstrip()} … {body[-_SHAPE_EDGE:].lstrip()}"
    return (prefix + body) if body else ("<think>… (no answer)" if text.strip() else "(empty)")


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


def run_source(config_json: str | None, run_id: str, *, names: bool = False) -> tuple[str, str]:
    """(data source, scoring) of an eval run, from its stored settings.

    Files are named as given (``names``: by their file names only); a generation run by its
    id; the store's samples without ``--gen-run`` by the eval run itself, since what the
    store held may differ from one eval to the next: two such runs are never pooled.
    """
    try:
        config = orjson.loads(config_json) if config_json else {}
    except orjson.JSONDecodeError:
        config = {}
    if not isinstance(config, dict):
        config = {}
    scoring = str(config.get("scoring") or "parse")
    if config.get("data"):
        shown = (PureWindowsPath(str(p)).name if names else str(p) for p in config["data"])
        return "file: " + ", ".join(shown), scoring
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
    named: dict[str, str] = {}  # a source as given -> by file names
    for run_id, config_json, has_p in cur.fetchall():
        source, scoring = run_source(config_json, run_id)
        named[source] = run_source(config_json, run_id, names=True)[0]
        if config_json is None:  # a run the store does not describe
            source, scoring = f"unknown: run {run_id}", "logprobs" if has_p else "parse"
            named[source] = source
        sources[run_id] = (source, scoring)
    # files are shown by name (a directory of the user's machine is no result), unless two
    # different paths share a name: those stay as given, so they are never pooled
    share = Counter(named.values())
    sources = {
        run_id: (named[source] if share[named[source]] == 1 else source, scoring)
        for run_id, (source, scoring) in sources.items()
    }
    clusters = _dialogue_clusters(cur)
    sql = (
        "SELECT task, model, strategy, run_id, item_key, item_id, shown, truth, verdict, "
        "shown_length, created_at, COALESCE(asked, 1), COALESCE(first_verdict, verdict), "
        f"COALESCE(first_raw, raw) FROM judgements j {where} "
        # item order fixes the length baseline's folds: keys are hashes, unrelated to truth
        "ORDER BY task, model, strategy, item_key, shown, created_at"
    )
    cur.execute(sql, params)
    latest: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    while batch := cur.fetchmany(10_000):
        for task, model, strategy, run_id, key, item_id, shown, *rest in batch:
            source, scoring = sources[run_id]
            group = (task, source, model, strategy, scoring)
            # rows arrive oldest first: the last one written wins
            latest[(*group, key, shown)] = (run_id, key, item_id, *rest)
    groups: dict[tuple[str, ...], _Group] = {}
    for (task, source, model, strategy, scoring, _, _), value in latest.items():
        run_id, key, item_id, truth, verdict, length, _, asked, first, first_raw = value
        g = groups.setdefault((task, source, model, strategy, scoring), _Group())
        cluster = clusters.get((task, item_id), "") if source.startswith(("run:", "store:")) else ""
        g.judged.append(Judged(bool(truth), verdict, length, cluster))
        g.runs.add(run_id)
        g.keys.add(key)
        g.first_invalid += first == "invalid"
        g.reasked += asked > 1
        g.shapes[(reply_shape(first_raw), first)] += 1
    rows = [
        ResultRow(
            task=task,
            model=model,
            strategy=strategy,
            metrics=compute(g.judged),
            baselines=dict(_NO_BASELINES) if strategy == "contrast" else baselines(g.judged),
            runs=tuple(sorted(g.runs)),
            source=source,
            scoring=scoring,
            items=len(g.keys),
            first_invalid=g.first_invalid,
            reasked=g.reasked,
            shapes=tuple(
                ReplyShape(shape, verdict, count)
                for (shape, verdict), count in sorted(
                    g.shapes.items(), key=lambda kv: (-kv[1], kv[0])
                )[:SHAPES_PER_ROW]
            ),
        )
        for (task, source, model, strategy, scoring), g in groups.items()
    ]
    return sorted(rows, key=_row_key)


@dataclass
class _Group:
    judged: list[Judged] = field(default_factory=list)
    runs: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)
    first_invalid: int = 0
    reasked: int = 0
    shapes: Counter[tuple[str, str]] = field(default_factory=Counter)


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
            cells = {t: f"{v:.2f}" for t, v in paper.items()}
            lines.append((paper_label(strategy), strategy, cells))
    return lines


def _is_paper(label: str) -> bool:
    return label.startswith(PAPER_LABEL[:-1])


_DETAIL_HEADERS = (
    "Model",
    "Strategy",
    "Scoring",
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


_SHAPES_TITLE = "First replies: the most common shapes"
_SHAPES_NOTE = (
    f"Up to {SHAPES_PER_ROW} per task, model and strategy: each judge's first reply with "
    "whitespace collapsed, digits as 0 and a long reply cut in the middle, what the reader made "
    "of it, and how often it came (share of that row's judgements)."
)
_SHAPE_HEADERS = ("Task", "Model", "Strategy", "Reply", "Read as", "Count", "Share")
_SHAPE_FIRST_NUMBER = 5


def _shape_lines(rows: Sequence[ResultRow]) -> list[list[str]]:
    lines = []
    for r in sorted(rows, key=_row_key):
        label = _label(r.model, r.scoring)
        for s in r.shapes:
            share = s.count / r.metrics.n if r.metrics.n else None
            task = TASK_TITLES.get(r.task, r.task)
            lines.append([task, label, r.strategy, s.shape, s.verdict, str(s.count), _pct(share)])
    return lines


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
    """One line per (task, data source, model, strategy, scoring), ratios as fractions (not
    %), then the paper's reference numbers as lines with ``source`` = "paper", the model
    naming the paper's table, and only the accuracy filled (``source`` tells measured from
    published; ``data_source`` is what was judged; ``first_invalid`` and ``reasked`` count
    judgements, ``invalid`` those still unreadable after the re-ask), as a
    ``halugen.tables.TableData`` (``halugen report --format csv``)."""
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
    shapes = _shape_lines(rows)
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
