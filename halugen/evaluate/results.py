"""Recognition results read from the store: one ``ResultRow`` per (task, data source, model,
strategy, scoring, reader), with its metrics, baselines and most common first-reply shapes.
The reader (``readers``: strict or lenient) is each judgement's own; rows written before it
was recorded were read leniently and say so."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PureWindowsPath
from typing import Any

import orjson

from ..reply_text import visible_text
from ..store.judgement_queries import dialogue_clusters, eval_run_settings, judgement_rows
from ..tasks.catalog import TaskCatalog
from ..tasks.schema import STRATEGIES
from .metrics import Judged, Metrics, baselines, compute

__all__ = [
    "SHAPES_PER_ROW",
    "TASK_TITLES",
    "LatestJudgement",
    "ReplyShape",
    "ResultRow",
    "latest_judgements",
    "order_key",
    "reply_shape",
    "results_from_store",
    "row_key",
    "run_source",
    "task_description",
    "task_title",
]

# the paper's four tasks, in its order, with their column titles
TASK_TITLES = {
    "qa": "QA",
    "dialogue": "Dialogue",
    "summarization": "Summarization",
    "general": "General",
}
# contrast picks one text of two: the Yes/No baselines do not apply
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
    reader: str = "strict"  # strict (the reply contract) | lenient (interpreted prose)
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


def task_title(task: str, tasks: TaskCatalog | None = None) -> str:
    """How tables name ``task``: the paper's title for its four, a task folder's ``title``
    (task.toml) when ``tasks`` holds the folder (``tasks.stored.recall``), else its name."""
    if task in TASK_TITLES:
        return TASK_TITLES[task]
    return _folder_task(task, tasks)[0] or task


def task_description(task: str, tasks: TaskCatalog | None = None) -> str:
    """A task folder's one-line ``description`` (task.toml); "" for the built-in tasks."""
    return "" if task in TASK_TITLES else _folder_task(task, tasks)[1]


def _folder_task(task: str, tasks: TaskCatalog | None) -> tuple[str, str]:
    spec = tasks.get(task) if tasks is not None else None
    return (spec.title, spec.description) if spec is not None else ("", "")


def order_key(value: str, known: Sequence[str]) -> tuple[int, str]:
    """Sorts ``value`` in the order of ``known``, then any other value by name."""
    return (known.index(value), "") if value in known else (len(known), value)


def row_key(row: ResultRow) -> tuple[Any, ...]:
    """The order rows are shown in: task, strategy, model, scoring, reader, data source."""
    return (
        order_key(row.task, tuple(TASK_TITLES)),
        order_key(row.strategy, STRATEGIES),
        row.model,
        row.scoring,
        row.reader,
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


@dataclass(frozen=True)
class LatestJudgement:
    """The judgement that counts for one item shown one way in one result group: the
    latest written. ``group`` is (task, data source, model, strategy, scoring, reader)."""

    group: tuple[str, str, str, str, str, str]
    run_id: str
    item_key: str
    shown: str
    judged: Judged
    asked: int
    first_verdict: str
    first_raw: str | None


def latest_judgements(conn: Any, run_ids: Sequence[str] | None = None) -> list[LatestJudgement]:
    """The judgements that count, per (task, data source, model, strategy, scoring, reader)
    group.

    ``conn`` is a ``Store`` or a DuckDB connection; ``run_ids`` limits the runs read (None:
    all). Runs pool into one group only when all six agree (a figure never mixes readers);
    within a group, the same item
    shown the same way is counted once (the latest). Judgements of samples from one
    OpenDialKG dialogue share a cluster (``Judged.cluster``).
    """
    conn = getattr(conn, "conn", conn)
    if run_ids is not None and not run_ids:
        return []
    cur = conn.cursor() if hasattr(conn, "cursor") else conn
    sources: dict[str, tuple[str, str]] = {}
    named: dict[str, str] = {}  # a source as given -> by file names
    for run_id, config_json, has_p in eval_run_settings(cur, run_ids):
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
    clusters = dialogue_clusters(cur)
    latest: dict[tuple[Any, ...], LatestJudgement] = {}
    for row in judgement_rows(cur, run_ids):
        task, model, strategy, run_id, key, item_id, shown, truth, verdict, length = row[:10]
        asked, first, first_raw, reader = row[11:]
        source, scoring = sources[run_id]
        group = (task, source, model, strategy, scoring, reader)
        cluster = clusters.get((task, item_id), "") if source.startswith(("run:", "store:")) else ""
        # rows arrive oldest first: the last one written wins
        latest[(*group, key, shown)] = LatestJudgement(
            group=group,
            run_id=run_id,
            item_key=key,
            shown=shown,
            judged=Judged(bool(truth), verdict, length, cluster),
            asked=asked,
            first_verdict=first,
            first_raw=first_raw,
        )
    return list(latest.values())


def results_from_store(conn: Any, run_ids: Sequence[str] | None = None) -> list[ResultRow]:
    """Rows for every (task, data source, model, strategy, scoring, reader) in ``judgements``
    (``latest_judgements``): ``n`` counts distinct prompts, and when judgements share a
    dialogue the accuracy interval resamples dialogues (``metrics.cluster_bootstrap``).
    """
    groups: dict[tuple[str, ...], _Group] = {}
    for j in latest_judgements(conn, run_ids):
        g = groups.setdefault(j.group, _Group())
        g.judged.append(j.judged)
        g.runs.add(j.run_id)
        g.keys.add(j.item_key)
        g.first_invalid += j.first_verdict == "invalid"
        g.reasked += j.asked > 1
        g.shapes[(reply_shape(j.first_raw), j.first_verdict)] += 1
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
            reader=reader,
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
        for (task, source, model, strategy, scoring, reader), g in groups.items()
    ]
    return sorted(rows, key=row_key)


@dataclass
class _Group:
    judged: list[Judged] = field(default_factory=list)
    runs: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)
    first_invalid: int = 0
    reasked: int = 0
    shapes: Counter[tuple[str, str]] = field(default_factory=Counter)
