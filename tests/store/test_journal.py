"""The journal: durable appends, bulk feeding, replay after a crash, torn tails, idempotence."""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path

import pytest

from halugen.store.db import Store, open_store
from halugen.store.journal import Journal, journal_path, scan
from halugen.store.rows import CallLogRow, LedgerRow

RUN = "r-journal"
TABLES = ("ledger", "call_log")


def reserve(call_id: int) -> LedgerRow:
    return LedgerRow(call_id, 1, RUN, "reserve", 500, f"k{call_id}", "sample", "qa", "m", None)


def answer(call_id: int) -> list[LedgerRow | CallLogRow]:
    return [
        LedgerRow(call_id, 1, RUN, "settle", 120, f"k{call_id}", "sample", "qa", "m", None),
        CallLogRow(
            call_id,
            f"k{call_id}",
            call_id,
            RUN,
            "sample",
            "qa",
            "m",
            None,
            "ok",
            100,
            10,
            0,
            False,
            90,
            120,
            500,
            12.5,
            1,
            200,
            None,
            None,
            "stop",
            None,
            f'{{"a":{call_id}}}',
        ),
    ]


def groups(n: int) -> list[list[LedgerRow | CallLogRow]]:
    """A reservation then an answer for each of ``n`` calls, as the call runner writes them."""
    out: list[list[LedgerRow | CallLogRow]] = []
    for i in range(1, n + 1):
        out.append([reserve(i)])
        out.append(answer(i))
    return out


def contents(store: Store) -> dict[str, list[tuple[object, ...]]]:
    return {t: store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in TABLES}


def journal_left_by_a_crash(db: Path, n: int) -> tuple[bytes, dict[str, list[tuple[object, ...]]]]:
    """The journal bytes of ``n`` calls synced but not fed, and the store a clean close of
    the same session leaves (the same rows, fed)."""
    store = open_store(db, serve_reads=False)
    writer = store.writer
    writer._open_journal = lambda: Journal(db, store.conn.cursor(), feed_seconds=3600)

    async def write() -> None:
        for group in groups(n):
            await writer.put_journaled(group)

    asyncio.run(write())
    assert writer.journal is not None and writer.journal.rows_fed == 0  # nothing fed yet
    left = journal_path(db).read_bytes()
    store.close()  # a clean close feeds everything and removes the journal
    assert not journal_path(db).exists()
    with open_store(db, serve_reads=False) as clean:
        return left, contents(clean)


def crashed_store(tmp_path: Path, name: str, journal: bytes) -> Path:
    """A fresh store beside which a crash left ``journal`` (nothing of it fed)."""
    db = tmp_path / name
    open_store(db, serve_reads=False).close()
    journal_path(db).write_bytes(journal)
    return db


def test_replay_after_a_crash_gives_the_store_a_clean_session_gives(tmp_path):
    left, clean = journal_left_by_a_crash(tmp_path / "clean.duckdb", 20)
    assert len(clean["ledger"]) == 40 and len(clean["call_log"]) == 20
    db = crashed_store(tmp_path, "crashed.duckdb", left)
    with open_store(db, serve_reads=False) as store:
        assert contents(store) == clean  # created_at included: stamped when appended
    assert not journal_path(db).exists()  # fed, so gone


def test_a_read_only_open_replays_a_crashed_journal_first(tmp_path):
    left, clean = journal_left_by_a_crash(tmp_path / "clean.duckdb", 3)
    db = crashed_store(tmp_path, "crashed.duckdb", left)
    with open_store(db, read_only=True) as store:
        assert contents(store) == clean


