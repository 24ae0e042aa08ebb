"""Seed file stamps: size and sha256 recorded with a run, differences named on resume."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from halugen.errors import InputError
from halugen.seeds.stamps import check_stamps, record_stamps, stamp_files
from halugen.store.db import open_store


def test_stamp_is_size_and_sha256_and_follows_changes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    (first,) = stamp_files([str(path)])
    assert (first.size, first.sha256) == (4, hashlib.sha256(b"one\n").hexdigest())
    path.write_bytes(b"two\n")  # same size: the hash tells, the cache does not hide it
    (second,) = stamp_files([str(path)])
    assert second.sha256 == hashlib.sha256(b"two\n").hexdigest()


def test_check_names_a_changed_a_new_and_a_missing_file(tmp_path: Path) -> None:
    a, b, c = (tmp_path / n for n in ("a.csv", "b.csv", "c.csv"))
    for p in (a, b, c):
        p.write_text(f"x\n{p.name}\n")
    with open_store(tmp_path / "h.duckdb") as store:
        record_stamps(store, "r1", stamp_files([str(a), str(b)]))
        check_stamps(store, "r1", stamp_files([str(a), str(b)]))  # unchanged: fine
        a.write_text("x\nlonger now\n")
        with pytest.raises(InputError, match=rf"seed file {a} changed since run r1 read it \("):
            check_stamps(store, "r1", stamp_files([str(a), str(b)]))
        a.write_text("x\na.csv\n")
        with pytest.raises(InputError, match=rf"seed file {c} is not among the files run r1"):
            check_stamps(store, "r1", stamp_files([str(a), str(b), str(c)]))
        with pytest.raises(InputError, match=rf"seed file {b}, which run r1 read, is no longer"):
            check_stamps(store, "r1", stamp_files([str(a)]))
        # a run recorded before stamps existed: recorded now, not refused
        check_stamps(store, "old", stamp_files([str(c)]))
        assert store.query("SELECT path FROM seed_files WHERE run_id = 'old'") == [(str(c),)]
