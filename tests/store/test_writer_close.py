"""Closing the store: the bulk lane commits what is queued and ends, without sleeping out
its interval once more (every command closes a store: that sleep was half a second each)."""

from __future__ import annotations

import threading
from typing import ClassVar

from halugen.store import writer as writer_module
from halugen.store.db import open_store
from halugen.store.rows import LedgerRow


class RecordingEvent(threading.Event):
    """A lane's wake-up event, noting each timed wait and whether the store was closing."""

    waits: ClassVar[list[tuple[float | None, bool]]] = []
    closing: ClassVar[list[bool]] = [False]

    def wait(self, timeout: float | None = None) -> bool:
        RecordingEvent.waits.append((timeout, RecordingEvent.closing[0]))
        return super().wait(timeout)


def test_a_closing_lane_commits_and_ends_without_waiting_its_interval(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module.threading, "Event", RecordingEvent)
    monkeypatch.setattr(RecordingEvent, "waits", [])
    monkeypatch.setattr(RecordingEvent, "closing", [False])
    store = open_store(tmp_path / "s.duckdb", serve_reads=False)
    writer = store.writer
    writer.put([LedgerRow(1, 1, "r", "reserve", 5, "k", "sample", "qa", "m", None)])
    real_close = writer.close

    def close() -> None:
        RecordingEvent.closing[0] = True
        real_close()

    monkeypatch.setattr(writer, "close", close)
    store.close()
    with open_store(tmp_path / "s.duckdb", serve_reads=False) as again:
        assert again.query("SELECT count(*) FROM ledger") == [(1,)]  # committed before the end
    timed_while_closing = [t for t, closing in RecordingEvent.waits if closing and t]
    assert timed_while_closing == [], "a lane slept out its interval while the store closed"
