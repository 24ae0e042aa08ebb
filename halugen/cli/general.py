"""Commands of the general user-query track: preselect, annotate."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..settings.build import assemble
from ..tables import TableData, render_tables
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
    pre = sub.add_parser(
        "preselect",
        help="general track: sample responses to user queries, "
        "keep those whose responses disagree most (BERTScore)",
    )
    pre.add_argument(
        "--queries",
        nargs="+",
        required=True,
        metavar="FILE",
        help="Alpaca JSON, or JSONL/CSV files of queries",
    )
    add_settings(pre, "preselect", "sampling", "endpoint", "run", "resume", "batch")

    ann = sub.add_parser(
        "annotate", help="human annotation: serve the page, import, export, resolve"
    )
    asub = ann.add_subparsers(dest="annotate_command", metavar="ACTION")
    a_serve = asub.add_parser("serve", help="the annotation page on this machine")
    a_serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    a_serve.add_argument("--port", type=int, default=8080, help="port (default: 8080)")
    a_serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback bind (then tokens are required)",
    )
    a_serve.add_argument(
        "--tokens",
        metavar="FILE",
        help="JSON file of annotator -> token, see 'annotate tokens' (default: no tokens, "
        "loopback only)",
    )
    add_setting(a_serve, "per_item", help="annotators per item", metavar="PER_ITEM")
    a_serve.add_argument(
        "--guidelines",
        metavar="FILE.md",
        help="your guidelines for annotators, shown on the page as text "
        "(default: halugen's short guide to yes/no and the three kinds)",
    )
    a_tok = asub.add_parser("tokens", help="make per-annotator tokens for a remote server")
    a_tok.add_argument("--annotators", required=True, metavar="NAMES", help="comma-separated names")
    a_tok.add_argument(
        "-o",
        "--out",
        default="annotator-tokens.json",
        metavar="FILE",
        help="where to write them (default: annotator-tokens.json)",
    )
    a_add = asub.add_parser("add", help="add items to annotate")
    a_add.add_argument(
        "--from-run",
        metavar="RUN",
        help="a pre-selection run: its kept queries' responses (no default: give this or --jsonl)",
    )
    add_setting(a_add, "keep", help="how many of that run's queries, best ranked first")
    a_add.add_argument(
        "--jsonl",
        metavar="FILE",
        help="JSON lines of {item_id?, query, response} (no default: give this or --from-run)",
    )
    a_imp = asub.add_parser("import", help="import annotations (and their items)")
    a_imp.add_argument("file", metavar="FILE", help="the file to import")
    a_imp.add_argument(
        "--format",
        choices=("labelstudio", "jsonl", "halueval"),
        required=True,
        help="Label Studio's JSON export, JSON lines of labels, or HaluEval's general_data.json",
    )
    a_exp = asub.add_parser("export", help="export annotations")
    a_exp.add_argument(
        "--format",
        choices=("labelstudio", "jsonl", "halueval"),
        required=True,
        help="Label Studio's JSON, JSON lines of labels, or HaluEval's general_data.json",
    )
    a_exp.add_argument("-o", "--out", required=True, metavar="FILE", help="the file to write")
    a_res = asub.add_parser("resolve", help="majority labels, spans and agreement (Fleiss' kappa)")
    add_format_flag(a_res)
    for a in (a_exp, a_res):
        add_label_rule_flags(a)
    for a in (a_serve, a_add, a_imp, a_exp, a_res):
        add_setting(a, "db")
        add_config_flag(a)


def cmd_preselect(args: argparse.Namespace) -> int:
    import anyio

    from ..preselect.run import PreselectConfig, preselect

    cfg = run_config(args)
    pcfg = assemble(PreselectConfig, resolve_settings(args), run=cfg, queries=tuple(args.queries))

    detail = f"{args.responses} responses per query with {{model}}"
    on_run = announce("pre-selection run", detail)
    outcome = anyio.run(lambda: preselect(pcfg, console=err, on_run=on_run))
    report_outcome(outcome)
    if outcome.kept:
        worst = outcome.kept[-1][1]
        out.print(
            f"kept {len(outcome.kept)} queries with mean pairwise BERTScore F1 <= "
            f"{worst:.4f}; next: python -m halugen annotate add --from-run "
            f"{outcome.run_id} --keep {len(outcome.kept)}"
        )
    return outcome.exit_code


def cmd_annotate(args: argparse.Namespace) -> int:
    import orjson

    from ..annotate import formats, items, labelstudio
    from ..store.db import open_store

    action = args.annotate_command
    if action is None:
        raise UsageError("annotate needs an action: serve, tokens, add, import, export, resolve")
    if action == "tokens":
        from ..annotate.access import make_tokens

        names = [n.strip() for n in args.annotators.split(",") if n.strip()]
        path = Path(args.out)
        path.write_bytes(
            orjson.dumps(make_tokens(names, organiser=True), option=orjson.OPT_INDENT_2)
        )
        path.chmod(0o600)
        out.print(
            f"wrote tokens for {len(names)} annotator(s) to {path} (give each their own; "
            f'the one under "@organiser" opens the organiser view)'
        )
        return 0
    if action == "serve":
        from ..annotate.guidelines import load_guidelines
        from ..annotate.serving import ServeOptions, run_server

        guidelines = load_guidelines(args.guidelines) if args.guidelines else None
        tokens = None
        if args.tokens:
            try:
                tokens = orjson.loads(Path(args.tokens).read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                raise UsageError(f"--tokens {args.tokens}: {exc}") from None
        options = ServeOptions(
            host=args.host,
            port=args.port,
            allow_remote=args.allow_remote,
            tokens=tokens,
            per_item=args.per_item,
            guidelines=guidelines,
        )
        run_server(
            db_path(args),
            options,
            ready=lambda server: print(
                f"annotation page at {server.url} (organiser view: {server.organiser_url})",
                flush=True,
            ),
        )
        return 0
    if action == "resolve":
        report = _resolve(args)
        render_tables([_resolve_table(report)], args.format)
        note = label_rule(args).left_out(report.partial)
        if note:
            err.print(f"note: {note}")
        return 0
    skipped: list[Any] = []
    # an export only reads: it also works while 'annotate serve' holds the store
    with open_store(db_path(args), read_only=action == "export") as store:
        if action == "add":
            if bool(args.from_run) == bool(args.jsonl):
                raise UsageError("give one of --from-run RUN or --jsonl FILE")
            n = (
                items.add_preselected(store, args.from_run, args.keep, skipped)
                if args.from_run
                else items.add_jsonl(store, args.jsonl, skipped)
            )
            out.print(f"added {n} item(s) to annotate")
        elif action == "import":
            if args.format == "labelstudio":
                n_items, n_labels = labelstudio.import_labelstudio(store, args.file, skipped)
                out.print(f"imported {n_items} item(s) and {n_labels} annotation(s)")
            elif args.format == "jsonl":
                out.print(
                    f"imported {formats.import_jsonl(store, args.file, skipped)} annotation(s)"
                )
            else:
                out.print(
                    f"imported {formats.import_halueval_general(store, args.file, skipped)}"
                    f" annotated item(s) from HaluEval's general file"
                )
        elif action == "export":
            rule = label_rule(args)
            if args.format == "halueval":
                general = formats.export_halueval_general(store, args.out, rule)
                written, note = general.rows, rule.left_out(general.partial)
            else:
                if label_rule_asked(args):
                    raise UsageError(
                        f"--per-item and --allow-partial choose resolved items: "
                        f"--format {args.format} writes every label as it is, resolved or not"
                    )
                export = {
                    "labelstudio": labelstudio.export_labelstudio,
                    "jsonl": formats.export_jsonl,
                }[args.format]
                written, note = export(store, args.out), None
            out.print(f"wrote {written} record(s) to {args.out}")
            if note:
                err.print(f"note: {note}")
    for skip in skipped:
        # a record kept with a warning (e.g. under a derived id) is not a skipped one
        err.print(f"{'warning' if getattr(skip, 'kept', False) else 'skipped'} {skip}")
    return 0


def _resolve(args: argparse.Namespace) -> Any:
    """Resolve in this process, or, while another one holds the store (``annotate serve``),
    ask that one to: it offers the resolution, and its writes stay its own."""
    from ..annotate.resolve import RESOLVE_ACTION, report_from_json, resolve_all
    from ..errors import StoreInUse
    from ..store.db import open_store
    from ..store.live import ask_holder

    rule = label_rule(args)
    path = db_path(args)
    try:
        store = open_store(path)
    except StoreInUse:
        asked = {"per_item": rule.per_item, "allow_partial": rule.allow_partial}
        result = ask_holder(path, RESOLVE_ACTION, asked)
        if result is not None:
            err.print("note: resolved by the process that holds the store (annotate serve)")
            return report_from_json(result)
        store = open_store(path)  # it let go of the file meanwhile
    with store:
        return resolve_all(store, rule)


def _resolve_table(report: Any) -> TableData:
    """The resolution report as (measure, value) rows, numbers as numbers."""
    rows: list[list[Any]] = [
        ["items with labels", report.items],
        ["resolved by majority", report.resolved],
        ["ties (resolved yes)", report.ties],
        ["single label", report.single],
        *([f"items with {n} labels", c] for n, c in sorted(report.raters_per_item.items())),
        *([f"resolved {label}", c] for label, c in sorted(report.label_counts.items())),
        ["Fleiss' kappa", report.fleiss_kappa],
        ["kappa over items", report.kappa_items],
        ["kappa raters per item", report.kappa_raters],
        ["percent agreement", report.percent_agreement],
        ["Krippendorff's alpha", report.krippendorff_alpha],
        ["span agreement (character F1)", report.span_agreement],
        [f"left out (fewer than {report.per_item} labels)", report.partial],
        ["resolutions written", report.written],
    ]
    return TableData("Annotation agreement", ["measure", "value"], rows, name="agreement")


COMMANDS = {"preselect": cmd_preselect, "annotate": cmd_annotate}
