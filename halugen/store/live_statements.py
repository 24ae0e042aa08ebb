"""Which statements another process may run on a store a halugen process holds.

Only queries pass: statements DuckDB's own parser types as SELECT (which covers ``FROM``,
``WITH``, ``VALUES``, ``SHOW``, ``DESCRIBE``, ``SUMMARIZE``, ``PIVOT`` ... ), ``EXPLAIN`` of
one of those, and the PRAGMAs that only describe the store. Everything else is refused
before it reaches the store, with one line naming the statement: CHECKPOINT and VACUUM
write the held file even inside a read-only transaction, SET / RESET / ATTACH / PREPARE and
temporary objects would change the session the holder lends out, COPY / EXPORT / INSTALL /
LOAD reach beyond the store. A SELECT that calls a table function with an effect
(``checkpoint()``, ``force_checkpoint()``, ``query('...')``, whose text could be anything)
is refused too; DuckDB's own syntax tree (``json_serialize_sql``) says which functions a
query calls, wherever they are nested.

The holder's database keeps its own guards underneath (external access off, configuration
locked, each query in a read-only transaction): this is the first line, not the only one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import duckdb
import orjson

__all__ = ["ALLOWED", "refusal"]

ALLOWED = (
    "read-only queries only (SELECT, FROM, WITH, VALUES, SHOW, DESCRIBE, SUMMARIZE, EXPLAIN, "
    "PRAGMAs that describe the store)"
)

# PRAGMAs that only describe (each also exists as a table function, e.g. pragma_table_info)
_READING_PRAGMAS = frozenset(
    {
        "table_info",
        "show",
        "show_tables",
        "show_tables_expanded",
        "show_databases",
        "database_list",
        "database_size",
        "storage_info",
        "metadata_info",
        "version",
        "platform",
        "functions",
        "collations",
        "user_agent",
    }
)
# functions a SELECT may not call: they write the file, or run SQL text nobody has checked
_FUNCTIONS_WITH_EFFECTS = frozenset({"checkpoint", "force_checkpoint", "query"})

# an in-memory database of our own to read syntax trees with (no store, no files)
_parser_lock = threading.Lock()
_parser: duckdb.DuckDBPyConnection | None = None


def refusal(sql: str) -> str | None:
    """Why ``sql`` may not run on a held store (one line), or None when it may.

    Text DuckDB cannot parse is let through: running it gives DuckDB's own syntax error.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return None
    if len(statements) != 1:
        return "give one statement at a time while a halugen process holds the store"
    return _statement_refusal(statements[0])


def _statement_refusal(statement: Any) -> str | None:
    kind = statement.type
    text = statement.query
    words = _keywords(text)
    if kind == duckdb.StatementType.SELECT:
        called = sorted(_FUNCTIONS_WITH_EFFECTS & _functions_called(text))
        if called:
            return _refused(f"a query calling {called[0]}()")
        return None
    if kind == duckdb.StatementType.EXPLAIN:
        if len(words) > 1 and words[1][1] == "ANALYZE":
            # EXPLAIN ANALYZE runs its statement: that one must pass on its own
            inner = refusal(text[words[1][0] + len("ANALYZE") :])
            return inner
        return None  # a plain EXPLAIN only plans
    if kind == duckdb.StatementType.PRAGMA:
        name = words[1][1].lower() if len(words) > 1 else ""
        if name in _READING_PRAGMAS:
            return None
        return _refused(f"PRAGMA {name}".strip())
    return _refused(_statement_name(kind, words))


def _refused(what: str) -> str:
    return (
        f"{what} is refused: while a halugen process holds the store, others run {ALLOWED}; "
        f"wait for it to finish"
    )


def _keywords(text: str) -> list[tuple[int, str]]:
    """(position, upper-cased text) of the statement's leading words, comments skipped."""
    words: list[tuple[int, str]] = []
    tokens = duckdb.tokenize(text)
    for i, (start, token_type) in enumerate(tokens):
        if token_type == duckdb.token_type.comment:
            continue
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        if token_type not in (duckdb.token_type.keyword, duckdb.token_type.identifier):
            break
        words.append((start, text[start:end].strip().upper()))
        if len(words) == 3:
            break
    return words


def _statement_name(kind: Any, words: list[tuple[int, str]]) -> str:
    """How the user wrote the statement: ``FORCE CHECKPOINT``, ``SET VARIABLE``, ``VACUUM``."""
    first = [w for _, w in words]
    if first[:2] in (["FORCE", "CHECKPOINT"], ["SET", "VARIABLE"], ["CREATE", "TEMP"]):
        return " ".join(first[:2])
    if first[:2] == ["CREATE", "TEMPORARY"]:
        return "CREATE TEMPORARY"
    if first:
        return first[0]
    return str(kind).rsplit(".", 1)[-1]


def _functions_called(sql: str) -> set[str]:
    """Every function name in the query's syntax tree (lower case), table functions too."""
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = duckdb.connect(
                ":memory:",
                config={
                    "enable_external_access": False,
                    "autoinstall_known_extensions": False,
                },
            )
        try:
            (tree,) = _parser.execute("SELECT json_serialize_sql(?)", [sql]).fetchone() or ("",)
        except duckdb.Error:
            tree = ""
    try:
        parsed = orjson.loads(tree) if tree else None
    except orjson.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or parsed.get("error"):
        # DuckDB could not lay the tree out: judge by the words instead (may refuse a
        # column that happens to bear such a name, never lets such a call through)
        return {w.lower() for _, w in _all_words(sql)}
    return {name.lower() for name in _names(parsed)}


def _all_words(sql: str) -> list[tuple[int, str]]:
    tokens = duckdb.tokenize(sql)
    out = []
    for i, (start, token_type) in enumerate(tokens):
        if token_type in (duckdb.token_type.keyword, duckdb.token_type.identifier):
            end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
            out.append((start, sql[start:end].strip().strip('"').upper()))
    return out


def _names(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        name = node.get("function_name")
        if isinstance(name, str):
            yield name
        for value in node.values():
            yield from _names(value)
    elif isinstance(node, list):
        for value in node:
            yield from _names(value)
