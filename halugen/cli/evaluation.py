"""Commands of the recognition side: eval, report, compare, topics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..settings.build import assemble
from ..tables import TableData, plain, render_tables
from .common import announce, db_path, err, out, report_outcome, run_config
from .flags import (
    add_config_flag,
    add_format_flag,
    add_label_rule_flags,
    add_setting,
    add_settings,
    label_rule,
    label_rule_asked,
    resolve_settings,
)


def add_parsers(sub: Any) -> None:
    ev = sub.add_parser("eval", help="recognition experiment: can a model spot hallucinations?")
    ev.add_argument(
        "-t",
        "--task",
        required=True,
        help="the task judged: qa, dialogue, summarization, general or a task folder's path",
    )
    add_settings(ev, "eval")
    # the general task's annotated items in the store: which count as labelled
    add_label_rule_flags(ev, unasked="refuse to judge while there are any, saying how many")
    add_settings(ev, "endpoint", "run", "resume", "batch")

    rep = sub.add_parser("report", help="tables of the recognition results")
    add_format_flag(rep)
    rep.add_argument(
        "--plot",
        metavar="FILE",
        help="figure of accuracy per task, model and strategy with Wilson intervals, "
        "baselines and the paper's numbers (.png, .svg or .pdf; needs the topics extra) "
        "(default: no figure)",
    )
    rep.add_argument(
        "--run", nargs="+", metavar="RUN", help="only these eval runs (default: every eval run)"
    )
    add_setting(rep, "db")
    add_config_flag(rep)

    cmp = sub.add_parser(
        "compare",
        help="models and strategies compared on the same items: accuracy, and every pair's "
        "paired difference with its McNemar test, Holm-corrected",
    )
    add_format_flag(cmp)
    cmp.add_argument(
        "--run", nargs="+", metavar="RUN", help="only these eval runs (default: every eval run)"
    )
    cmp.add_argument(
        "-t", "--task", default=None, help="only this task's judgements (default: every task)"
    )
    cmp.add_argument(
        "--plot",
        metavar="FILE",
        help="forest plot of the paired differences (.png, .svg or .pdf; needs the topics "
        "extra) (default: no figure)",
    )
    cmp.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the paired bootstrap: the same seed, the same intervals (default: 0)",
    )
    add_setting(cmp, "db")
    add_config_flag(cmp)

    top = sub.add_parser("topics", help="LDA topics of a task's samples and of a model's failures")
    top.add_argument(
        "-t",
        "--task",
        required=True,
        help="the task analysed: qa, dialogue, summarization, general or a task folder's path",
    )
    top.add_argument(
        "--eval-run",
        metavar="RUN",
        help="whose failures (default: the newest plain-strategy eval run of the task)",
    )
    top.add_argument(
        "--gen-run",
        metavar="RUN",
        help="only the samples of this generation run (default: every run's samples)",
    )
    top.add_argument(
        "--data",
        nargs="+",
        metavar="FILE",
        help="HaluEval's released files instead of the store's samples, failures from the "
        "eval run that judged them (default: the store's samples)",
    )
    add_settings(top, "topics")
    top.add_argument(
        "-o",
        "--out",
        default=None,
        help="figure file, .png, .svg or .pdf (default: topics-<task>.png)",
    )
    add_format_flag(top)
    add_setting(top, "db")
    add_config_flag(top)


def cmd_eval(args: argparse.Namespace) -> int:
    import anyio

    from ..evaluate.config import EvalConfig
    from ..evaluate.run import evaluate
    from ..tasks.stored import read_task_or_stored

    cfg = run_config(args)
    # a task folder is read and checked first; a name the store keeps is read from it
    spec = read_task_or_stored(args.task, cfg.db)
    args.task = spec.name
    labels = label_rule(args)
    if (args.task != "general" or args.data) and label_rule_asked(args):
        raise UsageError(
            "--per-item and --allow-partial choose the general task's annotated items in the "
            "store: they apply to 'eval --task general' without --data"
        )
    ecfg = assemble(EvalConfig, resolve_settings(args), run=cfg, task=args.task, labels=labels)

    on_run = announce("eval run", f"{args.task}/{args.strategy} with {{model}}")
    return report_outcome(anyio.run(lambda: evaluate(ecfg, task=spec, console=err, on_run=on_run)))


def cmd_report(args: argparse.Namespace) -> int:
    from ..evaluate.report import report_tables
    from ..evaluate.results import results_from_store
    from ..store.db import open_store

    if args.plot:
        from ..figures.canvas import figure_format

        figure_format(args.plot)  # a bad extension fails before any work
    from ..label_noise import label_check_tables
    from ..tasks.stored import recall

    with open_store(db_path(args), read_only=True) as store:
        tasks = recall(store)  # task folders' titles and descriptions
        rows = results_from_store(store.conn, args.run)
        checks = label_check_tables(store)  # the labels' noise, as the verify stage found it
    if not rows:
        out.print("no judgements yet: run 'halugen eval' first")
        if checks and args.format not in ("csv", "json"):
            render_tables(checks, args.format)
        return 0
    if args.plot:
        from ..figures.accuracy import plot_accuracy, rows_from_report

        figure = plot_accuracy(rows_from_report(rows), Path(args.plot))
        err.print(plain(f"figure: {figure}"))
    if args.format == "csv":
        from ..evaluate.report import csv_table

        render_tables([csv_table(rows)], "csv")
    elif args.format == "json":
        sys.stdout.write(_report_json(rows))
    else:
        render_tables(report_tables(rows, tasks) + checks, args.format)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..evaluate.compare import compare_from_store, compare_tables
    from ..store.db import open_store

    if args.plot:
        from ..figures.canvas import figure_format

        figure_format(args.plot)  # a bad extension fails before any work
    from ..tasks.stored import recall

    with open_store(db_path(args), read_only=True) as store:
        tasks = recall(store)  # task folders' titles
        result = compare_from_store(store.conn, args.run, task=args.task, seed=args.seed)
    if not result.systems:
        out.print("no judgements to compare: run 'halugen eval' with two models or strategies")
        return 0
    if not result.pairs:
        err.print(
            "only one model and strategy per task: nothing to pair (eval another model or "
            "strategy on the same items)"
        )
    if args.plot and result.pairs:
        from ..figures.forest import plot_differences

        figure = plot_differences(result.pairs, Path(args.plot))
        err.print(plain(f"figure: {figure}"))
    numbers = args.format in ("csv", "json")
    render_tables(compare_tables(result, numbers=numbers, tasks=tasks), args.format)
    return 0


def _report_json(rows: Any) -> str:
    """Every report row with all its metrics (ratios as fractions), and the paper's numbers."""
    import orjson

    from ..paper import PAPER_FOOTNOTE, paper_reference

    data = {"results": list(rows), "paper": paper_reference(), "paper_note": PAPER_FOOTNOTE}
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


