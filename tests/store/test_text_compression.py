"""The store writes its text columns with zstd: DuckDB's own pick for them (DICT_FSST)
costs a quarter of a run's CPU at checkpoints (bench/throughput.py --profile)."""

from __future__ import annotations

import re
from datetime import datetime

import duckdb
import pytest

from halugen.store.db import open_store
from halugen.store.inserting import insert_rows
from halugen.store.rows import CallRequestRow

pytestmark = pytest.mark.skipif(
    tuple(int(p) for p in re.findall(r"\d+", duckdb.__version__)[:2]) < (1, 2),
    reason="DuckDB has zstd for text from 1.2 on",
)


def _body(i: int) -> str:
    # request bodies as halugen sends them: a template's fixed text around a record
    return (
        '{"model":"gpt-4o-mini","messages":[{"role":"system","content":"'
        + "You are a careful assistant who writes one answer. " * 40
        + f'"}},{{"role":"user","content":"Question {i}: what is {i * 7919 % 1000}?"}}]}}'
    )


def test_request_bodies_are_checkpointed_with_zstd(tmp_path):
    with open_store(tmp_path / "s.duckdb", serve_reads=False) as store:
        rows = [CallRequestRow(i, _body(i)) for i in range(3000)]
        insert_rows(store.conn, "call_requests", rows, datetime(2026, 12, 4))
        store.conn.execute("CHECKPOINT")
        methods = {
            m
            for (m,) in store.query(
                "SELECT DISTINCT compression FROM pragma_storage_info('call_requests') "
                "WHERE column_name = 'request_json' AND segment_type = 'VARCHAR'"
            )
        }
        assert methods == {"ZSTD"}
        # what was written reads back as it was
        (n, same) = store.query(
            "SELECT count(*), count(*) FILTER (WHERE request_json = ?) "
            "FROM call_requests WHERE call_id = 1234",
            [_body(1234)],
        )[0]
        assert (n, same) == (1, 1)
