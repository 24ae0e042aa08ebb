"""cost/ stands on the ground floor's files alone: the budget, llm/, batch/ and the stages
price calls with it, so it must not reach up to them, nor to the tasks or the seeds (what it
needs of a task is a Protocol the caller's objects fill)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.python_source import parse_file

COST = Path(__file__).resolve().parents[2] / "halugen" / "cost"
# the halugen modules cost/ may import besides its own
GROUND = {"config", "errors", "prompts", "records", "resources", "tokens"}


def _halugen_module(name: str) -> set[str]:
    """{'x'} for an absolute import of halugen.x..., {'halugen'} for the package root."""
    parts = name.split(".")
    if parts[0] != "halugen":
        return set()
    return {parts[1] if len(parts) > 1 else "halugen"}


def _halugen_imports(path: Path) -> set[str]:
    """The top-level halugen modules ``path`` imports (anywhere in it), cost's own as 'cost'."""
    found = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .prices import ..., from . import x
                found.add("cost")
            elif node.level == 2:  # from ..tokens import ...; from .. import x
                names = [node.module] if node.module else [a.name for a in node.names]
                found.update(n.split(".")[0] for n in names)
            elif node.module:
                found.update(_halugen_module(node.module))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_halugen_module(alias.name))
    return found


def test_cost_imports_only_ground_files() -> None:
    files = sorted(COST.glob("*.py"))
    assert {p.name for p in files} >= {"prices.py", "cache.py", "batch_prices.py", "estimate.py"}
    above = {p.name: sorted(_halugen_imports(p) - GROUND - {"cost"}) for p in files}
    assert not {name: mods for name, mods in above.items() if mods}