def cmd_topics(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from ..analysis import (
        analyse,
        choose_eval_run,
        documents_for,
        documents_from_files,
        plot,
        save_reports,
    )
    from ..figures.canvas import figure_format
    from ..store.db import open_store
    from ..tasks import is_task_path
    from ..tasks.catalog import TaskCatalog, read_task
    from ..tasks.stored import recall

    given = None
    if is_task_path(args.task):  # read and checked before the store is opened
        given = read_task(args.task, TaskCatalog())
        args.task = given.name
    figure_path = Path(args.out or f"topics-{args.task}.png")
    figure_format(figure_path)  # a bad extension fails before the analysis
    with open_store(db_path(args)) as store:
        # the task folder given, else among those the store's runs used
        catalog = TaskCatalog() if given is None else TaskCatalog().with_tasks([given])
        spec = recall(store, catalog)[args.task]
        args.task = spec.name
        source = choose_eval_run(store.conn, args.task, args.eval_run)
        eval_run = source.run_id if source else None
        if args.data:
            docs, failed = documents_from_files(store.conn, spec, args.data, eval_run=eval_run)
        else:
            docs, failed = documents_for(store.conn, spec, eval_run=eval_run, gen_run=args.gen_run)
        if not docs:
            raise UsageError(f"no {args.task} samples in the store to analyse")
        if failed is None:
            source = None  # that run judged none of these documents: no failures flagged
        reports = analyse(
            docs,
            failed,
            task=args.task,
            n_topics_all=args.topics,
            n_topics_failures=args.failure_topics,
            backend=args.backend,
        )
        analysis_id = f"{args.task}-{datetime.now(UTC):%Y%m%d-%H%M%S}"
        save_reports(store.conn, analysis_id, reports, source=source)
    figure = plot(reports, figure_path, source=source.describe() if source else None)
    counts = ", ".join(
        f"{r.topic_set}: {r.n_documents} documents"
        + (f", {r.n_failures} failures" if r.n_failures and r.topic_set == "all" else "")
        for r in reports
    )
    tables = [
        TableData(
            f"{args.task} topics ({counts})",
            [
                "topic set",
                "topic",
                "top words",
                "share of samples",
                "share of failures",
                "coherence",
            ],
            [
                [
                    r.topic_set,
                    t.index,
                    " ".join(t.top_words[:8]),
                    round(t.share_samples, 4),
                    None if t.share_failures is None else round(t.share_failures, 4),
                    round(t.coherence, 3),
                ]
                for r in reports
                for t in r.topics
            ],
            name="topics",
        )
    ]
    render_tables(tables, args.format)
    if source is not None:
        chosen = "" if args.eval_run else _default_note(source)
        err.print(plain(f"failures from {source.describe()}{chosen}"))
    err.print(plain(f"analysis {analysis_id}: figure {figure}; rows in topic_results"))
    return 0


def _default_note(source: Any) -> str:
    if not source.others:
        return ""
    return (
        f"; the task has {source.others} other eval run(s): the newest plain-strategy run "
        f"is the default, --eval-run picks another"
    )


COMMANDS = {
    "eval": cmd_eval,
    "report": cmd_report,
    "compare": cmd_compare,
    "topics": cmd_topics,
}
