"""A task is read once, where a command starts, and passed down: no registry, no cycles.

The command line (``halugen/cli/``) and the Python API's entries read ``--task`` (a name or
a task folder's path) into a ``TaskSpec`` / ``TaskCatalog``; below them nothing looks a task
up in process-wide state. ``prompts.py`` is a plain template parser, and the task's
declaration (``tasks.base``) and its steps (``tasks.steps``) import each other in one
direction only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from halugen.errors import UsageError
from halugen.tasks.catalog import TaskCatalog, read_tasks
from tests.python_source import parse_file

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "halugen"
EXAMPLES = ROOT / "tests" / "tasks" / "folders"

# the names of the old process-wide registry: none may come back
REGISTRY_NAMES = {"get_task", "known_tasks", "_REGISTERED", "get_task_or_stored"}
# what reads a --task argument (a name or a folder's path) into a task: the entries only
READERS = {"read_task", "read_tasks", "read_task_folder", "read_task_or_stored", "read_run_tasks"}
# where a --task argument may be read: the command line, the Python API's entries (the
# functions ``halugen.generate`` and ``evaluate`` that take a config naming its tasks), and
# the modules that define the readers
ENTRIES = ("halugen/cli/", "halugen/__init__.py", "halugen/tasks/")
API_ENTRIES = {
    "halugen/engine.py": {"generate", "read_run_tasks"},
    "halugen/evaluate/run.py": {"evaluate"},
}


def _sources() -> dict[str, ast.Module]:
    return {p.relative_to(ROOT).as_posix(): parse_file(p) for p in sorted(PACKAGE.rglob("*.py"))}


SOURCES = _sources()


def _names(node: ast.AST) -> set[str]:
    """Every name ``node`` uses or imports."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.alias):
            out.add(n.name.rsplit(".", 1)[-1])
            if n.asname:
                out.add(n.asname)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            out.add(n.name)
    return out


def test_no_module_keeps_or_asks_a_task_registry() -> None:
    found = {path: sorted(_names(tree) & REGISTRY_NAMES) for path, tree in SOURCES.items()}
    assert {p: n for p, n in found.items() if n} == {}


def test_only_the_entries_read_a_task_argument() -> None:
    """Below the command line a task arrives as an argument; only the entries read one."""
    outside: dict[str, list[str]] = {}
    for path, tree in SOURCES.items():
        if path.startswith(ENTRIES):
            continue
        allowed = API_ENTRIES.get(path, set())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in allowed:
                continue
            if allowed and isinstance(node, ast.ImportFrom):
                continue  # what the entry functions use
            used = sorted(_names(node) & READERS)
            if used:
                outside.setdefault(path, []).extend(used)
    assert outside == {}


def test_a_folder_read_once_is_not_remembered_by_the_process() -> None:
    (spec,), catalog = read_tasks([str(EXAMPLES / "glossary")])
    assert catalog["glossary"] is spec
    with pytest.raises(UsageError, match="unknown task 'glossary'"):
        TaskCatalog()["glossary"]  # a fresh catalog knows the built-in tasks only


# -- imports ---------------------------------------------------------------------------------


def _module_file(module: str) -> str | None:
    base = ROOT / Path(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py").relative_to(ROOT).as_posix()
    if (base / "__init__.py").is_file():
        return (base / "__init__.py").relative_to(ROOT).as_posix()
    return None


def _imports(path: str, tree: ast.Module) -> set[str]:
    """The files of halugen that ``path`` imports, anywhere in it (functions and
    ``TYPE_CHECKING`` blocks included: an arrow is an arrow)."""
    package = path.removesuffix(".py").split("/")[:-1]  # what "." means in it
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # "from pkg import sub" names a file when sub is a module of pkg
            targets = [
                f"{module}.{a.name}" for a in node.names if _module_file(f"{module}.{a.name}")
            ]
            if len(targets) < len(node.names):
                targets.append(module)
        else:
            continue
        for target in targets:
            if target.startswith("halugen"):
                file = _module_file(target)
                if file is not None and file != path:
                    out.add(file)
    return out


GRAPH = {path: _imports(path, tree) for path, tree in SOURCES.items()}
TASK_FILES = [*sorted(p for p in GRAPH if p.startswith("halugen/tasks/")), "halugen/prompts.py"]


def _reaches(start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(GRAPH[start])
    while todo:
        file = todo.pop()
        if file not in seen:
            seen.add(file)
            todo.extend(GRAPH.get(file, ()))
    return seen


@pytest.mark.parametrize("path", TASK_FILES)
def test_no_task_file_imports_itself_back(path: str) -> None:
    """No file of tasks/ (nor prompts.py) imports a file that imports it back, directly or
    through others."""
    back = sorted(f for f in GRAPH[path] if path in _reaches(f) or f == path)
    assert back == []


def test_prompts_is_a_parser_on_the_ground_floor() -> None:
    assert not {f for f in GRAPH["halugen/prompts.py"] if f.startswith("halugen/tasks/")}


def test_the_store_does_not_climb_to_the_tasks() -> None:
    climbs = {p: sorted(f for f in GRAPH[p] if f.startswith("halugen/tasks/")) for p in GRAPH}
    assert {p: fs for p, fs in climbs.items() if p.startswith("halugen/store/") and fs} == {}


def test_no_import_inside_a_function_in_tasks() -> None:
    """The circles used to close through imports inside functions; tasks/ has none."""
    inside = []
    for path in TASK_FILES:
        for node in ast.walk(SOURCES[path]):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                inside += [
                    f"{path}:{n.lineno}"
                    for n in ast.walk(node)
                    if isinstance(n, ast.Import | ast.ImportFrom)
                ]
    assert inside == []
