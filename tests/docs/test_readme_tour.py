"""The README's tour names the commands a newcomer needs, in the order they need them.

That every command of the README (the tour included) runs against the simulator is
test_docs_commands.py's part: one player of the pages' commands.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.docs.page_shell import halugen_argv
from tests.docs.shown_commands import shown_commands

ROOT = Path(__file__).resolve().parents[2]


def tour_verbs() -> list[str]:
    readme = ROOT / "README.md"
    tour_starts = readme.read_text(encoding="utf-8").splitlines().index("## A tour") + 1
    verbs = []
    for command in shown_commands(readme):
        args = halugen_argv(shlex.split(command.text.removesuffix("&")))
        if command.line > tour_starts and args:
            verbs.append(args[0])
    return verbs


def test_the_tour_names_the_commands_a_newcomer_needs() -> None:
    verbs = tour_verbs()
    assert verbs[:3] == ["simulate", "estimate", "run"]
    assert {"status", "sql", "export", "audit", "eval", "report", "compare", "view"} <= set(verbs)
