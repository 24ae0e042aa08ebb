"""Records cut to fit a server's context window are counted and the window named: in the
live view, the run's closing line and the dataset card. llama.cpp's /props gives each
slot's context and the slots: the note says what the server was started with."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rich.console import Console

from halugen.cli import main
from halugen.stats import RunStats
from tests.e2e.test_local_server import _cfg, _run
from tests.e2e.test_tasks import ARTICLE
from tests.test_progress import FakeClock, busy_ledger, make_view

NOTE = "10 of 18 records cut to fit a 2,048-token window"
SLOTS = "the server's per-slot context: -c 4096 over 2 slots"


def _articles(path: Path, long: int, short: int) -> Path:
    """``long`` articles too long for a 2,048-token window, then ``short`` that fit."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["", "id", "article", "highlights"])
        for i in range(long + short):
            repeat = 20 if i < long else 1
            w.writerow(
                [
                    i,
                    f"art{i}",
                    (ARTICLE * repeat).replace("Brennick", f"Brennick{i}"),
                    f"Brennick{i} will rebuild its 1821 bridge.",
                ]
            )
    return path


def _live_view(stats: RunStats, width: int) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False)
    view = make_view(stats, busy_ledger(), FakeClock(), console=console)
    console.print(view.render())
    return buf.getvalue()


def test_the_closing_line_live_view_and_card_say_what_was_cut(simulator, tmp_path):
    sim = simulator(context_window=2048, announce_window="props", capacity=2, announce_slots=True)
    db = tmp_path / "h.duckdb"
    seeds = _articles(tmp_path / "a.csv", long=10, short=8)
    outcome = _run(_cfg(sim.base_url, seeds, db, model="halugen-sim"))
    assert outcome.status == "done", outcome.message
    assert sim.stats(keys=False)["by_status"].get(400, 0) == 0
    assert f"{NOTE} ({SLOTS})" in outcome.message

    for width in (80, 120):
        text = _live_view(outcome.stats, width)
        assert all(len(line) <= width for line in text.splitlines())
        flat = " ".join(" ".join(text.replace("│", " ").split()).split())
        assert "cut 10 of 18 records to fit a 2,048-token window" in flat, text
        assert any(f"({SLOTS})" in line for line in text.splitlines()), text

    out = tmp_path / "card"
    assert main(["export", "--format", "jsonl", "--db", str(db), "--out", f"{out}/"]) == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"long documents: {NOTE} ({SLOTS})" in card


def test_nothing_cut_says_nothing(simulator, tmp_path):
    sim = simulator(context_window=100_000, announce_window="models")
    db = tmp_path / "h.duckdb"
    outcome = _run(_cfg(sim.base_url, _articles(tmp_path / "a.csv", 0, 3), db,
                        model="halugen-sim"))  # fmt: skip
    assert outcome.status == "done", outcome.message
    assert "cut to fit" not in outcome.message
    assert "cut to fit" not in _live_view(outcome.stats, 80)
