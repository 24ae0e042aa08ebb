"""Batch mode flags (``--batch`` on run, eval, preselect) and ``halugen batch``: export a
run's pending requests as a batch file, import an engine's answers, list and cancel batches."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import db_path, err, llm_flags, map_flag, out, print_table, structured_flag

__all__ = ["COMMANDS", "add_batch_flags", "add_parsers", "batch_options"]


def add_batch_flags(p: argparse.ArgumentParser) -> None:
    """``--batch`` and its settings, for a command that makes LLM calls."""
    g = p.add_argument_group("batch mode")
    g.add_argument(
        "--batch",
        action="store_true",
        help="send the calls through the provider's Batch API (OpenAI: half price, answers "
        "within 24 h), stage after stage; Ctrl-C or a kill leaves the batches running and "
        "the same command collects them",
    )
    g.add_argument(
        "--batch-poll", type=float, help="seconds between looks at running batches (default 30)"
    )
    g.add_argument("--batch-max-requests", type=int, help="requests per batch file (default 50000)")
    g.add_argument("--batch-max-mb", type=float, help="MB per batch file (default 200)")


def batch_options(args: argparse.Namespace, settings: dict[str, Any]) -> Any:
    """The BatchOptions of ``--batch`` (or ``batch = true`` in halugen.toml), else None."""
    from ..config import BatchOptions
    from ..errors import UsageError

    if not (getattr(args, "batch", False) or settings.get("batch", False)):
        return None

    def pick(flag: str, default: float) -> float:
        value = getattr(args, flag, None)
        value = settings.get(flag, default) if value is None else value
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be a number >= 0 (got {value!r})")
        return float(value)

    requests = int(pick("batch_max_requests", 50_000))
    megabytes = pick("batch_max_mb", 200)
    if requests < 1 or megabytes <= 0:
        raise UsageError("--batch-max-requests and --batch-max-mb must be more than zero")
    return BatchOptions(
        poll_seconds=pick("batch_poll", 30.0),
        max_requests=requests,
        max_bytes=int(megabytes * 2**20),
    )


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
    ex.add_argument("--out", required=True, help="the JSONL file to write")
    ex.add_argument(
        "--stage", help="only this stage's requests (sample or filter; default: all pending)"
    )
    ex.add_argument("--task", help="task(s), as for 'halugen run' (default: qa)")
    ex.add_argument("--seeds", nargs="+", help="seed files or glob patterns, as for 'halugen run'")
    ex.add_argument("--seed-format", help="seed file format (default: detected)")
    map_flag(ex)
    ex.add_argument("--run-id", help="the run (default: the run these settings make)")
    ex.add_argument("--long-documents", choices=("truncate", "skip"))
    ex.add_argument("--prompts", help="directory of prompt templates, as for 'halugen run'")
    ex.add_argument("--temperature", type=float, help="sampling temperature (default: 1.0)")
    ex.add_argument("--max-tokens", type=int, help="max tokens per sampled answer (default 256)")
    structured_flag(
        ex,
        'the filter\'s pick ({"choice": N}); no server is asked: without it, '
        "what is stored decides, else text",
    )
    llm_flags(ex)

    im = bsub.add_parser(
        "import",
        help="store the answers of a batch output file (OpenAI's or vLLM's run_batch format)",
    )
    im.add_argument("file", help="the output JSONL file")
    im.add_argument("--db", help="the DuckDB store (default: ./halugen.duckdb)")
    im.add_argument(
        "--price-card",
        help="price the answers with this card ('local': a lab's own engine, $0) instead of "
        "the run's",
    )
    im.add_argument("--price-in", type=float, help="USD per million input tokens")
    im.add_argument("--price-out", type=float, help="USD per million output tokens")
    im.add_argument(
        "--batch-discount",
        action="store_true",
        help="the answers came from a provider's Batch API: apply the card's batch discount",
    )

    st = bsub.add_parser("status", help="the batches of the store (or of one run)")
    st.add_argument("--db", help="the DuckDB store (default: ./halugen.duckdb)")
    st.add_argument("--run", help="only this run's batches")

    ca = bsub.add_parser(
        "cancel", help="ask the provider to cancel a run's running batches (kept, not lost)"
    )
    ca.add_argument("--db", help="the DuckDB store (default: ./halugen.duckdb)")
    ca.add_argument("--run", help="only this run's batches")
    ca.add_argument("--base-url", help="the API root the batches were sent to")
    ca.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored")


def cmd_batch(args: argparse.Namespace) -> int:
    return {
        "export": _export,
        "import": _import,
        "status": _status,
        "cancel": _cancel,
    }[args.batch_command](args)


def _export(args: argparse.Namespace) -> int:
    import anyio

    from ..batch.exchange import export_requests
    from .common import run_config

    cfg = run_config(args, calls=False)  # an export sends nothing: no key needed
    if not cfg.seeds:
        from ..errors import UsageError

        raise UsageError("no seed files given: pass --seeds FILE, as for 'halugen run'")
    outcome = anyio.run(lambda: export_requests(cfg, Path(args.out), stage=args.stage))
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
    from ..budget import format_usd

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
            + [name, state, status or "", requests, done, failed, f"{spent:.6f}"]
        )
    columns = ["batch", "state", "status", "requests", "done", "failed", "spent $"]
    print_table(
        f"batches of run {rows[0][1]}" if rows and not several else "batches",
        (["run"] if several else []) + columns,
        table,
    )
    out.print('every column: halugen sql "SELECT * FROM batch_progress"', markup=False)
    return 0


def _cancel(args: argparse.Namespace) -> int:
    import os

    import anyio

    from ..batch.book import live_batches
    from ..config import DEFAULT_BASE_URL
    from ..errors import HalugenError
    from ..llm.batch_client import BatchClient
    from ..llm.transport import AiohttpTransport
    from ..store.db import open_store

    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY")
    with open_store(db_path(args)) as store:
        runs = [args.run] if args.run else [r["run_id"] for r in store.list_runs()]
        targets = [
            b for run in runs for b in live_batches(store, run) if b.provider_batch_id is not None
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
