"""``--map FIELD=EXPR``: a seed field computed by a DuckDB SQL expression over the table's
columns (list functions and lambdas included), evaluated by DuckDB while it streams the file.

A mapped value that names a column of the table is that column (``question=query``,
``knowledge=context.sentences``); one that does not, and reads as an expression (it holds
a bracket, a quote or an operator), is SQL. HotpotQA's Hub layout, for example, maps to the
knowledge HaluEval's reader builds (the supporting sentences, each once, in order)::

    --map knowledge="list_transform(list_filter(list_zip(supporting_facts.title,
        supporting_facts.sent_id), lambda f, i: list_position(list_zip(
        supporting_facts.title, supporting_facts.sent_id), f) = i), lambda f:
        context.sentences[list_position(context.title, f[1])][f[2] + 1])"
    --map right_answer=answer

An expression's value is read as a column's is: a list is flattened, its texts trimmed and
joined with one space, a missing (NULL) item left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from .table_columns import path_problem

__all__ = ["EXPRESSION_KINDS", "expression_alias", "expressions_of", "looks_like_sql"]

EXPRESSION_KINDS = ("parquet", "json", "csv")
_SQL_MARKS = re.compile(r"[()\[\]'|+*/<>=,]")


def looks_like_sql(value: str) -> bool:
    """Whether a mapped value reads as an SQL expression rather than a column's name."""
    return bool(_SQL_MARKS.search(value))


def expression_alias(field: str) -> str:
    """The key an expression's value is kept under in a row (no column is named so)."""
    return f"\0{field}"


def expressions_of(
    path: str,
    kind: str,
    shape: dict[str, Any],
    columns: Mapping[str, str],
    mapping: Mapping[str, str],
) -> dict[str, str]:
    """``{field: expression}`` for the mapped values that are SQL, not columns of ``path``.

    ``UsageError`` naming the ``--map`` item when DuckDB cannot evaluate one, or the file is
    of a kind DuckDB does not stream here (Arrow).
    """
    from ..store.seed_table_sql import check_expression

    found: dict[str, str] = {}
    for field, value in columns.items():
        if field not in mapping or not looks_like_sql(value):
            continue
        parts = [value] if kind == "csv" else value.split(".")
        if path_problem(shape, parts) is None:  # a column that happens to look like SQL
            continue
        if kind not in EXPRESSION_KINDS:
            raise UsageError(
                f"--map {field}={value}: SQL expressions read Parquet, JSON or CSV files, "
                f"not {kind} ({path})"
            )
        problem = check_expression(path, kind, value)
        if problem is not None:
            raise UsageError(f"--map {field}={value}: DuckDB cannot evaluate it: {problem}")
        found[field] = value
    return found
