"""Commands that make samples: run, estimate, demo, init."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..settings import INIT_TEMPLATE
from ..tables import TableData, render_tables
from .common import add_settings, announce, err, out, report_outcome, run_config
from .data import add_format_flag


def add_parsers(sub: Any) -> None:
    run = sub.add_parser("run", help="generate samples (resumes the same run when repeated)")
    add_settings(run, "seeds", "sampling", "endpoint", "run", "resume", "batch")

    est = sub.add_parser(
        "estimate",
        help="projected cost of a run, without any call",
        description="Projected cost of 'halugen run' with the same settings, from the seeds "
        "and prompts alone: no call is made.",
    )
    add_settings(est, "seeds", "sampling", "endpoint", "run")
    add_format_flag(est)

    demo = sub.add_parser("demo", help="run end to end against the built-in simulator")
    demo.add_argument(
        "--db",
        default="halugen-demo.duckdb",
        help="store for the demo, replaced at each demo (default: ./halugen-demo.duckdb)",
    )
    demo.add_argument(
        "--no-progress",
        action="store_true",
        help="a plain progress line every few seconds instead of the live view",
    )
    demo.add_argument(
        "--latency-ms",
        type=float,
        default=250.0,
        help="how long the simulated provider takes per answer, in ms (default: 250)",
    )

    init = sub.add_parser("init", help="write a commented halugen.toml here")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")


# -- settings -> RunConfig --------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from ..budget import format_usd
    from ..engine import generate

    cfg = run_config(args)
    from ..tasks import get_task, is_task_path

    tasks = ", ".join(get_task(t).name if is_task_path(t) else t for t in cfg.tasks)  # folders
    budget = format_usd(int(cfg.budget_usd * 10**12)) if cfg.budget_usd else "none"
    on_run = announce("run", f"{tasks} with {{model}}, budget {budget}", cfg.db)
    return report_outcome(anyio.run(lambda: generate(cfg, console=err, on_run=on_run)))


def cmd_estimate(args: argparse.Namespace) -> int:
    from ..budget import format_usd
    from ..engine import load_tasks, resolve_price, resolve_tasks
    from ..estimate import estimate_task

    cfg = run_config(args, calls=False)
    if not cfg.seeds:
        raise UsageError("no seed files given: pass --seeds FILE")
    cfg, files_of = resolve_tasks(cfg)
    import anyio

    from ..session import resolve_model

    cfg = anyio.run(resolve_model, cfg)  # asks the server which model, as every command does
    price, notes = resolve_price(cfg)
    tasks = load_tasks(cfg.tasks, cfg.prompts_dir)
    rows = []
    exact = True
    for name, task in tasks.items():
        e = estimate_task(cfg, task, price, files_of[name])
        exact = exact and e.tokens_exact
        rows.append(
            [
                name,
                e.seeds,
                e.bad_records,
                e.calls,
                e.prompt_tokens,
                format_usd(e.cost_typical_pusd),
                format_usd(e.cost_max_pusd),
            ]
        )
    caption = (
        "typical: answers as long as the right answers; most: every call uses max_tokens "
        "(this is what the budget reserves)."
    )
    if not exact:
        caption += " Token counts are approximate (the model's tokenizer is not available here)."
    table = TableData(
        f"Projected cost with {cfg.model} ({price.card} prices"
        f"{', ' + price.date if price.date else ''})",
        [
            "task",
            "seeds",
            "bad records",
            "calls",
            "prompt tokens",
            "typical cost",
            "most it can cost",
        ],
        rows,
        name="estimate",
        caption=caption,
        align=["l", "r", "r", "r", "r", "r", "r"],
    )
    render_tables([table], args.format)
    for note in notes:
        err.print(f"note: {note}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import anyio

    from ..demo import run_demo

    outcome, summary = anyio.run(
        lambda: run_demo(
            db=Path(args.db), progress=not args.no_progress, console=err, latency_ms=args.latency_ms
        )
    )
    out.print(outcome.message)
    render_tables([TableData(title, columns, rows) for title, columns, rows in summary], "table")
    out.print(
        f"\nThe store is {args.db}. Try:\n"
        f'  python -m halugen sql "SELECT pattern, count(*) FROM samples GROUP BY 1" '
        f"--db {args.db}\n  python -m halugen status --db {args.db}"
    )
    return outcome.exit_code


def cmd_init(args: argparse.Namespace) -> int:
    path = Path("halugen.toml")
    if path.exists() and not args.force:
        raise UsageError(f"{path} exists; use --force to overwrite it")
    path.write_text(INIT_TEMPLATE, encoding="utf-8")
    out.print(f"wrote {path}")
    return 0


COMMANDS = {"run": cmd_run, "estimate": cmd_estimate, "demo": cmd_demo, "init": cmd_init}
