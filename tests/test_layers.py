"""Which modules may import which: the floors batch mode sits between (issue 26, step 2).

The session takes its call strategy from its caller, so it knows nothing of batch mode;
batch mode drives passes over a session factory, so it knows none of the kinds it runs;
the stages see only the strategy. Every import counts, at the top of a module or inside a
function, ``TYPE_CHECKING`` ones included: an import inside a function is how a circle
closes unseen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.python_source import parse_file

ROOT = Path(__file__).resolve().parents[1] / "halugen"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (ROOT.parent / rel).with_suffix(".py").exists() or (ROOT.parent / rel).is_dir()


def imports_of(path: Path) -> set[str]:
    """Every halugen module ``path`` imports (relative imports resolved)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "halugen")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "halugen":
                continue
            subs = [f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")]
            found.update(subs)
            if len(subs) < len(node.names):  # a name defined in ``target`` itself
                found.add(target)
    return found


def _files(where: str) -> Iterator[Path]:
    path = ROOT / where
    yield from sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


# (modules, what none of them may import)
RULES = [
    ("session", ("halugen.batch", "halugen.seeds")),
    ("stages", ("halugen.batch", "halugen.engine", "halugen.evaluate", "halugen.preselect")),
    (
        "batch",
        ("halugen.engine", "halugen.evaluate", "halugen.preselect", "halugen.stages"),
    ),
]


@pytest.mark.parametrize(("where", "forbidden"), RULES, ids=[r[0] for r in RULES])
def test_a_lower_floor_imports_nothing_of_these(where: str, forbidden: tuple[str, ...]) -> None:
    climbs = [
        f"{_module_name(path)} imports {target}"
        for path in _files(where)
        for target in sorted(imports_of(path))
        if _under(target, forbidden)
    ]
    assert climbs == []


def test_the_session_does_not_import_the_public_api() -> None:
    assert "halugen" not in imports_of(ROOT / "session.py")


def test_batch_modules_import_each_other_without_a_circle() -> None:
    graph = {
        _module_name(path): {t for t in imports_of(path) if _under(t, ("halugen.batch",))}
        for path in _files("batch")
    }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert sorted(m for m in graph if reaches(m, m, {m})) == []


def test_the_import_reader_resolves_relative_imports() -> None:
    # the check above is only as good as this reader: a relative import of a module, of a
    # name in a package, and one inside a function are all seen
    found = imports_of(ROOT / "batch" / "exchange.py")
    assert {"halugen.batch.book", "halugen.batch.modes", "halugen.config"} <= found
    assert "halugen.session" in imports_of(ROOT / "batch" / "run.py")
    assert "halugen.endings" in imports_of(ROOT / "batch" / "run.py")  # also inside functions
