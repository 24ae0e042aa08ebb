"""``halugen task``: make a task folder to edit (``new``) and check one (``check``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import out

__all__ = ["COMMANDS", "add_parsers"]


def add_parsers(sub: Any) -> None:
    task = sub.add_parser(
        "task",
        help="your own task: a folder with task.toml and prompts/ (new, check)",
        description="A task is a folder: task.toml declares its fields, patterns, reply "
        "labels, guards and recognition strategies; prompts/ holds its templates. Every "
        "command that takes --task NAME takes --task PATH too.",
    )
    tsub = task.add_subparsers(dest="task_command", metavar="ACTION", required=True)
    new = tsub.add_parser(
        "new",
        help="write a task folder to edit, made from a built-in task",
        description="Copies a built-in task's folder under a new name: task.toml, commented "
        "throughout, and its templates, each noting the placeholders it must keep.",
    )
    new.add_argument("name", help="the task's name (lower-case letters, digits, _)")
    new.add_argument(
        "--like",
        required=True,
        choices=("qa", "dialogue", "summarization"),
        help="the built-in task to start from",
    )
    new.add_argument("--out", help="the folder to write (default: ./NAME)")
    check = tsub.add_parser(
        "check",
        help="check a task folder without calling anything (exit 2 on a problem)",
        description="Reads task.toml and every template it names: a missing or unknown key, "
        "a field named nowhere, a guard or shape that does not exist, a pattern without a "
        "definition, a template lacking a placeholder or naming one no field gives. One line "
        "per problem, naming the file and the key.",
    )
    check.add_argument("path", help="the task folder (or its task.toml)")
    check.add_argument(
        "--model",
        "-m",
        help="also say how the sampling and filter openings fit this model's prompt cache: "
        "their tokens, which variant the cache plan sends, what a warm call gets from cache "
        "(default: only the folder is checked)",
    )
    check.add_argument(
        "--price-card",
        metavar="NAME|FILE",
        help="the price card to read --model from, a bundled card's name or a TOML file "
        "(default: the first bundled card that lists the model)",
    )


def cmd_task(args: argparse.Namespace) -> int:
    if args.task_command == "new":
        return _new(args)
    return _check(args)


def _new(args: argparse.Namespace) -> int:
    from ..tasks.scaffold import new_folder

    folder = new_folder(args.name, args.like, Path(args.out) if args.out else None)
    out.print(
        f"wrote task folder {folder} (from the built-in {args.like} task). Edit task.toml and "
        f"prompts/, then: halugen task check {folder}"
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    from ..tasks import BUILTIN_DIR, BUILTIN_TASKS
    from ..tasks.checks import GUARDS
    from ..tasks.folder import check_folder
    from ..tasks.problems import TASK_FILE

    path = Path(args.path)
    if path.name == TASK_FILE:
        path = path.parent
    builtin = path.resolve().parent == BUILTIN_DIR
    spec, problems = check_folder(path, builtin=builtin, reserved=BUILTIN_TASKS)
    if spec is None:
        for problem in problems:
            out.print(problem.line(str(path)))
        return 2
    parts = [
        f"{path}: task {spec.name} is ready",
        f"{len(spec.templates)} templates",
        f"fields {', '.join(spec.record_fields)}",
    ]
    if spec.generated:
        parts.append(f"patterns {', '.join(spec.patterns)}")
        guards = [_guard_line(g, GUARDS) for g in spec.checks]
        parts.append(f"guards {', '.join(guards) or 'none'}")
    parts.append(f"strategies {', '.join(spec.strategies)}")
    out.print("; ".join(parts))
    if args.model:
        _print_openings(spec, args.model, args.price_card)
    return 0


def _guard_line(guard: Any, known: dict[str, type]) -> str:
    """A guard as ``task check`` names it: ``knowledge_overlap(max_gap=0.5)``."""
    import dataclasses

    names = {cls: name for name, cls in known.items()}
    name = names.get(type(guard), type(guard).__name__)
    settings = []
    for f in dataclasses.fields(guard):
        if not f.init or f.name == "problem":
            continue
        value = getattr(guard, f.name)
        shown = f"{len(value)} patterns" if isinstance(value, tuple) else repr(value)
        settings.append(f"{f.name}={shown}")
    return f"{name}({', '.join(settings)})" if settings else name


def _print_openings(spec: Any, model: str, card: str | None) -> None:
    from ..cost.cache import fit_lines, opening_fits
    from ..cost.prices import find_price
    from ..errors import UsageError
    from ..tokens import get_counter

    price = find_price(model, card=card)
    if price is None:
        raise UsageError(
            f"no price card lists model {model!r}: give a model a card lists, or "
            f"--price-card PATH with one that does"
        )
    from ..tasks.templates import task_template

    counter = get_counter(price.tokenizer)
    stems = (*spec.sample_templates, spec.filter_template) if spec.generated else ()
    fits = opening_fits([(s, task_template(spec, s)) for s in stems], price, counter)
    if not fits:
        out.print(f"task {spec.name} only judges: no openings are sent to {model}")
        return
    for line in fit_lines(fits, price, counter):
        out.print(line)


COMMANDS = {"task": cmd_task}
