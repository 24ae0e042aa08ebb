"""The view's reader keeps the store open while requests come and lets go of it after, so a
run can open it for writing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from halugen.store.db import open_store
from halugen.view.reader import StoreReader

from .simstore import SEEDS, SimStore


def count(store) -> int:  # type: ignore[no-untyped-def]
    return int(store.query("SELECT count(*) FROM seeds")[0][0])


def test_the_store_is_let_go_of_once_requests_stop(sim_store: SimStore, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    shutil.copy(sim_store.db, db)
    reader = StoreReader(db, keep_seconds=0.0)
    assert reader.read(count) == (SEEDS, False)
    assert reader.released.wait(30)
    with open_store(db) as store:  # a run could start now
        assert count(store) == SEEDS
    assert reader.read(count) == (SEEDS, False)  # and the page reads again after it
    reader.close()


def test_while_requests_come_the_store_stays_open_and_close_lets_go(
    sim_store: SimStore, tmp_path: Path
) -> None:
    db = tmp_path / "s.duckdb"
    shutil.copy(sim_store.db, db)
    reader = StoreReader(db, keep_seconds=600.0)
    for _ in range(3):
        assert reader.read(count) == (SEEDS, False)
    assert not reader.released.is_set()
    reader.close()
    assert reader.released.is_set()
    open_store(db).close()


def test_a_failed_read_lets_go(sim_store: SimStore) -> None:
    reader = StoreReader(sim_store.db, keep_seconds=600.0)

    def broken(store):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        reader.read(broken)
    assert reader.released.is_set()
