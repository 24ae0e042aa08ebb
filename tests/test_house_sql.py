"""The store is a boundary: SQL text lives in ``halugen/store/`` (named queries and named
state changes), except the SQL a user types.

Two scans of every module under ``halugen/`` outside ``halugen/store/``:
- no string literal that looks like SQL (a statement, or the clauses of one);
- no call that runs SQL (``execute``, ``sql``, ``query``, ``iter_rows``, ``fetch*``): the
  named queries do that.
Docstrings are prose and are not scanned. ``ALLOWED`` lists the few literals that are SQL
a user types (examples in help and hints), each with why.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests.python_source import parse_file

PACKAGE = Path(__file__).resolve().parents[1] / "halugen"

# (module, a piece of the literal) -> why it may stay
ALLOWED = {
    ("cli/data.py", "the SQL query, e.g."): "help of `halugen sql`: an example a user types",
    ("cli/batch.py", 'halugen sql "SELECT * FROM batch_progress"'): (
        "help: a `halugen sql` line for the user to type"
    ),
    ("cli/generation.py", 'halugen sql "SELECT pattern, count(*)'): (
        "hint after a run: a `halugen sql` line for the user to type"
    ),
}

# a statement's first keyword(s), at the start of the text
_STATEMENT = re.compile(
    r"^[\s(]*(?:SELECT\s|WITH\s+(?:RECURSIVE\s+)?\w+\s+AS\b|INSERT\s+(?:OR\s+\w+\s+)?INTO\b"
    r"|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\w*\s+)?"
    r"(?:TABLE|VIEW|INDEX|SEQUENCE|MACRO|TYPE)\b|DROP\s+(?:TABLE|VIEW|INDEX)\b|ALTER\s+TABLE\b"
    r"|COPY\s*\(|PRAGMA\s|ATTACH\s|DETACH\s|CHECKPOINT\b|BEGIN(?:\s+TRANSACTION)?\s*$"
    r"|COMMIT\s*$|ROLLBACK\s*$)"
)
# the clauses of a statement anywhere in the text (a statement built from pieces)
_CLAUSE = re.compile(
    r"\b(?:SELECT\b[^;]*\bFROM\s+\w|FROM\s+\w+(?:\s+\w+)?\s+(?:WHERE|JOIN|GROUP|ORDER|QUALIFY)\b"
    r"|WHERE\s+\w+(?:\.\w+)?\s*(?:=|<>|IN\b|IS\b)|GROUP\s+BY\b|ORDER\s+BY\b|QUALIFY\s"
    r"|JOIN\s+\w+(?:\s+\w+)?\s+(?:USING|ON)\b|INSERT\s+INTO\b|DELETE\s+FROM\b)"
)
# calls that run SQL text
_RUNS_SQL = {"execute", "executemany", "sql", "query", "iter_rows", "fetchall", "fetchone"}


def looks_like_sql(text: str) -> bool:
    return bool(_STATEMENT.match(text) or _CLAUSE.search(text))


def _modules() -> list[tuple[str, list[ast.AST]]]:
    """(path under halugen/, its nodes) of every module outside halugen/store/."""
    return _parsed(PACKAGE)


@functools.cache
def _parsed(package: Path) -> list[tuple[str, list[ast.AST]]]:
    return [
        (p.relative_to(package).as_posix(), list(ast.walk(parse_file(p))))
        for p in sorted(package.rglob("*.py"))
        if p.relative_to(package).parts[0] != "store"
    ]


def _docstrings(nodes: list[ast.AST]) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions."""
    out = set()
    for node in nodes:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its fixed parts, {} for each value
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def sql_literals(nodes: list[ast.AST]) -> list[tuple[int, str]]:
    """(line, text) of the literals among a module's nodes that look like SQL, docstrings
    left out."""
    skip = _docstrings(nodes)
    inside_fstring = {id(v) for n in nodes if isinstance(n, ast.JoinedStr) for v in n.values}
    found = []
    for node in nodes:
        if id(node) in skip or id(node) in inside_fstring:
            continue
        text = _literal_text(node)
        if text is not None and looks_like_sql(text):
            found.append((getattr(node, "lineno", 0), text))
    return found


@functools.cache
def _literals(package: Path) -> list[tuple[str, int, str]]:
    """(module, line, text) of every SQL-like literal outside halugen/store/."""
    return [(m, line, text) for m, nodes in _parsed(package) for line, text in sql_literals(nodes)]


def _allowed(module: str, text: str) -> bool:
    return any(m == module and piece in text for m, piece in ALLOWED)


def test_no_sql_text_outside_the_store() -> None:
    found = []
    for module, line, text in _literals(PACKAGE):
        if not _allowed(module, text):
            found.append(f"halugen/{module}:{line}: {' '.join(text.split())[:80]}")
    assert not found, (
        "SQL text outside halugen/store/ (make it a named query there):\n" + "\n".join(found)
    )


def test_no_sql_run_outside_the_store() -> None:
    found = []
    for module, nodes in _modules():
        for node in nodes:
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _RUNS_SQL
            ):
                found.append(f"halugen/{module}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not found, "SQL run outside halugen/store/ (call a named query):\n" + "\n".join(found)


def test_every_allowed_literal_is_still_there() -> None:
    """An allow-list entry whose literal is gone is removed, not left to hide a new one."""
    seen = set()
    for module, _, text in _literals(PACKAGE):
        seen |= {(m, p) for m, p in ALLOWED if m == module and p in text}
    assert seen == set(ALLOWED), f"stale entries: {sorted(set(ALLOWED) - seen)}"


def test_the_scan_knows_sql_from_prose() -> None:
    assert looks_like_sql("SELECT count(*) FROM seeds WHERE run_id = ?")
    assert looks_like_sql("UPDATE batches SET {} WHERE batch_id = ?")
    assert looks_like_sql(" WHERE run_id IN ({})")
    assert looks_like_sql("BEGIN TRANSACTION")
    assert looks_like_sql("SELECT item_id, n, cap FROM ({}) WHERE NOT mine ORDER BY item_id")
    assert not looks_like_sql("select the runs to export, newest first")
    assert not looks_like_sql("no run {} in {} (see 'halugen status')")
    assert not looks_like_sql("Select from the list")
