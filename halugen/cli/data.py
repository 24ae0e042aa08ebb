"""Commands that read the store: status, sql, export."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

import orjson

from ..errors import UsageError
from .common import db_path, err, out, print_table


def add_parsers(sub: Any) -> None:
    status = sub.add_parser("status", help="runs in the store, their state and spend per stage")
    status.add_argument("--db", default=None)
    status.add_argument("--config", help=argparse.SUPPRESS)

    sql = sub.add_parser("sql", help="run a SQL query on the store (read-only)")
    sql.add_argument("query")
    sql.add_argument("--db", default=None)
    sql.add_argument("--format", choices=("table", "csv", "json", "jsonl"), default="table")
    sql.add_argument("--config", help=argparse.SUPPRESS)

    exp = sub.add_parser("export", help="write samples as HaluEval JSON lines, JSONL or Parquet")
    exp.add_argument("--format", choices=("halueval", "jsonl", "parquet"), default="halueval")
    exp.add_argument("--out", help="output file, or a directory (several tasks)")
    exp.add_argument("--run", help="only this run")
    exp.add_argument("--task", help="only this task")
    exp.add_argument(
        "--where", help="SQL predicate over the samples view, e.g. \"pattern = 'factualness'\""
    )
    exp.add_argument("--db", default=None)
    exp.add_argument("--config", help=argparse.SUPPRESS)


def cmd_status(args: argparse.Namespace) -> int:
    from ..store.db import open_store
    from ..store.queries import rejection_reasons, run_overview, stage_costs

    with open_store(db_path(args), read_only=True) as store:
        runs = run_overview(store)
        if not runs:
            out.print("no runs yet")
            return 0
        print_table("Runs", list(runs[0]), [list(r.values()) for r in runs])
        costs = stage_costs(store)
        if costs:
            print_table("Spend per stage", list(costs[0]), [list(r.values()) for r in costs])
        rejected = rejection_reasons(store)
        if rejected:
            print_table("Rejections", list(rejected[0]), [list(r.values()) for r in rejected])
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    import duckdb

    from ..store.db import open_store

    with open_store(db_path(args), read_only=True) as store:
        try:
            cur = store.conn.execute(args.query)
        except duckdb.Error as exc:
            raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None
        if cur.description is None:
            return 0
        columns = [d[0] for d in cur.description]
        rows = cur.fetchall()
    if args.format == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)
    elif args.format in ("json", "jsonl"):
        records = [dict(zip(columns, r, strict=True)) for r in rows]
        if args.format == "json":
            sys.stdout.write(
                orjson.dumps(records, default=str, option=orjson.OPT_INDENT_2).decode() + "\n"
            )
        else:
            for rec in records:
                sys.stdout.write(orjson.dumps(rec, default=str).decode() + "\n")
    else:
        print_table(None, columns, rows)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..export import export_samples
    from ..store.db import open_store

    with open_store(db_path(args), read_only=True) as store:
        result = export_samples(
            store,
            fmt=args.format,
            out=Path(args.out) if args.out else None,
            run=args.run,
            task=args.task,
            where=args.where,
        )
    if not result.files:
        err.print("no samples match")
        return 0
    for path, rows in result.files:
        out.print(f"wrote {rows:,} samples to {path}")
    return 0


COMMANDS = {"status": cmd_status, "sql": cmd_sql, "export": cmd_export}
