"""The SQL that reads a seed table through DuckDB when ``--map`` gives SQL expressions
(seeds/table_sql.py): DuckDB evaluates the user's expressions while it streams the file."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["READERS", "check_expression", "mapped_rows"]

# the table function that streams each kind of file
READERS = {"parquet": "read_parquet", "json": "read_json_auto", "csv": "read_csv_auto"}
_BATCH_ROWS = 1000


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _select(kind: str, roots: Sequence[str] | None, expressions: Mapping[str, str]) -> str:
    """``roots`` None: every column."""
    items = ["*"] if roots is None else [_identifier(r) for r in roots]
    items += [f"({expr}) AS {_identifier(alias)}" for alias, expr in expressions.items()]
    return f"SELECT {', '.join(items) or '1'} FROM {READERS[kind]}(?)"


def _connect() -> Any:
    import duckdb

    conn = duckdb.connect()
    # rows come in the file's order: row numbers and ids match the other readers'
    conn.execute("SET preserve_insertion_order = true")
    return conn


def check_expression(path: str, kind: str, expression: str) -> str | None:
    """Why DuckDB cannot evaluate ``expression`` over the table ``path`` (its first line),
    or None when it can."""
    import duckdb

    conn = _connect()
    try:
        conn.execute(f"DESCRIBE {_select(kind, (), {'value': expression})}", [path])
    except duckdb.Error as err:
        return (str(err).strip().splitlines() or ["error"])[0]
    finally:
        conn.close()
    return None


def mapped_rows(
    path: str, kind: str, roots: Sequence[str] | None, expressions: Mapping[str, str]
) -> Iterator[dict[str, Any]]:
    """Rows of ``path`` as dicts: the ``roots`` columns (None: all) as the file has them,
    and each expression's value under its alias, a batch at a time."""
    conn = _connect()
    try:
        cur = conn.execute(_select(kind, roots, expressions), [path])
        names = [d[0] for d in cur.description]
        while batch := cur.fetchmany(_BATCH_ROWS):
            for row in batch:
                yield dict(zip(names, row, strict=True))
    finally:
        conn.close()
