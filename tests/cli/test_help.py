"""Every option of every command says what it does and, when it takes a value, its default."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from halugen.cli import build_parser


def _parsers(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*words, name))


def _options() -> Iterator[tuple[str, argparse.Action]]:
    for words, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                continue
            yield " ".join(("halugen", *words)), action


def test_the_walk_sees_every_command():
    commands = {command for command, _ in _options()}
    assert {"halugen run", "halugen simulate", "halugen preselect", "halugen sql"} <= commands
    assert {"halugen annotate serve", "halugen batch export", "halugen audit"} <= commands
    assert len(commands) >= 20


def test_every_option_has_a_help_line():
    missing = [
        f"{command} {'/'.join(a.option_strings) or a.dest}"
        for command, a in _options()
        if not a.help or a.help == argparse.SUPPRESS or len(a.help.split()) < 2
    ]
    assert not missing, missing


def test_every_option_that_takes_a_value_names_its_default():
    silent = []
    for command, a in _options():
        takes_value = a.option_strings and a.nargs != 0 and not a.required
        if takes_value and "default" not in (a.help or ""):
            silent.append(f"{command} {'/'.join(a.option_strings)}")
    assert not silent, silent


def test_a_default_in_the_help_is_the_one_used():
    # argparse's own default, where a flag has one, is what its help line says
    wrong = []
    for command, a in _options():
        if a.option_strings and a.default not in (None, False, argparse.SUPPRESS):
            shown = str(a.default)
            if shown.endswith(".0"):
                shown = shown[:-2]
            if shown not in (a.help or ""):
                wrong.append(f"{command} {a.option_strings[-1]}: {a.default!r} / {a.help!r}")
    assert not wrong, wrong


def test_help_renders_for_every_command(capsys):
    for words, parser in _parsers(build_parser()):
        text = parser.format_help()
        assert "usage:" in text, words
