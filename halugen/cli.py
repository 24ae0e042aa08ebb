"""Command line: the only place that parses arguments and prints. Errors become exit codes.

Exit codes: 0 done; 1 failure; 2 bad usage or input; 3 budget exhausted; 130 interrupted.
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson
from rich.console import Console
from rich.table import Table

from . import __version__
from .budget import format_usd, parse_budget
from .config import DEFAULT_BASE_URL, RateLimit, RetryPolicy, RunConfig, Sampling, Timeouts
from .errors import HalugenError, UsageError
from .settings import INIT_TEMPLATE, load_settings

__all__ = ["main"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


# -- argument parsing -------------------------------------------------------------------
def _llm_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model endpoint")
    g.add_argument("--base-url", help=f"OpenAI-compatible API root (default: $OPENAI_BASE_URL "
                   f"or {DEFAULT_BASE_URL})")
    g.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored")
    g.add_argument("--model", help="model name sent to the endpoint (default: gpt-4o-mini)")
    g.add_argument("--concurrency", type=int, help="most requests in flight (default: 64)")
    g.add_argument("--rpm", type=float, help="requests per minute allowed (default: learn from "
                   "the server's x-ratelimit headers)")
    g.add_argument("--tpm", type=float, help="tokens per minute allowed (same)")
    g.add_argument("--price-in", type=float, help="USD per million input tokens (overrides the "
                   "price card)")
    g.add_argument("--price-out", type=float, help="USD per million output tokens")
    g.add_argument("--price-card", help="a bundled price card by name (e.g. 'local' for a "
                   "self-hosted server at $0) or a TOML file")
    g.add_argument("--timeout", type=float, help="seconds one attempt may take (default: 300)")
    g.add_argument("--max-attempts", type=int, help="attempts per call before it fails "
                   "(default: 8)")
    r = p.add_argument_group("run")
    r.add_argument("--db", help="the DuckDB store (default: ./halugen.duckdb)")
    r.add_argument("--budget", help="most the run may cost, across resumes: 50usd, $50, 12.5USD")
    r.add_argument("--limit", type=int, help="only the first N seeds of each task")
    r.add_argument("--seed", type=int, help="run seed (default: 0)")
    r.add_argument("--no-progress", action="store_true", help="no live view (plain lines)")
    r.add_argument("--config", help="settings file (default: ./halugen.toml when present)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="halugen",
        description="Build and run hallucination benchmarks for LLMs (HaluEval-style), "
                    "budgeted, rate-limited and resumable.",
    )
    parser.add_argument("--version", action="version", version=f"halugen {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="generate samples (resumes the same run when repeated)")
    run.add_argument("--task", help="task(s), comma-separated: qa, dialogue, summarization, "
                     "or all (every task with seed files given; default: qa)")
    run.add_argument("--seeds", nargs="+", help="seed files or glob patterns")
    run.add_argument("--seed-format", help="seed file format (default: detected)")
    run.add_argument("--fresh", action="store_true", help="start a new run even if one with the "
                     "same settings exists")
    run.add_argument("--run-id", help="resume this run")
    run.add_argument("--long-documents", choices=("truncate", "skip"),
                     help="a record longer than the model's context: cut its document "
                          "(default) or skip it; both are recorded")
    run.add_argument("--prompts", help="directory of prompt templates (<task>/<name>.txt) "
                     "that replace the bundled ones of the same name")
    run.add_argument("--temperature", type=float, help="sampling temperature (default: 1.0)")
    run.add_argument("--max-tokens", type=int, help="max tokens per sampled answer (default 256)")
    _llm_flags(run)

    est = sub.add_parser("estimate", help="projected cost of a run, without any call")
    est.add_argument("--task", help="task(s), comma-separated, or all (default: qa)")
    est.add_argument("--prompts", help="directory of prompt templates replacing bundled ones")
    est.add_argument("--seeds", nargs="+", help="seed files or glob patterns")
    est.add_argument("--seed-format", help="seed file format (default: detected)")
    est.add_argument("--temperature", type=float, help=argparse.SUPPRESS)
    est.add_argument("--max-tokens", type=int, help="max tokens per sampled answer (default 256)")
    _llm_flags(est)

    ev = sub.add_parser("eval", help="recognition experiment: can a model spot hallucinations?")
    ev.add_argument("--task", required=True,
                    help="qa, dialogue, summarization or general")
    ev.add_argument("--strategy", default="plain",
                    help="plain, knowledge, cot or contrast (default: plain)")
    ev.add_argument("--data", nargs="+", help="HaluEval's released files of the task "
                    "(default: the samples in the store)")
    ev.add_argument("--gen-run", help="only the samples of this generation run")
    ev.add_argument("--scoring", choices=("parse", "logprobs"), default="parse",
                    help="read the Yes/No verdict (default) or score P(Yes) from logprobs")
    ev.add_argument("--fresh", action="store_true", help="start a new eval run")
    ev.add_argument("--run-id", help="resume this eval run")
    _llm_flags(ev)

    rep = sub.add_parser("report", help="tables of the recognition results")
    rep.add_argument("--format", choices=("table", "markdown", "csv"), default="table")
    rep.add_argument("--run", nargs="+", help="only these eval runs")
    rep.add_argument("--db", default=None)
    rep.add_argument("--config", help=argparse.SUPPRESS)

    top = sub.add_parser("topics", help="LDA topics of a task's samples and of a model's failures")
    top.add_argument("--task", required=True, help="qa, dialogue, summarization or general")
    top.add_argument("--eval-run", help="whose failures (default: the latest eval run of the task)")
    top.add_argument("--gen-run", help="only the samples of this generation run")
    top.add_argument("--data", nargs="+", help="HaluEval's released files instead of the "
                     "store's samples (failures from the eval run that judged them)")
    top.add_argument("--topics", type=int, default=10, help="topics over all samples (10)")
    top.add_argument("--failure-topics", type=int, default=5, help="topics over failures (5)")
    top.add_argument("--backend", choices=("sklearn", "gensim"), default="sklearn")
    top.add_argument("--out", default=None, help="PNG figure (default: topics-<task>.png)")
    top.add_argument("--db", default=None)
    top.add_argument("--config", help=argparse.SUPPRESS)

    pre = sub.add_parser("preselect", help="general track: sample responses to user queries, "
                         "keep those whose responses disagree most (BERTScore)")
    pre.add_argument("--queries", nargs="+", required=True,
                     help="Alpaca JSON, or JSONL/CSV files of queries")
    pre.add_argument("--query-format", choices=("alpaca", "jsonl", "csv"))
    pre.add_argument("--query-field", help="field holding the query (default: query/instruction)")
    pre.add_argument("--input-field", help="field appended to the query (Alpaca: input)")
    pre.add_argument("--id-field", help="field holding the query's id")
    pre.add_argument("--responses", type=int, default=3, help="responses per query (3)")
    pre.add_argument("--keep", type=int, default=5000, help="queries kept, least similar (5000)")
    pre.add_argument("--use-n", choices=("auto", "always", "never"), default="auto",
                     help="ask for n choices in one call (auto: when the server honours it)")
    pre.add_argument("--bertscore-model", help="BERTScore model name or local directory "
                     "(default: bert-score's default for English)")
    pre.add_argument("--bertscore-layers", type=int, help="layer to use (needed for a local model)")
    pre.add_argument("--bertscore-baseline", help="baseline file for rescaling")
    pre.add_argument("--bertscore-batch", type=int, default=64)
    pre.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda when available)")
    pre.add_argument("--fresh", action="store_true")
    pre.add_argument("--run-id")
    pre.add_argument("--temperature", type=float)
    pre.add_argument("--max-tokens", type=int)
    _llm_flags(pre)

    ann = sub.add_parser("annotate", help="human annotation: serve the page, import, export, "
                         "resolve")
    asub = ann.add_subparsers(dest="annotate_command", metavar="ACTION")
    a_serve = asub.add_parser("serve", help="the annotation page on this machine")
    a_serve.add_argument("--host", default="127.0.0.1")
    a_serve.add_argument("--port", type=int, default=8080)
    a_serve.add_argument("--allow-remote", action="store_true",
                         help="allow a non-loopback bind (then tokens are required)")
    a_serve.add_argument("--tokens", help="JSON file of annotator -> token "
                         "(see 'annotate tokens')")
    a_serve.add_argument("--per-item", type=int, default=3, help="annotators per item (3)")
    a_tok = asub.add_parser("tokens", help="make per-annotator tokens for a remote server")
    a_tok.add_argument("--annotators", required=True, help="comma-separated names")
    a_tok.add_argument("--out", default="annotator-tokens.json")
    a_add = asub.add_parser("add", help="add items to annotate")
    a_add.add_argument("--from-run", help="a pre-selection run: its kept queries' responses")
    a_add.add_argument("--keep", type=int, default=5000, help="how many queries of that run")
    a_add.add_argument("--jsonl", help="JSON lines of {item_id?, query, response}")
    a_imp = asub.add_parser("import", help="import annotations (and their items)")
    a_imp.add_argument("file")
    a_imp.add_argument("--format", choices=("labelstudio", "jsonl", "halueval"), required=True)
    a_exp = asub.add_parser("export", help="export annotations")
    a_exp.add_argument("--format", choices=("labelstudio", "jsonl", "halueval"), required=True)
    a_exp.add_argument("--out", required=True)
    asub.add_parser("resolve", help="majority labels, spans and agreement (Fleiss' kappa)")
    for a in (a_serve, a_add, a_imp, a_exp, asub.choices["resolve"]):
        a.add_argument("--db", default=None)
        a.add_argument("--config", help=argparse.SUPPRESS)

    demo = sub.add_parser("demo", help="run end to end against the built-in simulator")
    demo.add_argument("--db", default="halugen-demo.duckdb",
                      help="store for the demo (default: ./halugen-demo.duckdb, replaced)")
    demo.add_argument("--no-progress", action="store_true")
    demo.add_argument("--latency-ms", type=float, default=250.0)

    status = sub.add_parser("status", help="runs in the store, their state and spend per stage")
    status.add_argument("--db", default=None)
    status.add_argument("--config", help=argparse.SUPPRESS)

    sql = sub.add_parser("sql", help="run a SQL query on the store (read-only)")
    sql.add_argument("query")
    sql.add_argument("--db", default=None)
    sql.add_argument("--format", choices=("table", "csv", "json", "jsonl"), default="table")
    sql.add_argument("--config", help=argparse.SUPPRESS)

    sim = sub.add_parser("simulate", help="serve the OpenAI-compatible simulator on loopback")
    sim.add_argument("--host", default="127.0.0.1")
    sim.add_argument("--port", type=int, default=8000)
    sim.add_argument("--latency-ms", type=float, default=0.0)
    sim.add_argument("--jitter-ms", type=float, default=0.0)
    sim.add_argument("--rpm", type=float)
    sim.add_argument("--tpm", type=float)
    sim.add_argument("--fail-rate", type=float, default=0.0)
    sim.add_argument("--faults", help="comma-separated fault kinds (default: all): "
                     "500,503,hang,malformed,content_filter,drop")
    sim.add_argument("--hang-s", type=float, default=30.0)
    sim.add_argument("--price-in", type=float, default=0.15)
    sim.add_argument("--price-out", type=float, default=0.60)
    sim.add_argument("--api-key", help="require this key (401 otherwise)")
    sim.add_argument("--garbage-rate", type=float, default=0.0)
    sim.add_argument("--no-n", action="store_true", help="ignore n>1 like some servers")
    sim.add_argument("--no-usage", action="store_true", help="omit usage from responses")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--oracle", nargs="+", help="HaluEval files whose labels the simulated "
                     "judge knows (recognition experiments)")
    sim.add_argument("--judge-accuracy", type=float,
                     help="how often the simulated judge is right about oracle answers")

    exp = sub.add_parser("export", help="write samples as HaluEval JSON lines, JSONL or Parquet")
    exp.add_argument("--format", choices=("halueval", "jsonl", "parquet"), default="halueval")
    exp.add_argument("--out", help="output file, or a directory (several tasks)")
    exp.add_argument("--run", help="only this run")
    exp.add_argument("--task", help="only this task")
    exp.add_argument("--where", help="SQL predicate over the samples view, e.g. "
                     "\"pattern = 'factualness'\"")
    exp.add_argument("--db", default=None)
    exp.add_argument("--config", help=argparse.SUPPRESS)

    init = sub.add_parser("init", help="write a commented halugen.toml here")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    return parser


# -- settings -> RunConfig --------------------------------------------------------------
def _pick(args: argparse.Namespace, settings: dict[str, Any], flag: str, key: str | None = None,
          default: Any = None) -> Any:
    value = getattr(args, flag, None)
    if value is not None and value is not False:
        return value
    return settings.get(key or flag, default)


def _positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"--{name} must be more than zero (got {value:g})")


def run_config(args: argparse.Namespace) -> RunConfig:
    settings_path = Path(args.config) if getattr(args, "config", None) else Path("halugen.toml")
    settings = load_settings(settings_path, required=bool(getattr(args, "config", None)))
    tasks = _pick(args, settings, "task", default="qa")
    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    seeds = _pick(args, settings, "seeds", default=[])
    if isinstance(seeds, str):
        seeds = [seeds]
    budget_text = _pick(args, settings, "budget")
    budget = parse_budget(str(budget_text)) / 10**12 if budget_text is not None else None
    concurrency = _pick(args, settings, "concurrency", default=64)
    rpm = _pick(args, settings, "rpm")
    tpm = _pick(args, settings, "tpm")
    limit = _pick(args, settings, "limit")
    timeout = _pick(args, settings, "timeout", default=300.0)
    max_attempts = _pick(args, settings, "max_attempts", default=8)
    temperature = _pick(args, settings, "temperature", default=1.0)
    max_tokens = _pick(args, settings, "max_tokens", default=256)
    for name, value in (("concurrency", concurrency), ("rpm", rpm), ("tpm", tpm),
                        ("limit", limit), ("timeout", timeout), ("max-attempts", max_attempts),
                        ("max-tokens", max_tokens)):
        _positive(name, value)
    if temperature < 0:
        raise UsageError(f"--temperature must not be negative (got {temperature:g})")
    return RunConfig(
        tasks=tuple(tasks),
        seeds=tuple(seeds),
        seed_format=_pick(args, settings, "seed_format"),
        model=_pick(args, settings, "model", default="gpt-4o-mini"),
        base_url=_pick(args, settings, "base_url",
                       default=os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL),
        api_key=getattr(args, "api_key", None) or os.environ.get("OPENAI_API_KEY"),
        db=Path(_pick(args, settings, "db", default="halugen.duckdb")),
        budget_usd=budget,
        price_in=_pick(args, settings, "price_in"),
        price_out=_pick(args, settings, "price_out"),
        price_card=_pick(args, settings, "price_card"),
        rate=RateLimit(rpm=rpm, tpm=tpm, concurrency=int(concurrency)),
        retry=RetryPolicy(max_attempts=int(max_attempts)),
        timeouts=Timeouts(total=float(timeout), read=min(120.0, float(timeout))),
        sampling=Sampling(temperature=float(temperature), max_tokens=int(max_tokens)),
        limit=limit,
        run_seed=int(_pick(args, settings, "seed", default=0)),
        fresh=bool(getattr(args, "fresh", False)),
        run_id=getattr(args, "run_id", None),
        progress=not args.no_progress and settings.get("progress", True),
        long_documents=_pick(args, settings, "long_documents", default="truncate"),
        prompts_dir=Path(p) if (p := _pick(args, settings, "prompts")) else None,
    )


# -- commands ---------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    from .engine import generate

    cfg = run_config(args)

    def on_run(run_id: str, resumed: bool) -> None:
        verb = "resuming" if resumed else "starting"
        err.print(f"{verb} run {run_id} ({', '.join(cfg.tasks)} with {cfg.model}, budget "
                  f"{format_usd(int(cfg.budget_usd * 10**12)) if cfg.budget_usd else 'none'}) "
                  f"-> {cfg.db}")

    outcome = anyio.run(lambda: generate(cfg, console=err, on_run=on_run))
    for note in outcome.notes:
        err.print(f"note: {note}")
    (err if outcome.exit_code else out).print(outcome.message)
    return outcome.exit_code


def cmd_eval(args: argparse.Namespace) -> int:
    from .evaluate.run import EvalConfig, evaluate

    cfg = run_config(args)
    ecfg = EvalConfig(run=cfg, task=args.task, strategy=args.strategy,
                      data=tuple(args.data or ()), gen_run=args.gen_run, scoring=args.scoring,
                      limit=cfg.limit)

    def on_run(run_id: str, resumed: bool) -> None:
        err.print(f"{'resuming' if resumed else 'starting'} eval run {run_id} "
                  f"({args.task}/{args.strategy} with {cfg.model}) -> {cfg.db}")

    outcome = anyio.run(lambda: evaluate(ecfg, console=err, on_run=on_run))
    for note in outcome.notes:
        err.print(f"note: {note}")
    (err if outcome.exit_code else out).print(outcome.message)
    return outcome.exit_code


def cmd_report(args: argparse.Namespace) -> int:
    from .evaluate.report import render_csv, render_markdown, render_rich, results_from_store
    from .store.db import open_store

    with open_store(_db_path(args), read_only=True) as store:
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

    from .analysis import (
        analyse,
        documents_for,
        documents_from_files,
        latest_eval_run,
        plot,
        save_reports,
    )
    from .store.db import open_store

    with open_store(_db_path(args)) as store:
        eval_run = args.eval_run or latest_eval_run(store.conn, args.task)
        if args.data:
            docs, failed = documents_from_files(store.conn, args.task, args.data,
                                                eval_run=eval_run)
        else:
            docs, failed = documents_for(store.conn, args.task, eval_run=eval_run,
                                         gen_run=args.gen_run)
        if not docs:
            raise UsageError(f"no {args.task} samples in the store to analyse")
        reports = analyse(docs, failed, task=args.task, n_topics_all=args.topics,
                          n_topics_failures=args.failure_topics, backend=args.backend)
        analysis_id = f"{args.task}-{datetime.now(UTC):%Y%m%d-%H%M%S}"
        save_reports(store.conn, analysis_id, reports)
    figure = plot(reports, Path(args.out or f"topics-{args.task}.png"))
    for report in reports:
        table = Table(title=f"{args.task}: {report.topic_set} ({report.n_documents} documents"
                            f"{f', {report.n_failures} failures' if report.n_failures else ''})")
        for col in ("topic", "top words", "share of samples", "share of failures",
                    "coherence"):
            table.add_column(col)
        for t in report.topics:
            table.add_row(str(t.index), " ".join(t.top_words[:8]), f"{t.share_samples:.1%}",
                          "—" if t.share_failures is None else f"{t.share_failures:.1%}",
                          f"{t.coherence:.2f}")
        out.print(table)
    failures = f" (failures from eval run {eval_run})" if eval_run and failed else ""
    out.print(f"analysis {analysis_id}{failures}: figure {figure}; rows in topic_results")
    return 0


def cmd_preselect(args: argparse.Namespace) -> int:
    from .preselect.run import PreselectConfig, preselect
    from .preselect.scoring import ScorerSpec

    cfg = run_config(args)
    pcfg = PreselectConfig(
        run=cfg, queries=tuple(args.queries), query_format=args.query_format,
        query_field=args.query_field, input_field=args.input_field, id_field=args.id_field,
        responses=args.responses, keep=args.keep, use_n=args.use_n,
        scorer=ScorerSpec(model=args.bertscore_model, num_layers=args.bertscore_layers,
                          baseline_path=args.bertscore_baseline,
                          batch_size=args.bertscore_batch, device=args.device))

    def on_run(run_id: str, resumed: bool) -> None:
        err.print(f"{'resuming' if resumed else 'starting'} pre-selection run {run_id} "
                  f"({args.responses} responses per query with {cfg.model}) -> {cfg.db}")

    outcome = anyio.run(lambda: preselect(pcfg, console=err, on_run=on_run))
    for note in outcome.notes:
        err.print(f"note: {note}")
    (err if outcome.exit_code else out).print(outcome.message)
    if outcome.kept:
        worst = outcome.kept[-1][1]
        out.print(f"kept {len(outcome.kept)} queries with mean pairwise BERTScore F1 <= "
                  f"{worst:.4f}; next: python -m halugen annotate add --from-run "
                  f"{outcome.run_id} --keep {len(outcome.kept)}")
    return outcome.exit_code


def cmd_annotate(args: argparse.Namespace) -> int:
    from .annotate import formats, items, resolve
    from .store.db import open_store

    action = args.annotate_command
    if action is None:
        raise UsageError("annotate needs an action: serve, tokens, add, import, export, resolve")
    if action == "tokens":
        from .annotate.server import make_tokens

        names = [n.strip() for n in args.annotators.split(",") if n.strip()]
        path = Path(args.out)
        path.write_bytes(orjson.dumps(make_tokens(names), option=orjson.OPT_INDENT_2))
        path.chmod(0o600)
        out.print(f"wrote tokens for {len(names)} annotator(s) to {path} (give each their own)")
        return 0
    if action == "serve":
        from .annotate.server import run_server

        tokens = None
        if args.tokens:
            try:
                tokens = orjson.loads(Path(args.tokens).read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                raise UsageError(f"--tokens {args.tokens}: {exc}") from None
        run_server(_db_path(args), args.host, args.port, allow_remote=args.allow_remote,
                   tokens=tokens, per_item=args.per_item,
                   ready=lambda server: print(f"annotation page at {server.url}", flush=True))
        return 0
    skipped: list[Any] = []
    with open_store(_db_path(args)) as store:
        if action == "add":
            if bool(args.from_run) == bool(args.jsonl):
                raise UsageError("give one of --from-run RUN or --jsonl FILE")
            n = (items.add_preselected(store, args.from_run, args.keep, skipped)
                 if args.from_run else items.add_jsonl(store, args.jsonl, skipped))
            out.print(f"added {n} item(s) to annotate")
        elif action == "import":
            if args.format == "labelstudio":
                n_items, n_labels = formats.import_labelstudio(store, args.file, skipped)
                out.print(f"imported {n_items} item(s) and {n_labels} annotation(s)")
            elif args.format == "jsonl":
                out.print(f"imported {formats.import_jsonl(store, args.file, skipped)} "
                          f"annotation(s)")
            else:
                out.print(f"imported {formats.import_halueval_general(store, args.file, skipped)}"
                          f" annotated item(s) from HaluEval's general file")
        elif action == "export":
            export = {"labelstudio": formats.export_labelstudio,
                      "jsonl": formats.export_jsonl,
                      "halueval": formats.export_halueval_general}[args.format]
            out.print(f"wrote {export(store, args.out)} record(s) to {args.out}")
        elif action == "resolve":
            out.print(resolve.format_report(resolve.resolve_all(store)))
    for skip in skipped:
        err.print(f"skipped {skip}")
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from .engine import load_tasks, resolve_price, resolve_tasks
    from .estimate import estimate_task

    cfg = run_config(args)
    if not cfg.seeds:
        raise UsageError("no seed files given: pass --seeds FILE")
    cfg, files_of = resolve_tasks(cfg)
    price, notes = resolve_price(cfg)
    tasks = load_tasks(cfg.tasks, cfg.prompts_dir)
    table = Table(title=f"Projected cost with {cfg.model} ({price.card} prices"
                        f"{', ' + price.date if price.date else ''})")
    for col in ("task", "seeds", "bad records", "calls", "prompt tokens", "typical cost",
                "most it can cost"):
        table.add_column(col, justify="right" if col != "task" else "left")
    exact = True
    for name, task in tasks.items():
        e = estimate_task(cfg, task, price, files_of[name])
        exact = exact and e.tokens_exact
        table.add_row(name, f"{e.seeds:,}", f"{e.bad_records:,}", f"{e.calls:,}",
                      f"{e.prompt_tokens:,}", format_usd(e.cost_typical_pusd),
                      format_usd(e.cost_max_pusd))
    out.print(table)
    out.print("typical: answers as long as the right answers; most: every call uses max_tokens "
              "(this is what the budget reserves).")
    if not exact:
        out.print("token counts are approximate (the model's tokenizer is not available here).")
    for note in notes:
        err.print(f"note: {note}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    outcome, summary = anyio.run(lambda: run_demo(
        db=Path(args.db), progress=not args.no_progress, console=err,
        latency_ms=args.latency_ms))
    out.print(outcome.message)
    for title, columns, rows in summary:
        _print_table(title, columns, rows)
    out.print(f"\nThe store is {args.db}. Try:\n"
              f"  python -m halugen sql \"SELECT pattern, count(*) FROM samples GROUP BY 1\" "
              f"--db {args.db}\n  python -m halugen status --db {args.db}")
    return outcome.exit_code


def _db_path(args: argparse.Namespace) -> Path:
    if args.db:
        return Path(args.db)
    settings = load_settings(Path("halugen.toml"))
    return Path(settings.get("db", "halugen.duckdb"))


def cmd_status(args: argparse.Namespace) -> int:
    from .store.db import open_store
    from .store.queries import run_overview, stage_costs

    with open_store(_db_path(args), read_only=True) as store:
        runs = run_overview(store)
        if not runs:
            out.print("no runs yet")
            return 0
        _print_table("Runs", list(runs[0]), [list(r.values()) for r in runs])
        costs = stage_costs(store)
        if costs:
            _print_table("Spend per stage", list(costs[0]), [list(r.values()) for r in costs])
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    import duckdb

    from .store.db import open_store

    with open_store(_db_path(args), read_only=True) as store:
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
            sys.stdout.write(orjson.dumps(records, default=str,
                                          option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            for rec in records:
                sys.stdout.write(orjson.dumps(rec, default=str).decode() + "\n")
    else:
        _print_table(None, columns, rows)
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    from .simulate import SimConfig, run_server

    kw: dict[str, Any] = {}
    if args.faults:
        kw["faults"] = tuple(f.strip() for f in args.faults.split(",") if f.strip())
    if args.oracle:
        from .evaluate.items import EVAL_FIELDS, items_from_files
        from .evaluate.judge import shown_texts

        oracle: dict[str, bool] = {}
        for path in args.oracle:
            task = next((t for t in ("qa", "dialogue", "summarization", "general")
                         if all(f in _first_json(path) for f in EVAL_FIELDS[t])), None)
            if task is None:
                raise UsageError(f"--oracle {path}: not one of HaluEval's released layouts")
            for item in items_from_files([path], task):
                right, hallucinated = shown_texts(item)
                if task == "general":
                    oracle[right] = bool(item.human_label)
                else:
                    oracle[right], oracle[hallucinated] = False, True
        kw["oracle"] = oracle
    if args.judge_accuracy is not None:
        kw["judge_accuracy"] = args.judge_accuracy
    config = SimConfig(
        latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, rpm=args.rpm, tpm=args.tpm,
        fail_rate=args.fail_rate, hang_s=args.hang_s, price_in=args.price_in,
        price_out=args.price_out, api_key=args.api_key, honour_n=not args.no_n,
        report_usage=not args.no_usage, seed=args.seed, garbage_rate=args.garbage_rate, **kw,
    )

    def ready(port: int) -> None:
        print(f"simulator listening on http://{args.host}:{port}/v1", flush=True)

    try:
        run_server(config, args.host, args.port, ready=ready)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_samples
    from .store.db import open_store

    with open_store(_db_path(args), read_only=True) as store:
        result = export_samples(store, fmt=args.format,
                                out=Path(args.out) if args.out else None, run=args.run,
                                task=args.task, where=args.where)
    if not result.files:
        err.print("no samples match")
        return 0
    for path, rows in result.files:
        out.print(f"wrote {rows:,} samples to {path}")
    return 0


def _first_json(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            line = f.readline()
        data = orjson.loads(line)
    except (OSError, orjson.JSONDecodeError):
        raise UsageError(f"{path}: cannot read its first JSON line") from None
    return data if isinstance(data, dict) else {}


def cmd_init(args: argparse.Namespace) -> int:
    path = Path("halugen.toml")
    if path.exists() and not args.force:
        raise UsageError(f"{path} exists; use --force to overwrite it")
    path.write_text(INIT_TEMPLATE, encoding="utf-8")
    out.print(f"wrote {path}")
    return 0


def _print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    table = Table(title=title)
    for c in columns:
        table.add_column(str(c), overflow="fold")
    for r in rows:
        table.add_row(*("" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)
                        for v in r))
    out.print(table)


COMMANDS = {
    "run": cmd_run, "estimate": cmd_estimate, "demo": cmd_demo, "status": cmd_status,
    "sql": cmd_sql, "simulate": cmd_simulate, "init": cmd_init, "export": cmd_export,
    "eval": cmd_eval, "report": cmd_report, "topics": cmd_topics,
    "preselect": cmd_preselect, "annotate": cmd_annotate,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return 2 if exc.code not in (0, None) else 0
    if not args.command:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except HalugenError as exc:
        if args.debug:
            raise
        err.print(f"error: {exc}", markup=False)
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as exc:
        if args.debug:
            raise
        err.print(f"error: unexpected {type(exc).__name__}: {exc} (this is a bug in halugen; "
                  f"--debug shows the traceback)", markup=False)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
