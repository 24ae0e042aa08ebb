"""Commands that make samples: run, estimate, demo, init."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..settings.file import INIT_TEMPLATE
from ..tables import TableData, render_tables
from .common import announce, err, out, report_outcome, run_config
from .flags import add_format_flag, add_settings


def add_parsers(sub: Any) -> None:
    run = sub.add_parser("run", help="generate samples (resumes the same run when repeated)")
    add_settings(run, "seeds", "sampling", "endpoint", "run", "resume", "batch", "verify")

    est = sub.add_parser(
        "estimate",
        help="projected cost of a run, without any call",
        description="Projected cost of 'halugen run' with the same settings, from the seeds "
        "and prompts alone: no call is made.",
    )
    add_settings(est, "seeds", "sampling", "endpoint", "run", "verify")
    est.add_argument(
        "--acceptance",
        type=float,
        metavar="SHARE",
        help="share of seeds expected to give a sample, for the cost per 1,000 accepted "
        "samples (default: what earlier runs of the task with the model accepted in the "
        "store, else 1)",
    )
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

    from ..engine import generate

    cfg = run_config(args)
    on_run = announce("run", "{tasks} with {model}, budget {budget}")
    # generate reads --task (names or task folders) once, before anything is called
    return report_outcome(anyio.run(lambda: generate(cfg, console=err, on_run=on_run)))


def cmd_estimate(args: argparse.Namespace) -> int:
    from ..cost.prices import format_usd
    from ..engine import load_tasks, read_run_tasks, resolve_tasks
    from ..stages.estimate import estimate_ways

    cfg = run_config(args, calls=False)
    if not cfg.seeds:
        raise UsageError("no seed files given: pass --seeds FILE")
    if args.acceptance is not None and not 0 < args.acceptance <= 1:
        raise UsageError(f"--acceptance {args.acceptance}: give a share between 0 and 1")
    cfg, catalog = read_run_tasks(cfg)
    cfg, files_of = resolve_tasks(cfg, catalog)
    import anyio

    from ..cost.run_price import resolve_price
    from ..session import resolve_model

    cfg = anyio.run(resolve_model, cfg)  # asks the server which model, as every command does
    price, notes = resolve_price(cfg)
    tasks = load_tasks((catalog[name] for name in cfg.tasks), cfg.prompts_dir)
    title = (
        f"Projected cost with {cfg.model} ({price.card} prices"
        f"{', ' + price.date if price.date else ''})"
    )
    overview: list[list[Any]] = []
    ways: list[list[Any]] = []
    captions: list[str] = []
    exact = True
    for name, task in tasks.items():
        # each way of paying on the templates it sends (the cache plan at these prices)
        e = estimate_ways(cfg, task, price, files_of[name])
        exact = exact and e.tokens_exact
        overview.append(
            [
                name,
                e.seeds,
                e.bad_records,
                e.calls,
                e.prompt_tokens,
                f"{100 * e.cache_share:.0f}%",
                format_usd(e.cost_typical_pusd),
                format_usd(e.cost_max_pusd),
            ]
        )
        share, source = _acceptance(args.acceptance, cfg, name)
        captions.append(f"{name}: {share:.0%} of seeds accepted ({source})")
        accepted = e.seeds * share
        rows = [(m.name, m.cost_pusd, m.cached_tokens, m.note) for m in e.modes]
        rows.append(("most it can cost", e.cost_max_pusd, 0, "what the budget reserves"))
        for mode, cost, cached, note in rows:
            per_1000 = format_usd(round(cost * 1000 / accepted)) if accepted else "—"
            share_text = f"{100 * cached / e.prompt_tokens:.0f}%" if e.prompt_tokens else "—"
            ways.append([name, mode, format_usd(cost), per_1000, share_text, note])
    tables = [
        TableData(
            title,
            [
                "task",
                "seeds",
                "bad records",
                "calls",
                "prompt tokens",
                "from cache",
                "typical cost",
                "most it can cost",
            ],
            overview,
            name="estimate",
            align=["l", "r", "r", "r", "r", "r", "r", "r"],
            caption="typical: answers as long as the right answers, interactive calls with the "
            "provider's prompt cache; most: every call uses max_tokens, nothing cached (this "
            "is what the budget reserves). from cache: the "
            "share of prompt tokens the provider is expected to serve from its prompt cache "
            "(the templates' fixed openings, by the price card's caching rules).",
        ),
        TableData(
            "Expected cost by way of paying",
            ["task", "way", "whole run", "per 1,000 accepted", "from cache", "note"],
            ways,
            name="ways",
            align=["l", "l", "r", "r", "r", "l"],
            caption="; ".join(captions),
        ),
    ]
    render_tables(tables, args.format)
    if not exact:
        err.print(
            "note: token counts are approximate (the model's tokenizer is not available here)."
        )
    for note in notes:
        err.print(f"note: {note}")
    return 0


def _acceptance(flag: float | None, cfg: Any, task: str) -> tuple[float, str]:
    """The share of seeds expected to give a sample, and where that figure comes from."""
    if flag is not None:
        return flag, "--acceptance"
    import duckdb

    from ..errors import HalugenError
    from ..store.db import open_store
    from ..store.run_queries import acceptance_of_earlier_runs

    if cfg.db is None or not Path(cfg.db).exists():
        return 1.0, "assumed: every seed; --acceptance to set it"
    try:
        with open_store(cfg.db, read_only=True) as store:
            sampled, finished = acceptance_of_earlier_runs(store, task, cfg.model)
    except (HalugenError, duckdb.Error):  # an estimate does not need the store: go without
        return 1.0, "assumed: every seed; --acceptance to set it"
    if not finished:
        return 1.0, "assumed: every seed; --acceptance to set it"
    return sampled / finished, f"as {finished:,} finished seeds of earlier runs in {cfg.db}"


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
