"""``halugen batch``: export a run's pending requests as a batch file, import an engine's
answers, list and cancel batches. (``--batch`` itself is a setting: ``options/run_control.py``.)"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..tables import TableData, render_tables
from .common import db_path, err, out
from .flags import add_config_flag, add_format_flag, add_setting, add_settings, resolve_settings

__all__ = ["COMMANDS", "add_parsers"]


def add_parsers(sub: Any) -> None:
    batch = sub.add_parser(
        "batch", help="batch files for other engines (export, import); batches of a run"
    )
    bsub = batch.add_subparsers(dest="batch_command", metavar="ACTION", required=True)

    ex = bsub.add_parser(
        "export",
        help="write the pending requests of a run's next stage as an OpenAI batch file",
        description="Runs the planning pass of 'halugen run' with the same settings (answers "
        "already stored are used, nothing is sent) and writes the requests still to make in "
        "the OpenAI batch input format, custom_id = request key. vLLM's offline runner reads "
        "it: python -m vllm.entrypoints.openai.run_batch -i FILE -o results.jsonl",
    )
    ex.add_argument("--out", required=True, metavar="FILE", help="the JSONL file to write")
    ex.add_argument(
        "--stage",
        metavar="STAGE",
        help="only this stage's requests, e.g. sample or filter (default: every pending request)",
    )
    add_settings(ex, "seeds", "sampling", "endpoint", "run", "resume", "verify")

    im = bsub.add_parser(
        "import",
        help="store the answers of a batch output file (OpenAI's or vLLM's run_batch format)",
    )
    im.add_argument("file", metavar="FILE", help="the output JSONL file")
    add_setting(im, "db")
    im.add_argument(
        "--price-card",
        metavar="NAME|FILE",
        help="price the answers with this card ('local': a lab's own engine, $0) (default: "
        "the run's card)",
    )
    im.add_argument(
        "--price-in",
        type=float,
        metavar="USD",
        help="USD per million input tokens (default: the card's)",
    )
    im.add_argument(
        "--price-out",
        type=float,
        metavar="USD",
        help="USD per million output tokens (default: the card's)",
    )
    im.add_argument(
        "--batch-discount",
        action="store_true",
        help="the answers came from a provider's Batch API: apply the card's batch discount",
    )
    add_config_flag(im)

    st = bsub.add_parser("status", help="the batches of the store (or of one run)")
    add_setting(st, "db")
    st.add_argument("--run", metavar="RUN", help="only this run's batches (default: every run's)")
    add_format_flag(st)
    add_config_flag(st)

    ca = bsub.add_parser(
        "cancel", help="ask the provider to cancel a run's running batches (kept, not lost)"
    )
    add_setting(ca, "db")
    ca.add_argument("--run", metavar="RUN", help="only this run's batches (default: every run's)")
    add_setting(ca, "base_url")
    add_setting(ca, "api_key")
    add_config_flag(ca)


def cmd_batch(args: argparse.Namespace) -> int:
    return {
        "export": _export,
        "import": _import,
        "status": _status,
        "cancel": _cancel,
    }[args.batch_command](args)


def _export(args: argparse.Namespace) -> int:
    from functools import partial

    import anyio

    from ..batch.exchange import export_requests
    from ..engine import generate_session, read_run_tasks
    from .common import run_config

    cfg = run_config(args, calls=False)  # an export sends nothing: no key needed
    if not cfg.seeds:
        from ..errors import UsageError

        raise UsageError("no seed files given: pass --seeds FILE, as for 'halugen run'")
    cfg, tasks = read_run_tasks(cfg)  # --task read once, here
    open_pass = partial(generate_session, tasks=tasks)
    outcome = anyio.run(lambda: export_requests(cfg, Path(args.out), open_pass, stage=args.stage))
    for note in outcome.notes:
        err.print(f"note: {note}", markup=False)
    pending = ", ".join(f"{n} {s}" for s, n in sorted(outcome.by_stage.items())) or "none"
    if not outcome.requests:
        out.print(
            f"run {outcome.run_id}: nothing to export (pending requests: {pending}); "
            f"{outcome.pass_message}"
        )
        return 0
    out.print(
        f"wrote {outcome.requests} request(s) of run {outcome.run_id} to {outcome.path} "
        f"(pending: {pending}). Run them, e.g. python -m vllm.entrypoints.openai.run_batch "
        f"-i {outcome.path} -o results.jsonl --model MODEL, then: halugen batch import "
        f"results.jsonl"
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    from ..batch.exchange import import_results
    from ..cost.prices import format_usd

    result = import_results(
        db_path(args),
        Path(args.file),
        price_card=args.price_card,
        price_in=args.price_in,
        price_out=args.price_out,
        batch_discount=args.batch_discount,
    )
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    runs = ", ".join(result.runs) or "no run"
    out.print(
        f"imported {result.imported} answer(s) for {runs} ({format_usd(result.cost_pusd)}); "
        f"{result.failed} line(s) carried errors, {result.skipped} were imported before. Run "
        f"the same 'halugen run' command (or 'halugen batch export') to continue"
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    from ..batch.book import run_batches
    from ..store.db import open_store

    with open_store(db_path(args), read_only=True) as store:
        rows = run_batches(store, [args.run] if args.run else None)
    several = len({r[1] for r in rows}) > 1
    table = []
    for batch_id, run_id, kind, state, status, pid, requests, done, failed, _, spent, _ in rows:
        name = pid or batch_id if kind == "api" else f"{batch_id} (file)"
        table.append(
            ([run_id] if several else [])
            + [name, state, status or "", requests, done, failed, round(spent, 6)]
        )
    columns = ["batch", "state", "status", "requests", "done", "failed", "spent $"]
    title = f"batches of run {rows[0][1]}" if rows and not several else "batches"
    render_tables(
        [
            TableData(
                title,
                (["run"] if several else []) + columns,
                table,
                name="batches",
                caption='every column: halugen sql "SELECT * FROM batch_progress"',
            )
        ],
        args.format,
    )
    return 0


def _cancel(args: argparse.Namespace) -> int:
    import anyio

    from ..batch.book import live_batches
    from ..errors import HalugenError
    from ..llm.batch_client import BatchClient
    from ..llm.transport import AiohttpTransport
    from ..store.db import open_store

    resolve_settings(args)
    base_url, api_key = args.base_url, args.api_key
    with open_store(db_path(args)) as store:
        runs = [args.run] if args.run else [r["run_id"] for r in store.list_runs()]
        targets = [
            b
            for run in runs
            for b, _ in live_batches(store, run)
            if b.provider_batch_id is not None
        ]

        async def cancel() -> list[str]:
            transport = AiohttpTransport()
            client = BatchClient(base_url=base_url, api_key=api_key, transport=transport)
            lines = []
            try:
                for b in targets:
                    assert b.provider_batch_id is not None
                    try:
                        info = await client.cancel(b.provider_batch_id)
                        lines.append(f"{b.provider_batch_id}: {info.status}")
                    except HalugenError as exc:  # one line per batch
                        lines.append(f"{b.provider_batch_id}: not cancelled ({exc})")
            finally:
                await transport.aclose()
            return lines

        for line in anyio.run(cancel) if targets else ["no running batches"]:
            out.print(line, markup=False)
    if targets:
        out.print(
            "cancelled batches keep what they finished: run the same command with --batch to use it"
        )
    return 0


COMMANDS = {"batch": cmd_batch}
