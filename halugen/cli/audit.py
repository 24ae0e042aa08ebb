"""The audit command: how much of a benchmark can be solved without its knowledge."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .common import db_path, err, run_config
from .flags import add_config_flag, add_format_flag, add_setting, add_settings, resolve_settings

if TYPE_CHECKING:
    from ..store.db import Store
    from ..tasks.catalog import TaskCatalog


def add_parsers(sub: Any) -> None:
    au = sub.add_parser(
        "audit",
        help="accuracy of classifiers that never see the knowledge (length, answer text, "
        "overlap) and of certifying probes, beside chance; --balance keeps a hard split "
        "without such artifacts beside the full set",
    )
    au.add_argument(
        "--data",
        nargs="+",
        help="HaluEval-format files (JSON lines) to audit (default: the store's samples)",
    )
    au.add_argument(
        "--task",
        help="only this task: qa, dialogue, summarization, general or a task folder's path "
        "(default: every task)",
    )
    au.add_argument(
        "--run",
        nargs="+",
        metavar="RUN",
        help="only the samples of these generation runs (default: every run's)",
    )
    au.add_argument(
        "--measures",
        default="length_only,answer_only,overlap",
        help="comma-separated: length_only, answer_only (needs halugen[topics]), overlap "
        "(default: length_only,answer_only,overlap)",
    )
    au.add_argument(
        "--min-pairs",
        type=int,
        default=20,
        help="a pattern with fewer items gets no row of its own (default: 20)",
    )
    au.add_argument(
        "--probes",
        default="substring,final_char,casing,char_ngrams,weak_ensemble",
        help="comma-separated certifying probes, kept apart from the guards and --balance: "
        "substring, final_char, casing, char_ngrams, weak_ensemble (the last two need "
        "halugen[topics]), or none (default: substring,final_char,casing,char_ngrams,"
        "weak_ensemble)",
    )
    add_format_flag(au)
    au.add_argument(
        "--balance",
        action="store_true",
        help="choose the largest subset (the hard split, kept beside the full set) whose "
        "--measures are within --tolerance of 50%%, say what was dropped and why, and "
        "certify it with --probes",
    )
    au.add_argument(
        "--min-items",
        type=int,
        metavar="N",
        help="with --balance: accept a hard split of at least N items (default: 385, the "
        "size whose 95%% interval is ±5 points; smaller is refused unless given)",
    )
    au.add_argument(
        "--tolerance",
        type=float,
        default=0.05,
        help="how far from 50%% the baselines of --balance may stay (default: 0.05)",
    )
    au.add_argument(
        "--out",
        metavar="FILE",
        help="with --balance: write the full set to FILE, the hard split beside it "
        "(FILE's name with .hard before its suffix), both as read, and FILE.audit.json "
        "(default: write nothing)",
    )
    add_setting(
        au,
        "verify",
        help="instead of the classifiers: ask a judge model whether each hallucinated text "
        "of the --data files is supported by its knowledge (it should not be) and each right "
        "text is (it should be), and print the flagged share with its 95%% interval; a run "
        "of its own in the store, budgeted and resumable (docs/verify.md)",
    )
    add_setting(au, "verify_model")
    add_setting(au, "budget")
    add_setting(au, "progress")
    add_settings(au, "endpoint")
    add_setting(
        au,
        "db",
        help="the store: its samples are audited and the figures kept in audit_results (with "
        "--data, only a --db given here keeps them)",
    )
    add_config_flag(au)


def _measures(text: str) -> tuple[str, ...]:
    from ..audit.classifiers import MEASURES

    names = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in names if m not in MEASURES]
    if unknown or not names:
        raise UsageError(
            f"unknown --measures {', '.join(unknown) or '(none)'}; known: {', '.join(MEASURES)}"
        )
    return names


def _probes(text: str) -> tuple[str, ...]:
    from ..audit.probes import PROBES

    if text.strip() == "none":
        return ()
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in names if p not in PROBES]
    if unknown or not names:
        raise UsageError(
            f"unknown --probes {', '.join(unknown) or '(none)'}; known: {', '.join(PROBES)}, "
            "or none"
        )
    return names


def cmd_audit(args: argparse.Namespace) -> int:
    from ..audit import (
        audit_items,
        audit_tables,
        csv_table,
        items_from_file,
        items_from_store,
        pattern_shares,
        position_bias,
        save,
    )
    from ..audit.report import audit_id, rows_from_shares
    from ..store.db import open_store
    from ..tasks import is_task_path
    from ..tasks.catalog import TaskCatalog, read_task
    from ..tasks.stored import recall

    if resolve_settings(args)["verify"]:
        return _verify(args)
    measures = _measures(args.measures)
    probes = _probes(args.probes)
    if args.min_items is not None and not args.balance:
        raise UsageError("--min-items sets the smallest hard split: give --balance with it")
    if args.min_items is not None and args.min_items < 1:
        raise UsageError("--min-items must be a whole number of items, 1 or more")
    if args.out and not args.balance:
        raise UsageError("--out writes a balanced set: give --balance with it")
    if not 0 < args.tolerance < 0.5:
        raise UsageError("--tolerance must be between 0 and 0.5 (e.g. 0.05 for 5 points)")
    if args.data and args.run:
        raise UsageError("--run selects the store's samples; it does not apply to --data files")
    catalog = TaskCatalog()  # the built-in tasks, the folder given, the store's folders
    if args.task and is_task_path(args.task):  # read and checked here, then its name
        given = read_task(args.task, catalog)
        catalog, args.task = catalog.with_tasks([given]), given.name
    rows = []
    groups: list[tuple[str, list]] = []  # (source, items)
    store = None
    try:
        if args.data:
            chosen = catalog[args.task] if args.task else None
            for path in args.data:
                items = list(items_from_file(path, chosen, tasks=catalog))
                groups.append((path, items))
            if resolve_settings(args).origin["db"] == "flag":
                store = open_store(Path(args.db))
        else:
            store = open_store(db_path(args))
            catalog = recall(store, catalog)  # the task folders its runs used
            source = "runs " + ", ".join(args.run) if args.run else "store"
            items = list(items_from_store(store, task=args.task, runs=args.run, tasks=catalog))
            if not items:
                raise UsageError(
                    "no samples to audit in the store"
                    + (f" for task {args.task}" if args.task else "")
                    + (f" in run(s) {', '.join(args.run)}" if args.run else "")
                    + " (or give --data FILE)"
                )
            groups.append((source, items))
        for source, items in groups:
            rows += audit_items(
                items, source=source, measures=measures, min_pairs=args.min_pairs, probes=probes
            )
            if not args.data and store is not None:
                patterns = {}
                for task in {i.task for i in items}:
                    patterns[task] = catalog[task].patterns
                shares = position_bias(store, task=args.task, runs=args.run)
                shares += pattern_shares(items, patterns)
                rows += rows_from_shares(shares, source)
        balanced_rows = []
        identity = audit_id(" ".join(s for s, _ in groups))
        if args.balance:
            # a balance of the store's samples records its hard split there (export takes it)
            keep_in = None if args.data else store
            balanced_rows = _balance(
                args, groups, rows, measures, probes, keep_in, identity, catalog
            )
        if store is not None:
            save(store, rows + balanced_rows, identity)
            err.print(f"audit {identity}: {len(rows + balanced_rows)} row(s) in audit_results")
    finally:
        if store is not None:
            store.close()
    # per source and task: the classifiers, then position bias, then pattern shares
    order = {s: i for i, (s, _) in enumerate(groups)}
    rows.sort(key=lambda r: (order.get(r.source, len(order)), r.task))
    shown = rows + balanced_rows
    from ..tables import render_tables

    # csv: one line per figure with its source and note, as `audit_results` holds them
    render_tables([csv_table(shown)] if args.format == "csv" else audit_tables(shown), args.format)
    from ..audit.certify import certify_lines

    for line in certify_lines(shown):
        err.print(line)
    return 0


def _balance(
    args: argparse.Namespace,
    groups: list[tuple[str, list]],
    before: list,
    measures: tuple,
    probes: tuple[str, ...],
    store: Store | None,
    identity: str,
    tasks: TaskCatalog,
) -> list:
    """Balance the one group; print what was kept and dropped, and what its size can show;
    record the hard split in ``store`` (the store's samples were balanced) and write --out
    (the full set and the hard split beside it). The hard split's audit rows."""
    import dataclasses

    from ..audit import audit_items, balance, write_balanced
    from ..audit.balance import BALANCED_MEASURES, describe_balance
    from ..intervals import SIZE_FLOOR, size_line
    from ..store.hard_splits import record_hard_split

    if len(groups) != 1 or len({i.task for i in groups[0][1]}) != 1:
        raise UsageError(
            "--balance works on one task of one source: give one --data file, or --task"
        )
    source, items = groups[0]
    floor = SIZE_FLOOR if args.min_items is None else args.min_items
    too_few = (
        "; give --min-items N to accept a smaller hard split, knowing what its size cannot show"
    )
    if len(items) < floor:
        raise UsageError(
            f"{len(items)} item(s) cannot give a hard split of {floor}: "
            + (size_line(len(items)) + too_few)
        )
    result = balance(
        items, tolerance=args.tolerance, measures=[m for m in measures if m in BALANCED_MEASURES]
    )
    after = audit_items(
        result.kept, source=source, measures=measures, min_pairs=args.min_pairs, probes=probes
    )
    label, summary, balanced = describe_balance(
        result, source, after, total=len(items), tolerance=args.tolerance
    )
    after = [dataclasses.replace(r, source=label) for r in after]
    err.print(summary)
    kept = len(result.kept)
    err.print(
        f"hard split: {kept} of {len(items)} item(s) ({kept / len(items):.0%} kept); "
        + size_line(kept)
    )
    if kept < floor:
        raise UsageError(
            f"the hard split holds {kept} item(s), fewer than {floor}: " + size_line(kept) + too_few
        )
    if store is not None:
        runs = sorted({i.run_id for i in items})
        record_hard_split(
            store,
            audit_id=identity,
            task=items[0].task,
            runs=runs,
            members=[(i.run_id, i.seed_key) for i in result.kept],
            balanced=balanced,
        )
        err.print(
            f"hard split of {items[0].task} recorded for run(s) {', '.join(runs)} "
            f"(audit {identity}): 'halugen export' writes it beside the full set"
        )
    if args.out:
        meta, hard = write_balanced(
            result,
            Path(args.out),
            source=source,
            full=items,
            before=[r for r in before if r.source == source],
            after=after,
            tolerance=args.tolerance,
            balanced=balanced,
            tasks=tasks,
        )
        err.print(
            f"wrote the full set ({len(items)} item(s)) to {args.out}, the hard split "
            f"({kept}) to {hard}; figures and drops in {meta}"
        )
    return after


COMMANDS = {"audit": cmd_audit}


def _verify(args: argparse.Namespace) -> int:
    """``audit --verify --data FILE``: the verify stage's questions over the files."""
    import anyio

    from ..audit import items_from_file
    from ..audit.verify import check_table, verify_items
    from ..tables import render_tables
    from ..tasks.catalog import TaskCatalog, read_task

    if not args.data:
        raise UsageError(
            "audit --verify checks files: give --data FILE (a run's own samples are checked "
            "by 'halugen run --verify')"
        )
    if args.balance or args.run:
        raise UsageError("audit --verify takes --data and --task only, not --balance or --run")
    cfg = run_config(args)
    catalog = TaskCatalog()
    chosen = read_task(args.task, catalog) if args.task else None  # a name, or a folder
    if chosen is not None:
        catalog = catalog.with_tasks([chosen])
    items = [i for path in args.data for i in items_from_file(path, chosen, tasks=catalog)]
    checks = anyio.run(
        lambda: verify_items(cfg, list(args.data), items, console=err, tasks=catalog)
    )
    render_tables([check_table(checks, ", ".join(args.data))], args.format)
    for check in checks:
        caution = check.caution()
        if caution:
            err.print(caution, markup=False, highlight=False)
    status, message = (checks[0].status, checks[0].message) if checks else ("done", "")
    if status != "done":  # budget used up, Ctrl-C: the same command continues
        err.print(f"audit --verify {status}" + (f": {message}" if message else ""))
    from ..errors import EXIT_CODES

    return EXIT_CODES.get(status, 1)
