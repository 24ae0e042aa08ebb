"""The store side of topic analysis: documents and failure flags in, topic tables out.

A document is the part of a sample that says what it is about, as the task's task.toml says
(``fields.topic``): QA the knowledge and the question, dialogue the knowledge and the
dialogue history, summarization the (reference) summary, general the user query and the
response.

A sample is a failure of an eval run when the run showed its hallucinated answer (or, with
the contrast strategy, both answers) and the model's verdict was "no": it missed the
hallucination. Samples are matched to judgements by the evaluated item's key, which
``halugen eval`` computes as the fingerprint of the task and the sample's fields (see
``halugen/evaluate/items.py``; a test keeps the two in step). General items are matched by
their annotation item id. Judgements of HaluEval files (not of samples in the store) match
no sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import UsageError
from ..records import fingerprint
from ..store import corpus_queries
from ..store.atomic import insert_at_once
from ..store.db import now
from ..store.rows import TopicResultRow
from ..tasks.base import TaskSpec
from .topics import TopicReport

__all__ = [
    "EvalRunInfo",
    "choose_eval_run",
    "document_fields",
    "documents_for",
    "documents_from_files",
    "latest_eval_run",
    "save_reports",
]


def document_fields(spec: TaskSpec) -> tuple[str, ...]:
    """The fields joined into a document of the task ``spec``: its task.toml's
    ``fields.topic`` (QA: knowledge and question; summarization: the reference summary)."""
    return spec.topic_fields


def _connection(conn: Any) -> Any:
    """Accept a Store or a DuckDB connection."""
    return getattr(conn, "conn", conn)


def latest_eval_run(conn: Any, task: str) -> str | None:
    """The eval run with the most recent judgements of ``task``, or None when there is none."""
    return corpus_queries.latest_eval_run(_connection(conn), task)


@dataclass(frozen=True)
class EvalRunInfo:
    """Where failures come from: an eval run of a task, its model and strategy."""

    run_id: str
    model: str
    strategy: str
    judgements: int
    others: int = 0  # other eval runs of the task, not chosen

    def describe(self) -> str:
        return f"eval run {self.run_id} ({self.model}, {self.strategy} strategy)"


def _eval_runs(db: Any, task: str) -> list[EvalRunInfo]:
    """Eval runs of ``task``, newest judgements first."""
    rows = corpus_queries.eval_runs_of_task(db, task)
    return [EvalRunInfo(r, m, s, n) for r, m, s, n in rows]


def choose_eval_run(conn: Any, task: str, eval_run: str | None = None) -> EvalRunInfo | None:
    """The eval run whose failures a topic analysis of ``task`` flags, described.

    ``eval_run`` names it (a UsageError when it has no judgements of the task). Without it:
    the newest run of the ``plain`` strategy, as HaluEval analysed plain recognition; else
    the newest run of another Yes/No strategy; else the newest run (contrast, whose
    failures are wrong picks). None when the task has no eval run. ``others`` counts the
    eval runs of the task not chosen, so the caller can say that there was a choice.
    """
    runs = _eval_runs(_connection(conn), task)
    if eval_run is not None:
        chosen = [r for r in runs if r.run_id == eval_run]
        if not chosen:
            raise UsageError(f"eval run {eval_run!r} has no {task} judgements")
        pick = chosen[0]
    elif not runs:
        return None
    else:
        plain = [r for r in runs if r.strategy == "plain"]
        yes_no = [r for r in runs if r.strategy != "contrast"]
        pick = (plain or yes_no or runs)[0]
    return EvalRunInfo(pick.run_id, pick.model, pick.strategy, pick.judgements, len(runs) - 1)


def documents_for(
    conn: Any, spec: TaskSpec, *, eval_run: str | None = None, gen_run: str | None = None
) -> tuple[list[str], list[bool] | None]:
    """(documents, failure flags) of the samples of the task ``spec``, in a stable order.

    ``gen_run`` keeps the samples of one generation run (general: of one pre-selection
    run). ``eval_run`` names the recognition run whose failures to flag; without it the
    latest eval run of the task is used. The flags are None when there is no eval run of
    the task, or when the latest one judged none of these samples; naming an eval run that
    judged none of them is a UsageError.
    """
    task = spec.name
    db = _connection(conn)
    explicit = eval_run is not None
    if eval_run is None:
        eval_run = latest_eval_run(db, task)
    elif corpus_queries.judgement_count(db, eval_run, task) == 0:
        raise UsageError(f"eval run {eval_run!r} has no {task} judgements")
    keys, documents = _general(db, gen_run) if task == "general" else _samples(db, spec, gen_run)
    judged_keys: set[str] = set()
    failed_keys: set[str] = set()
    if eval_run is not None:
        # general items are judged under their annotation item id, samples under the key
        for key, failed in corpus_queries.failed_items(
            db, eval_run, task, by_item_id=task == "general"
        ):
            judged_keys.add(str(key))
            if failed:
                failed_keys.add(str(key))
    if eval_run is None:
        return documents, None
    if not judged_keys.intersection(keys):
        if explicit:
            raise UsageError(
                f"eval run {eval_run!r} judged none of the {task} samples in this "
                f"store (did it judge HaluEval files?)"
            )
        return documents, None
    return documents, [k in failed_keys for k in keys]


def _join(values: Any) -> str:
    return "\n".join(str(v).strip() for v in values if v is not None and str(v).strip())


def _samples(db: Any, spec: TaskSpec, gen_run: str | None) -> tuple[list[str], list[str]]:
    """(item keys, documents) of the samples, one per distinct item."""
    task = spec.name
    key_fields = spec.record_fields  # what `halugen eval` fingerprints into an item key
    doc_fields = spec.topic_fields
    names = list(dict.fromkeys((*key_fields, *doc_fields)))
    keys: list[str] = []
    documents: list[str] = []
    seen: set[str] = set()
    for values in corpus_queries.sample_fields(db, task, names, gen_run):
        key = fingerprint({"task": task, "fields": {n: values[n] for n in key_fields}})
        if key in seen:  # the same sample kept by two runs: one document
            continue
        seen.add(key)
        text = _join(values[n] for n in doc_fields)
        if not text:  # e.g. a summary with no reference text: the generated one
            text = _join([values[spec.hallucinated_field]])
        keys.append(key)
        documents.append(text)
    return keys, documents


def _general(db: Any, gen_run: str | None) -> tuple[list[str], list[str]]:
    """(item ids, documents) of the annotation items, latest row per item."""
    rows = corpus_queries.latest_item_texts(db, gen_run)
    return [str(r[0]) for r in rows], [_join(r[1:]) for r in rows]


def documents_from_files(
    conn: Any, spec: TaskSpec, paths: Sequence[str], *, eval_run: str | None = None
) -> tuple[list[str], list[bool] | None]:
    """Documents of HaluEval's released files of the task ``spec``, with failures from an
    eval run over them."""
    from ..evaluate.items import items_from_files

    db = getattr(conn, "conn", conn)
    keys: list[str] = []
    documents: list[str] = []
    task = spec.name
    for item in items_from_files(list(paths), spec):
        keys.append(item.item_id if task == "general" else item.key)
        documents.append(" ".join(item.fields.get(f, "") for f in document_fields(spec)))
    if eval_run is None:
        return documents, None
    failed = {
        str(k)
        for k, f in corpus_queries.failed_items(db, eval_run, task, by_item_id=task == "general")
        if f
    }
    return documents, [k in failed for k in keys]


def save_reports(
    writer_or_conn: Any,
    analysis_id: str,
    reports: Iterable[TopicReport],
    *,
    source: EvalRunInfo | None = None,
) -> None:
    """One ``topic_results`` row per topic; ``top_words`` is a JSON array, best word first;
    ``source`` (the eval run the failures came from) fills ``eval_run``, ``eval_model`` and
    ``eval_strategy``.

    Given the store's writer, the rows are queued as one group (committed with its next
    commit; flush the writer before reading them back). Given a Store or a DuckDB
    connection, they are inserted at once, in one transaction.
    """
    rows = [
        TopicResultRow(
            analysis_id=analysis_id,
            task=r.task,
            topic_set=r.topic_set,
            topic=t.index,
            top_words=orjson.dumps(list(t.top_words)).decode(),
            share_samples=t.share_samples,
            share_failures=t.share_failures,
            coherence=t.coherence,
            eval_run=source.run_id if source else None,
            eval_model=source.model if source else None,
            eval_strategy=source.strategy if source else None,
        )
        for r in reports
        for t in r.topics
    ]
    if not rows:
        return
    if hasattr(writer_or_conn, "put"):
        writer_or_conn.put(rows)
        return
    insert_at_once(_connection(writer_or_conn), "topic_results", rows, now())
