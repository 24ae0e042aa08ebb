"""Commands of the recognition side: eval, report, topics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio
from rich.table import Table

from ..errors import UsageError
from .batch import add_batch_flags
from .common import db_path, err, llm_flags, out, run_config


def add_parsers(sub: Any) -> None:
    ev = sub.add_parser("eval", help="recognition experiment: can a model spot hallucinations?")
    ev.add_argument("--task", required=True, help="qa, dialogue, summarization or general")
    ev.add_argument(
        "--strategy", default="plain", help="plain, knowledge, cot or contrast (default: plain)"
    )
    ev.add_argument(
        "--data",
        nargs="+",
        help="HaluEval's released files of the task (default: the samples in the store)",
    )
    ev.add_argument("--gen-run", help="only the samples of this generation run")
    ev.add_argument(
        "--scoring",
        choices=("parse", "logprobs"),
        default="parse",
        help="read the Yes/No verdict (default) or score P(Yes) from logprobs",
    )
    ev.add_argument("--fresh", action="store_true", help="start a new eval run")
    ev.add_argument("--run-id", help="resume this eval run")
    llm_flags(ev)
    add_batch_flags(ev)

    rep = sub.add_parser("report", help="tables of the recognition results")
    rep.add_argument("--format", choices=("table", "markdown", "csv"), default="table")
    rep.add_argument("--run", nargs="+", help="only these eval runs")
    rep.add_argument("--db", default=None)
    rep.add_argument("--config", help=argparse.SUPPRESS)

    top = sub.add_parser("topics", help="LDA topics of a task's samples and of a model's failures")
    top.add_argument("--task", required=True, help="qa, dialogue, summarization or general")
    top.add_argument("--eval-run", help="whose failures (default: the latest eval run of the task)")
    top.add_argument("--gen-run", help="only the samples of this generation run")
    top.add_argument(
        "--data",
        nargs="+",
        help="HaluEval's released files instead of the "
        "store's samples (failures from the eval run that judged them)",
    )
    top.add_argument("--topics", type=int, default=10, help="topics over all samples (10)")
    top.add_argument("--failure-topics", type=int, default=5, help="topics over failures (5)")
    top.add_argument("--backend", choices=("sklearn", "gensim"), default="sklearn")
    top.add_argument("--out", default=None, help="PNG figure (default: topics-<task>.png)")
    top.add_argument("--db", default=None)
    top.add_argument("--config", help=argparse.SUPPRESS)


def cmd_eval(args: argparse.Namespace) -> int:
    from ..evaluate.run import EvalConfig, evaluate

    cfg = run_config(args)
    ecfg = EvalConfig(
        run=cfg,
        task=args.task,
        strategy=args.strategy,
        data=tuple(args.data or ()),
        gen_run=args.gen_run,
        scoring=args.scoring,
        limit=cfg.limit,
    )

    def on_run(run_id: str, resumed: bool) -> None:
        err.print(
            f"{'resuming' if resumed else 'starting'} eval run {run_id} "
            f"({args.task}/{args.strategy} with {cfg.model}) -> {cfg.db}"
        )

    outcome = anyio.run(lambda: evaluate(ecfg, console=err, on_run=on_run))
    for note in outcome.notes:
        err.print(f"note: {note}")
    (err if outcome.exit_code else out).print(outcome.message)
    return outcome.exit_code


def cmd_report(args: argparse.Namespace) -> int:
    from ..evaluate.report import render_csv, render_markdown, render_rich, results_from_store
    from ..store.db import open_store

    with open_store(db_path(args), read_only=True) as store:
        rows = results_from_store(store.conn, args.run)
    if not rows:
        out.print("no judgements yet: run 'halugen eval' first")
        return 0
    if args.format == "markdown":
        sys.stdout.write(render_markdown(rows))
    elif args.format == "csv":
        sys.stdout.write(render_csv(rows))
    else:
        for table in render_rich(rows):
            out.print(table)
    return 0


def cmd_topics(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from ..analysis import (
        analyse,
        documents_for,
        documents_from_files,
        latest_eval_run,
        plot,
        save_reports,
    )
    from ..store.db import open_store

    with open_store(db_path(args)) as store:
        eval_run = args.eval_run or latest_eval_run(store.conn, args.task)
        if args.data:
            docs, failed = documents_from_files(store.conn, args.task, args.data, eval_run=eval_run)
        else:
            docs, failed = documents_for(
                store.conn, args.task, eval_run=eval_run, gen_run=args.gen_run
            )
        if not docs:
            raise UsageError(f"no {args.task} samples in the store to analyse")
        reports = analyse(
            docs,
            failed,
            task=args.task,
            n_topics_all=args.topics,
            n_topics_failures=args.failure_topics,
            backend=args.backend,
        )
        analysis_id = f"{args.task}-{datetime.now(UTC):%Y%m%d-%H%M%S}"
        save_reports(store.conn, analysis_id, reports)
    figure = plot(reports, Path(args.out or f"topics-{args.task}.png"))
    for report in reports:
        table = Table(
            title=f"{args.task}: {report.topic_set} ({report.n_documents} documents"
            f"{f', {report.n_failures} failures' if report.n_failures else ''})"
        )
        for col in ("topic", "top words", "share of samples", "share of failures", "coherence"):
            table.add_column(col)
        for t in report.topics:
            table.add_row(
                str(t.index),
                " ".join(t.top_words[:8]),
                f"{t.share_samples:.1%}",
                "—" if t.share_failures is None else f"{t.share_failures:.1%}",
                f"{t.coherence:.2f}",
            )
        out.print(table)
    failures = f" (failures from eval run {eval_run})" if eval_run and failed else ""
    out.print(f"analysis {analysis_id}{failures}: figure {figure}; rows in topic_results")
    return 0


COMMANDS = {"eval": cmd_eval, "report": cmd_report, "topics": cmd_topics}
