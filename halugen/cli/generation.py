"""Commands that make samples: run, estimate, demo, init."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..settings import INIT_TEMPLATE
from .batch import add_batch_flags
from .common import err, llm_flags, map_flag, out, print_table, run_config


def add_parsers(sub: Any) -> None:
    run = sub.add_parser("run", help="generate samples (resumes the same run when repeated)")
    run.add_argument(
        "-t",
        "--task",
        help="task(s), comma-separated: qa, dialogue, summarization, a task folder's path, "
        "or all (every built-in task with seed files given; default: qa)",
    )
    run.add_argument("--seeds", nargs="+", help="seed files or glob patterns")
    run.add_argument("--seed-format", help="seed file format (default: detected)")
    map_flag(run)
    run.add_argument(
        "--fresh",
        action="store_true",
        help="start a new run even if one with the same settings exists",
    )
    run.add_argument("--run-id", help="resume this run")
    run.add_argument(
        "--long-documents",
        choices=("truncate", "skip"),
        help="a record longer than the model's context: cut its document "
        "(default) or skip it; both are recorded",
    )
    run.add_argument(
        "--prompts",
        help="directory of prompt templates (<task>/<name>.txt) "
        "that replace the bundled ones of the same name",
    )
    run.add_argument("--temperature", type=float, help="sampling temperature (default: 1.0)")
    run.add_argument("--max-tokens", type=int, help="max tokens per sampled answer (default 256)")
    llm_flags(run)
    add_batch_flags(run)

    est = sub.add_parser("estimate", help="projected cost of a run, without any call")
    est.add_argument(
        "-t", "--task", help="task(s) or task folder(s), comma-separated, or all (default: qa)"
    )
    est.add_argument("--prompts", help="directory of prompt templates replacing bundled ones")
    est.add_argument("--seeds", nargs="+", help="seed files or glob patterns")
    est.add_argument("--seed-format", help="seed file format (default: detected)")
    map_flag(est)
    est.add_argument("--temperature", type=float, help=argparse.SUPPRESS)
    est.add_argument("--max-tokens", type=int, help="max tokens per sampled answer (default 256)")
    llm_flags(est)

    demo = sub.add_parser("demo", help="run end to end against the built-in simulator")
    demo.add_argument(
        "--db",
        default="halugen-demo.duckdb",
        help="store for the demo (default: ./halugen-demo.duckdb, replaced)",
    )
    demo.add_argument("--no-progress", action="store_true")
    demo.add_argument("--latency-ms", type=float, default=250.0)

    init = sub.add_parser("init", help="write a commented halugen.toml here")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")


# -- settings -> RunConfig --------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from ..budget import format_usd
    from ..engine import generate

    cfg = run_config(args)

    def on_run(run_id: str, resumed: bool) -> None:
        from ..tasks import get_task, is_task_path

        verb = "resuming" if resumed else "starting"
        model = f" with {cfg.model}" if cfg.model else ""
        tasks = [get_task(t).name if is_task_path(t) else t for t in cfg.tasks]  # folders read
        err.print(
            f"{verb} run {run_id} ({', '.join(tasks)}{model}, budget "
            f"{format_usd(int(cfg.budget_usd * 10**12)) if cfg.budget_usd else 'none'}) "
            f"-> {cfg.db}"
        )

    outcome = anyio.run(lambda: generate(cfg, console=err, on_run=on_run))
    for note in outcome.notes:
        err.print(f"note: {note}")
    (err if outcome.exit_code else out).print(outcome.message)
    return outcome.exit_code


def cmd_estimate(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..budget import format_usd
    from ..engine import load_tasks, plan_tasks, resolve_price, resolve_tasks
    from ..estimate import estimate_task
    from ..tokens import get_counter

    cfg = run_config(args, calls=False)
    if not cfg.seeds:
        raise UsageError("no seed files given: pass --seeds FILE")
    cfg, files_of = resolve_tasks(cfg)
    from ..llm.endpoint import pick_model

    cfg = dataclasses.replace(cfg, model=pick_model(cfg.model, cfg.base_url, None)[0])
    price, notes = resolve_price(cfg)
    # the templates an interactive run sends (the cache plan at these prices)
    counter = get_counter(price.tokenizer)
    tasks = plan_tasks(load_tasks(cfg.tasks, cfg.prompts_dir), price, counter, batch=False)
    table = Table(
        title=f"Projected cost with {cfg.model} ({price.card} prices"
        f"{', ' + price.date if price.date else ''})"
    )
    for col in (
        "task",
        "seeds",
        "bad records",
        "calls",
        "prompt tokens",
        "typical cost",
        "most it can cost",
    ):
        table.add_column(col, justify="right" if col != "task" else "left")
    exact = True
    for name, task in tasks.items():
        e = estimate_task(cfg, task, price, files_of[name])
        exact = exact and e.tokens_exact
        table.add_row(
            name,
            f"{e.seeds:,}",
            f"{e.bad_records:,}",
            f"{e.calls:,}",
            f"{e.prompt_tokens:,}",
            format_usd(e.cost_typical_pusd),
            format_usd(e.cost_max_pusd),
        )
    out.print(table)
    out.print(
        "typical: answers as long as the right answers; most: every call uses max_tokens "
        "(this is what the budget reserves)."
    )
    if not exact:
        out.print("token counts are approximate (the model's tokenizer is not available here).")
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
    for title, columns, rows in summary:
        print_table(title, columns, rows)
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
