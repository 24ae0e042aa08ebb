"""Commands that read the store: status, sql, export."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..tables import EXTRA_FORMATS, TableData, plain, render_tables
from .common import db_path, err, out
from .flags import add_config_flag, add_format_flag, add_label_rule_flags, add_setting, label_rule

EXPORT_FORMATS = ("halueval", "jsonl", "parquet", "csv", "lm-eval", "inspect")


def add_parsers(sub: Any) -> None:
    status = sub.add_parser("status", help="runs in the store, their state and spend per stage")
    add_setting(status, "db")
    add_format_flag(status)
    status.add_argument(
        "--plot",
        metavar="FILE",
        help="figure of a run's spend per stage and task over time, and its cost per "
        "accepted sample (.png, .svg or .pdf; needs the topics extra) (default: no figure)",
    )
    status.add_argument(
        "--run", metavar="RUN", help="the run to plot (default: the newest generation run)"
    )
    add_config_flag(status)

    sql = sub.add_parser(
        "sql",
        help="run a SQL query on the store (read-only)",
        description="Run a read-only SQL query on the store; the README's store section lists "
        "the views and their columns.",
    )
    sql.add_argument(
        "query", metavar="QUERY", help='the SQL query, e.g. "SELECT * FROM seed_progress LIMIT 5"'
    )
    sql.add_argument(
        "--query-timeout",
        type=_seconds,
        metavar="SECONDS",
        default=None,
        help="while a halugen process holds the store, it stops the query after this long "
        "(default: 60)",
    )
    add_setting(sql, "db")
    add_format_flag(sql, EXTRA_FORMATS)
    add_config_flag(sql)

    exp = sub.add_parser(
        "export",
        help="write samples (HaluEval, JSONL, Parquet, CSV, lm-eval, Inspect) or judgements",
    )
    exp.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default="halueval",
        help="halueval (default), jsonl, parquet, csv, lm-eval (task directory), "
        "inspect (task file)",
    )
    exp.add_argument(
        "--what",
        choices=("samples", "judgements"),
        default="samples",
        help="samples (default) or judgements: per-item eval results (jsonl, csv, parquet)",
    )
    exp.add_argument(
        "-o",
        "--out",
        metavar="PATH",
        help="output file, or a directory: end it with / (one file per task) (default, here: "
        "HaluEval's file names for halueval, halugen-lm-eval/ or halugen-inspect/, else "
        "samples.FORMAT or judgements.FORMAT)",
    )
    exp.add_argument("--run", metavar="RUN", help="only this run (default: see --all-runs)")
    exp.add_argument(
        "--all-runs",
        action="store_true",
        help="every matching run (default: the newest run per task, and say which)",
    )
    exp.add_argument(
        "--task", help="only this task: a name, or a task folder's path (default: every task)"
    )
    exp.add_argument(
        "--where",
        metavar="SQL",
        help="SQL predicate over the samples view, e.g. \"pattern = 'factualness'\" "
        "(default: every sample)",
    )
    exp.add_argument(
        "--no-card", action="store_true", help="no dataset card (README.md) beside the files"
    )
    exp.add_argument(
        "--include-suspect",
        action="store_true",
        help="also the samples the verify stage flagged (run --verify): a hallucination "
        "judged supported by its knowledge, a right text judged unsupported (default: left out)",
    )
    add_label_rule_flags(exp)  # general-track items: how many labels make one resolved
    add_setting(exp, "db")
    add_config_flag(exp)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def status_tables(store: Any) -> list[TableData]:
    from ..store.queries import (
        cost_per_sample,
        rejection_reasons,
        run_overview,
        seed_waste,
        stage_costs,
    )

    runs = run_overview(store)
    if not runs:
        return []
    tables = [TableData("Runs", list(runs[0]), [list(r.values()) for r in runs], name="runs")]
    costs = stage_costs(store)
    columns = list(costs[0]) if costs else ["run_id", "task", "stage", "calls", "cost"]
    tables.append(
        TableData(
            "Spend per stage",
            columns,
            [list(r.values()) for r in costs],
            name="spend_per_stage",
        )
    )
    rejected = rejection_reasons(store)
    if rejected:
        rows = [list(r.values()) for r in rejected]
        tables.append(TableData("Rejections", list(rejected[0]), rows, name="rejections"))
    for title, name, found, caption in (
        (
            "Cost per accepted sample",
            "cost_per_sample",
            [r for r in cost_per_sample(store) if r["cost_usd"] or r["tokens_in"]],
            "cache_pct: share of the billed prompt tokens the provider served from its prompt "
            "cache; saved_usd: what that saved at the run's prices",
        ),
        (
            "Spent on seeds without a sample",
            "seed_waste",
            seed_waste(store),
            "call failures and unfinished seeds are tried again by a resume",
        ),
    ):
        if found:
            values = [list(r.values()) for r in found]
            tables.append(TableData(title, list(found[0]), values, name=name, caption=caption))
    from ..label_noise import label_check_tables

    return tables + label_check_tables(store)


def cmd_status(args: argparse.Namespace) -> int:
    from ..store.db import open_store

    with open_store(db_path(args), read_only=True) as store:
        tables = status_tables(store)
        if args.plot:
            from ..figures.cost import cost_data, plot_cost

            data = cost_data(store, args.run)
            figure = plot_cost(data, Path(args.plot))
    if args.plot:
        err.print(plain(f"figure of run {data.run_id}'s spend: {figure}"))
    if not tables:
        if args.format in ("json", "jsonl"):
            render_tables([TableData("Runs", [], [], name="runs")], args.format)
        else:
            out.print("no runs yet")
        return 0
    render_tables(tables, args.format)
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    import duckdb

    from ..store.db import open_store
    from ..store.failures import damaged_store
    from ..store.user_sql import run_user_sql

    with open_store(db_path(args), read_only=True, query_timeout=args.query_timeout) as store:
        try:
            result = run_user_sql(store, args.query)
        except duckdb.Error as exc:
            damaged = damaged_store(store.path, exc)
            if damaged is not None:
                raise damaged from None
            raise UsageError(f"SQL error: {sql_error(str(exc))}") from None
        if result is None:
            return 0
        columns, rows = result
    render_tables([TableData(None, columns, rows, name="result")], args.format)
    return 0


def sql_error(message: str) -> str:
    """DuckDB's error on one line, with its hints ("Candidate bindings: …", "Did you mean …")
    and without the echo of the query under it."""
    head = message.split("\n\nLINE ", 1)[0]
    text = " ".join(line.strip() for line in head.splitlines() if line.strip())
    if "not found in FROM clause" in text:
        text += " (DESCRIBE <view> lists a view's columns; the README's store section too)"
    return text


def cmd_export(args: argparse.Namespace) -> int:
    from ..export import ExportRequest, export
    from ..store.db import open_store
    from ..tasks import is_task_path
    from ..tasks.catalog import TaskCatalog, read_task
    from ..tasks.stored import recall

    given = TaskCatalog()
    if args.task and is_task_path(args.task):  # a task folder: read and checked first
        spec = read_task(args.task, given)
        given, args.task = given.with_tasks([spec]), spec.name
    request = ExportRequest(
        fmt=args.format,
        what=args.what,
        out=args.out,
        run=args.run,
        all_runs=args.all_runs,
        task=args.task,
        where=args.where,
        card=not args.no_card,
        include_suspect=args.include_suspect,
        labels=label_rule(args),
    )
    with open_store(db_path(args), read_only=True) as store:
        # the tasks the store's rows name: built in, given, or kept by the store
        result = export(store, request, recall(store, given))
    for note in result.notes:
        err.print(plain(f"note: {note}"))
    if not result.files:
        filters = ", ".join(
            f"{flag} {value}"
            for flag, value in (("--task", args.task), ("--run", args.run), ("--where", args.where))
            if value
        )
        err.print(
            plain(f"no {result.what} match{f' ({filters})' if filters else ''}: nothing written")
        )
        return 1
    for path, rows in result.files:
        if rows:
            out.print(plain(f"wrote {rows:,} {_unit(result.what, args.format)} to {path}"))
        else:
            out.print(plain(f"wrote {path}"))
    return 0


def _unit(what: str, fmt: str) -> str:
    if what == "judgements":
        return "judgements"
    return "items" if fmt in ("lm-eval", "inspect") else "samples"


COMMANDS = {"status": cmd_status, "sql": cmd_sql, "export": cmd_export}
