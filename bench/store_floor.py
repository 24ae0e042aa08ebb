"""What the store's durability costs a call: the CPU of DuckDB statements on this machine.

Every call commits twice on the writer's durable lane before it counts as done: its
reservation before the request leaves, its answer (ledger settlement and ``call_log`` row)
before its seed goes on. The lane groups the writers that wait (store/writer.py), so a commit
is shared, but each costs a fixed part (statement setup, the WAL write) that no grouping
removes. This prints that floor on a fresh store opened as a run opens it (``open_store``:
one DuckDB thread, the writer's memory limit), through the writer's own insert path
(``insert_rows``), one thread, CPU from ``time.thread_time``:

* ``SELECT 1``: the cost of any statement at all;
* an answer group of ``g`` calls: ``BEGIN``, ``g`` ledger rows, ``g`` call_log rows (a
  response of ~260 bytes, as the minimal stub's), ``COMMIT``;
* a reservation group of ``g`` calls: ``BEGIN``, ``g`` ledger rows, ``COMMIT``;

and the durable lane's CPU per call at that group size (one of each group per call).

Then the same groups as the journal (store/journal.py) makes them durable now: each call's
reservation and answer encoded and framed (orjson, CRC32), a group's records written with one
``os.write`` and made durable with one ``os.fdatasync``; CPU of the appending thread (the
encoding runs on the event loop, the write and sync on the journal's thread: both counted).
Feeding DuckDB from the journal is the bulk commit of the last line above, off the send path.

    python bench/store_floor.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from halugen.store.db import open_store
from halugen.store.inserting import insert_rows
from halugen.store.journal import encode_group
from halugen.store.rows import CallLogRow, LedgerRow

_RESPONSE = '{"id":"x","choices":[{"message":{"content":"' + "a" * 180 + '"}}]}'


def ledger(call_id: int, event: str) -> LedgerRow:
    return LedgerRow(call_id, 1, "run", event, 140_000, "k" * 64, "sample", "qa", "m", "s" * 32)


def call_log(call_id: int) -> CallLogRow:
    return CallLogRow(
        call_id, "k" * 64, call_id, "run", "sample", "qa", "gpt-4o-mini", "s" * 32, "ok",
        900, 25, 0, False, 890, 150_000, 160_000, 12.5, 1, 200, None, None, "stop", None,
        _RESPONSE,
    )  # fmt: skip


def timed(repeat: int, body: object) -> float:
    """Median thread CPU of ``body()`` in milliseconds."""
    assert callable(body)
    samples = []
    for _ in range(repeat):
        t = time.thread_time()
        body()
        samples.append((time.thread_time() - t) * 1e3)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "floor.duckdb", serve_reads=False)
        conn = store.conn
        ids = iter(range(10**9))
        stamp = datetime.now()

        def group(g: int, answers: bool) -> None:
            calls = [next(ids) for _ in range(g)]
            conn.execute("BEGIN TRANSACTION")
            insert_rows(conn, "ledger", [ledger(c, "settle") for c in calls], stamp)
            if answers:
                insert_rows(conn, "call_log", [call_log(c) for c in calls], stamp)
            conn.execute("COMMIT")

        select = timed(args.repeat, lambda: conn.execute("SELECT 1").fetchall())
        print(f"SELECT 1: {select:.2f} ms of CPU", flush=True)
        print("calls per group | reservation commit | answer commit | durable CPU per call")
        for g in (1, 8, 32, 64, 256):
            n = max(10, args.repeat // max(1, g // 4))
            res = timed(n, lambda g=g: group(g, False))
            ans = timed(n, lambda g=g: group(g, True))
            print(
                f"{g:>15} | {res:>15.2f} ms | {ans:>10.2f} ms | {(res + ans) / g * 1e3:>11,.0f} us",
                flush=True,
            )
        store.close()

        fd = os.open(Path(tmp) / "floor.journal", os.O_WRONLY | os.O_CREAT | os.O_APPEND)

        def journal_group(g: int) -> None:
            records = []
            for _ in range(g):
                c = next(ids)
                records.append(encode_group([ledger(c, "reserve")], 0))
                records.append(encode_group([ledger(c, "settle"), call_log(c)], 0))
            os.write(fd, b"".join(records))
            os.fdatasync(fd)

        print("calls per group | journal CPU per call (encode, write, fdatasync)")
        for g in (1, 8, 32, 64, 256):
            n = max(10, args.repeat // max(1, g // 4))
            cpu = timed(n, lambda g=g: journal_group(g))
            print(f"{g:>15} | {cpu / g * 1e3:>11,.1f} us", flush=True)
        os.close(fd)


if __name__ == "__main__":
    main()
