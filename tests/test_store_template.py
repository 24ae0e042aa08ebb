"""The tests' new stores start as a copy of one migrated store (tests/conftest.py): such a
store must be the same as one created from scratch, or the shortcut would hide a migration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from halugen.store import db

SCHEMA = {
    "migrations": "SELECT name FROM schema_migrations ORDER BY name",
    "tables": "SELECT table_name, column_name, data_type, is_nullable, column_default "
    "FROM information_schema.columns ORDER BY table_name, ordinal_position",
    "views": "SELECT view_name, comment, sql FROM duckdb_views() WHERE NOT internal "
    "ORDER BY view_name",
    "indexes": "SELECT table_name, index_name, sql FROM duckdb_indexes() ORDER BY index_name",
    "rows": "SELECT table_name, estimated_size FROM duckdb_tables() "
    "WHERE table_name <> 'schema_migrations' ORDER BY table_name",
}


def schema(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with duckdb.connect(str(path), read_only=True) as conn:
        return {name: conn.execute(sql).fetchall() for name, sql in SCHEMA.items()}


def test_a_store_from_the_template_is_one_created_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert db.duckdb is not duckdb, "this test expects the conftest's template to be in use"
    db.open_store(tmp_path / "copied.duckdb").close()
    monkeypatch.setattr(db, "duckdb", duckdb)  # the real module: migrations run one by one
    db.open_store(tmp_path / "scratch.duckdb").close()
    copied, scratch = schema(tmp_path / "copied.duckdb"), schema(tmp_path / "scratch.duckdb")
    assert copied["migrations"] and copied["views"]
    assert copied == scratch