@pytest.mark.parametrize("damage", ["cut", "crc"])
def test_a_torn_or_corrupt_tail_is_dropped_and_reported_once(tmp_path, caplog, damage):
    left, _ = journal_left_by_a_crash(tmp_path / "clean.duckdb", 5)
    last = scan_ends(left)[-2]  # the record before the last one ends here
    if damage == "cut":  # a crash in the middle of appending the last group
        torn = left[: len(left) - 7]
    else:  # its bytes damaged on disk
        torn = left[:-3] + bytes(b ^ 0xFF for b in left[-3:])
    db = crashed_store(tmp_path, "torn.duckdb", torn)
    with caplog.at_level(logging.WARNING, logger="halugen.store.journal"):
        store = open_store(db, serve_reads=False)
    with store:
        # the last group (call 5's answer) was never durable: nobody counted on it
        assert store.query("SELECT count(*) FROM call_log") == [(4,)]
        assert store.query("SELECT count(*) FROM ledger") == [(9,)]
    warnings = [r for r in caplog.records if "journal" in r.getMessage()]
    assert len(warnings) == 1 and f"{len(torn) - last} byte(s)" in warnings[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="halugen.store.journal"):
        open_store(db, serve_reads=False).close()
    assert not caplog.records  # reported once: the journal is gone


def scan_ends(data: bytes) -> list[int]:
    """Where each intact record of journal ``data`` ends (the header's first)."""
    import struct

    ends, offset = [], 0
    while offset + 8 <= len(data):
        length, _ = struct.unpack_from("<II", data, offset)
        offset += 8 + length
        ends.append(offset)
    return ends


def test_the_fed_position_makes_replay_idempotent(tmp_path):
    left, clean = journal_left_by_a_crash(tmp_path / "clean.duckdb", 6)
    db = crashed_store(tmp_path, "crashed.duckdb", left)
    saved = tmp_path / "saved.journal"
    shutil.copy(journal_path(db), saved)
    open_store(db, serve_reads=False).close()  # replays it all
    shutil.copy(saved, journal_path(db))  # the same journal again, as if its removal was lost
    with open_store(db, serve_reads=False) as store:
        assert contents(store) == clean  # nothing twice
        ((journal_id, position),) = store.query("SELECT journal_id, position FROM journal_fed")
    found = scan(saved)
    assert (journal_id, position) == (found.journal_id, found.end)


def test_a_feed_that_stopped_halfway_resumes_after_its_position(tmp_path):
    left, clean = journal_left_by_a_crash(tmp_path / "clean.duckdb", 6)
    db = crashed_store(tmp_path, "half.duckdb", left)
    found = scan(journal_path(db))
    half = found.groups[5][0]  # after the first 6 groups (3 calls) were fed
    with open_store(db, serve_reads=False) as store:  # replays everything; undo the second half
        store.conn.execute("DELETE FROM ledger WHERE call_id > 3")
        store.conn.execute("DELETE FROM call_log WHERE call_id > 3")
        store.conn.execute("UPDATE journal_fed SET position = ?", [half])
    journal_path(db).write_bytes(left)  # the journal as the crash left it
    with open_store(db, serve_reads=False) as store:
        assert contents(store) == clean


def test_reads_in_the_writing_process_see_what_the_journal_holds(tmp_path):
    db = tmp_path / "s.duckdb"
    store = open_store(db, serve_reads=False)
    store.writer._open_journal = lambda: Journal(db, store.conn.cursor(), feed_seconds=3600)

    async def main() -> None:
        await store.writer.put_journaled([reserve(1)])
        await store.writer.put_journaled(answer(1))

    asyncio.run(main())
    journal = store.writer.journal
    assert journal is not None and journal.behind == 2 and journal.rows_fed == 0
    # an answer a call may reuse is found before it is fed
    assert store.cached_response("k1") == ('{"a":1}', 100, 10, 0, False)
    assert journal.rows_fed == 0
    # the money reads catch up first
    assert store.spent(RUN) == 120
    assert journal.behind == 0 and journal.rows_fed == 3
    store.close()
    assert not journal_path(db).exists()


def test_durable_means_synced_many_appends_share_a_sync(tmp_path):
    db = tmp_path / "s.duckdb"
    store = open_store(db, serve_reads=False)

    async def main() -> None:
        await asyncio.gather(*(store.writer.put_journaled([reserve(i)]) for i in range(500)))

    asyncio.run(main())
    journal = store.writer.journal
    assert journal is not None
    assert 1 <= journal.syncs < 500  # appends waiting while a sync runs share the next
    found = scan(journal_path(db))
    assert len(found.groups) == 500 and found.end == found.size
    store.close()
    with open_store(db, read_only=True) as reader:
        assert reader.query("SELECT count(*) FROM ledger") == [(500,)]
