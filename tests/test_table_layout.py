"""At 80 and 120 columns every table a command prints, and the live view, shows every figure
whole: text wraps between words, a wide table splits or stacks, nothing is cut to ``20…``."""

from __future__ import annotations

import io
from datetime import datetime, timedelta

import pytest
from rich.console import Console

from halugen.cli import main
from halugen.cli.data import status_tables
from halugen.cut_note import window_origin
from halugen.evaluate.compare import compare_from_store, compare_tables
from halugen.evaluate.report import report_tables
from halugen.evaluate.results import results_from_store
from halugen.store.db import open_store
from halugen.tables import TableData, _right_aligned, _text, render_tables
from tests.test_progress import FakeClock, FakeStats, busy_ledger, busy_stats, make_view

WIDTHS = (80, 120)


def _lines(text: str, width: int) -> list[str]:
    lines = text.splitlines()
    too_long = [line for line in lines if len(line) > width]
    assert not too_long, too_long[:3]
    return lines


def _assert_whole(tables: list[TableData], width: int) -> str:
    """Render ``tables`` at ``width``: no line longer, every number cell on one line as a
    whole, every word of every text cell too."""
    buf = io.StringIO()
    render_tables(tables, "table", buf, width=width)
    out = buf.getvalue()
    lines = _lines(out, width)
    for table in tables:
        for row in table.rows:
            for value, right in zip(row, _right_aligned(table), strict=False):
                text = _text(value)
                pieces = [text] if right else text.split()
                for piece in pieces:
                    assert any(piece in line for line in lines), (piece, width, out)
    assert "…" not in out
    return out


@pytest.fixture
def generation_store(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    argv = ["run", "--seeds", str(hotpot_file(30)), "--base-url", sim.base_url]
    argv += ["--api-key", "k", "--model", "gpt-4o-mini", "--db", str(db), "--no-progress"]
    assert main([*argv, "--budget", "1usd"]) == 0
    return db


@pytest.mark.parametrize("width", WIDTHS)
def test_status_tables_keep_every_figure_whole(generation_store, width) -> None:
    with open_store(generation_store, read_only=True) as store:
        tables = status_tables(store)
    assert tables and any(len(t.columns) > 8 for t in tables)  # wider than 80 at full width
    out = _assert_whole(tables, width)
    run_id = tables[0].rows[0][0]
    assert run_id in out and "gpt-4o-mini" in out


T0 = datetime(2024, 5, 1, 12, 0, 0)


@pytest.fixture
def eval_store(tmp_path):
    db = tmp_path / "e.duckdb"
    with open_store(db) as store:
        rows = []
        for model, every in (("model-alpha-large", 5), ("model-beta", 3)):
            for i in range(40):
                truth = i % 2 == 0
                right = i % every != 0
                verdict = "yes" if truth == right else "no"
                shown = "hallucinated" if truth else "right"
                rows.append(
                    [
                        f"run-{model}",
                        "qa",
                        f"q{i}",
                        f"q{i}",
                        "plain",
                        model,
                        shown,
                        truth,
                        verdict,
                        10 + i,
                        T0 + timedelta(seconds=i),
                    ]
                )
        store.conn.executemany(
            "INSERT INTO judgements (run_id, task, item_key, item_id, strategy, model, shown, "
            "truth, verdict, shown_length, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return db


@pytest.mark.parametrize("width", WIDTHS)
def test_report_and_compare_tables_keep_every_figure_whole(eval_store, width) -> None:
    with open_store(eval_store, read_only=True) as store:
        report = report_tables(results_from_store(store))
        compared = compare_tables(compare_from_store(store))
    assert len(report[1].columns) == 20  # the details: far wider than 120 on one line
    _assert_whole(report, width)
    _assert_whole(compared, width)


def test_a_table_too_wide_splits_repeating_its_key_columns() -> None:
    columns = ["run_id", "task", *(f"figure {i}" for i in range(12))]
    row = ["20261204-142057-17aa87", "qa", *(123_456.789 + i for i in range(12))]
    table = TableData("Wide", columns, [row])
    out = _assert_whole([table], 80)
    assert out.count("20261204-142057-17aa87") >= 2  # the key column on every part
    assert "Wide (continued)" in out


def test_a_table_whose_keys_leave_no_room_is_stacked() -> None:
    table = TableData("Long keys", ["a " * 20, "b " * 20, "n"], [["x " * 30, "y " * 30, 12345]])
    out = _assert_whole([table], 40)
    assert "12345" in out


def _cut_stats() -> FakeStats:
    """busy_stats with records cut to fit a llama.cpp server's per-slot window."""
    stats = busy_stats()
    stats.admitted["qa"], stats.truncated["qa"], stats.window = 18, 10, 2048
    stats.window_origin = window_origin(source="the server (props)", window=2048, slots=2)
    return stats


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("cut", [False, True])
def test_the_live_view_keeps_every_figure_whole(width, cut) -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False)
    stats = _cut_stats() if cut else busy_stats()
    view = make_view(stats, busy_ledger(), FakeClock(), console=console)
    console.print(view.render())
    lines = _lines(buf.getvalue(), width)
    text = "\n".join(lines)
    assert "…" not in text
    for figure in (
        "123,456",
        "54,321",
        "163,456",
        "$0.008000",
        "$0.004600",
        "$0.000082",
        "$0.000122",
        "37.8%",
        "50.0%",
        # the header's pairs: a label is never parted from its value
        "in flight 10",
        "already done 120",
        "per accepted sample $0.000122",
        "of which in flight $0.004000",
        "310,000 tpm (no limit)",
    ):
        assert any(figure in line for line in lines), (figure, text)
    headers = ("in flight", "tokens in", "tokens out", "per sample")
    assert all(any(h in line for line in lines) for h in headers), text
    # what was cut and to what window: each part whole on its line
    parts = ("cut  10 of 18 records", "to fit a 2,048-token window", "-c 4096 over 2 slots")
    for part in parts:
        assert any(part in line for line in lines) is cut, (part, text)
