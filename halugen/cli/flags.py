"""The flags the commands share: every setting's flag made from its declaration
(``options/``), ``--config``, ``--format``, the label rule's ``--per-item`` and
``--allow-partial``; and a command line's settings resolved (flag, environment,
halugen.toml, default).

Only light modules are imported here: building the parser (every ``--help``) must not load
DuckDB, aiohttp, pyarrow or asyncio.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..errors import UsageError
from ..options.spec import Setting
from ..options.table import GROUPS, default, setting, settings_in
from ..settings.resolve import Resolved, resolve
from ..tables import FORMATS

__all__ = [
    "TAKES",
    "add_config_flag",
    "add_format_flag",
    "add_label_rule_flags",
    "add_setting",
    "add_settings",
    "label_rule",
    "label_rule_asked",
    "resolve_settings",
]

TAKES = "settings_taken"  # the parsed arguments' list of the settings their command takes
RESOLVED = "settings_resolved"  # the parsed arguments' Resolved, once resolve_settings ran


def add_settings(p: argparse.ArgumentParser, *groups: str) -> None:
    """The flags of every setting of ``groups`` (see ``options.table.GROUPS``), each group
    under its heading (or among the command's own options), and ``--config`` when one of
    them has a key in halugen.toml."""
    for group in groups:
        title = GROUPS[group]
        where = p if title is None else p.add_argument_group(title)
        for s in settings_in(group):
            _add_flag(p, where, s)
    if any(s.toml is not None for group in groups for s in settings_in(group)):
        add_config_flag(p)


def add_setting(
    p: argparse.ArgumentParser,
    name: str,
    *,
    help: str | None = None,
    default_text: str | None = None,
    metavar: str | None = None,
) -> None:
    """The flag of one setting among the command's own options (``--db`` of ``status``),
    worded for this command where it says so: what it does (``help``), what its default
    does there (``default_text``; the default is added to the help), its ``metavar``."""
    wording = {"help": help, "default_text": default_text, "metavar": metavar}
    changes: dict[str, Any] = {k: v for k, v in wording.items() if v is not None}
    _add_flag(p, p, dataclasses.replace(setting(name), **changes))


def add_config_flag(p: argparse.ArgumentParser) -> None:
    if "--config" not in p._option_string_actions:
        p.add_argument(
            "--config",
            metavar="FILE",
            help="settings file (default: ./halugen.toml when there is one)",
        )


def _add_flag(p: argparse.ArgumentParser, where: Any, s: Setting) -> None:
    taken = p.get_default(TAKES) or ()
    p.set_defaults(**{TAKES: (*taken, s.name)})
    if not s.flags:  # halugen.toml (or the environment) only
        return
    kw: dict[str, Any] = {"dest": s.name, "default": None, "help": s.help_line().replace("%", "%%")}
    if s.const is not None:
        kw.update(action="store_const", const=s.const)
    else:
        kw.update(metavar=s.metavar, choices=s.choices)
        if s.repeat:
            kw["action"] = "append"
        if s.nargs:
            kw["nargs"] = s.nargs
        kinds = s.kind if isinstance(s.kind, tuple) else (s.kind,)
        if float in kinds:
            kw["type"] = float
        elif int in kinds:
            kw["type"] = int
    where.add_argument(*s.flags, **kw)


def resolve_settings(args: argparse.Namespace) -> Resolved:
    """Every setting the command takes, resolved (the flag, the environment, halugen.toml,
    the default), and set on ``args`` so the command reads ``args.<name>``. Done once per
    ``args``."""
    done = getattr(args, RESOLVED, None)
    if isinstance(done, Resolved):
        return done
    taken = getattr(args, TAKES, None) or ()
    given = {name: getattr(args, name, None) for name in taken}
    resolved = resolve(taken, given, config=getattr(args, "config", None))
    for name, value in resolved.values.items():
        setattr(args, name, value)
    setattr(args, RESOLVED, resolved)
    return resolved


def add_format_flag(p: argparse.ArgumentParser, extra: tuple[str, ...] = ()) -> None:
    """``--format`` of every command that prints tables (see halugen/tables.py)."""
    p.add_argument(
        "--format",
        choices=(*FORMATS, *extra),
        default="table",
        help=f"{', '.join((*FORMATS, *extra))}: how tables are printed; table is full width "
        "when piped, latex is booktabs (default: table)",
    )


def add_label_rule_flags(p: argparse.ArgumentParser, *, unasked: str | None = None) -> None:
    """``--per-item`` / ``--allow-partial`` of the commands that resolve, export or judge
    labelled items; ``unasked``: what the command does with partial items by default."""
    # the same number as 'annotate serve' asks of its annotators
    add_setting(p, "per_item", default_text=f"{default('per_item')}, as 'annotate serve'")
    add_setting(p, "allow_partial", default_text=unasked)


def label_rule_asked(args: argparse.Namespace) -> bool:
    """Whether ``--per-item`` or ``--allow-partial`` was given other than by default (for the
    commands where they do not apply)."""
    resolved = resolve_settings(args)
    return bool(resolved["allow_partial"]) or resolved["per_item"] != default("per_item")


def label_rule(args: argparse.Namespace) -> Any:
    """The ``LabelRule`` of ``--per-item`` / ``--allow-partial``."""
    from ..annotate.resolve import LabelRule

    resolved = resolve_settings(args)
    per_item = resolved["per_item"]
    if per_item < 1:
        raise UsageError(f"--per-item must be at least 1 (got {per_item})")
    return LabelRule(per_item=per_item, allow_partial=bool(resolved["allow_partial"]))
