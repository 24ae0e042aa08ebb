"""The house's layout holds: every import runs down a floor or along one, never up, and no
files import each other in a loop.

The floors below are the design (docs/design-notes.md draws them): a module may import from
its own floor or any floor under it. Imports inside functions count too: they are how a loop
used to be hidden. A new top-level module or folder must be given a floor here, so that its
place is a decision, not an accident.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.python_source import parse_file

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "halugen"

# room (a top-level module's name, or a folder's name) -> floor; 1 is the ground
FLOORS: dict[str, int] = {
    # ground: plain values, errors, formats, parsers; they import nothing above them
    **dict.fromkeys(
        (
            "_groups",
            "config",
            "crew",
            "cut_note",
            "endings",
            "errors",
            "intervals",
            "local_page",
            "options",
            "paper",
            "prompts",
            "records",
            "reply_text",
            "resources",
            "signals",
            "stats",
            "structured_outputs",
            "table_layout",
            "tables",
            "tokens",
            "version",
            "examples",
        ),
        1,
    ),
    # what is done with the settings' declarations (the file, the run objects)
    **dict.fromkeys(("store", "settings"), 2),
    **dict.fromkeys(("cost", "budget", "label_noise"), 3),
    "llm": 4,
    **dict.fromkeys(("reply_contract", "context_window", "progress_figures", "progress"), 5),
    **dict.fromkeys(("tasks", "seeds", "simulate"), 6),
    # a command's RunConfig: the settings, a budget's text (cost) and --map (seeds) read
    "run_settings": 6,
    # the annotation track and the read-only view stand on the store and the seeds alone:
    # evaluation and export read their label resolution (annotate/resolve.py)
    **dict.fromkeys(("session", "annotate", "view"), 7),
    **dict.fromkeys(("batch", "stages", "pipeline"), 8),
    **dict.fromkeys(("engine", "evaluate", "preselect", "analysis", "figures"), 9),
    **dict.fromkeys(("export", "audit", "demo"), 10),
    "__init__": 11,
    **dict.fromkeys(("cli", "__main__"), 12),
}

# rooms on one floor that must still not import each other: each pair would add a floor
NEVER: set[tuple[str, str]] = {("batch", "stages"), ("stages", "batch")}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


MODULES = dict(_modules())


def _room(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """The modules of this package that ``module`` imports, anywhere in its text."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(parse_file(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # ``from . import x`` may name a module x of the package, or a name in it
            names = [f"{target}.{a.name}" for a in node.names]
            names = [n if n in MODULES else target for n in names]
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, node.lineno


GRAPH = {m: dict(_imports(m, p)) for m, p in MODULES.items()}


def test_every_room_has_a_floor() -> None:
    unplaced = sorted({_room(m) for m in MODULES} - FLOORS.keys())
    assert not unplaced, f"give these a floor in tests/test_house.py: {unplaced}"


def test_no_import_runs_back_up() -> None:
    upward = []
    for module, targets in GRAPH.items():
        here = _room(module)
        for target, line in targets.items():
            there = _room(target)
            if here == there:
                continue
            if FLOORS.get(there, 0) > FLOORS.get(here, 0) or (here, there) in NEVER:
                upward.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}")
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_no_files_import_each_other_in_a_loop() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not loops, "files that import each other in a loop: " + "; ".join(map(str, loops))


@pytest.mark.parametrize("module", ["halugen.intervals", "halugen.version"])
def test_ground_modules_import_nothing_of_the_package(module: str) -> None:
    assert not GRAPH[module]
