"""Batch mode's settings, prices, view and an endpoint without a Batch API."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from halugen.budget import Ledger
from halugen.cli import build_parser, main
from halugen.cli.common import run_config
from halugen.config import RateLimit
from halugen.cost.batch_prices import batch_cost
from halugen.cost.prices import ModelPrice
from halugen.engine import generate
from halugen.errors import UsageError
from halugen.llm.limiter import RateLimiter
from halugen.llm.transport import HandlerTransport
from halugen.progress import BatchRow, ProgressView
from halugen.simulate import SimConfig, Simulator
from halugen.stats import RunStats
from tests.batch.support import seeds_file
from tests.batch.test_batch_mode import config, query


def test_the_batch_price_is_the_cards_discount_rounded_up():
    price = ModelPrice.per_million("m", 0.15, 0.60, batch_discount=0.5)
    assert batch_cost(price, 1_000_001) == 500_001  # never short of the worst case
    assert batch_cost(price, 1_000_000) == 500_000
    no_discount = ModelPrice.per_million("m", 0.15, 0.60)
    assert batch_cost(no_discount, 12345) == 12345


def test_batch_flags_and_settings_make_batch_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    parser = build_parser()
    args = parser.parse_args(["run", "--batch", "--batch-poll", "5", "--batch-max-mb", "1"])
    opts = run_config(args).batch
    assert opts is not None and opts.poll_seconds == 5 and opts.max_bytes == 2**20
    assert opts.max_requests == 50_000
    assert run_config(parser.parse_args(["run"])).batch is None
    Path("halugen.toml").write_text("[run]\nbatch = true\nbatch_max_requests = 7\n")
    from_file = run_config(parser.parse_args(["run"])).batch
    assert from_file is not None and from_file.max_requests == 7
    with pytest.raises(UsageError):
        run_config(parser.parse_args(["run", "--batch", "--batch-max-requests", "0"]))
    for command in ("eval", "preselect"):
        assert "--batch" in parser._subparsers._group_actions[0].choices[command].format_help()


def test_batch_options_are_not_part_of_the_run_identity():
    from halugen.config import BatchOptions, RunConfig

    plain = RunConfig(seeds=("a",))
    batched = RunConfig(seeds=("a",), batch=BatchOptions(poll_seconds=1))
    assert plain.identity({}) == batched.identity({})


def test_an_endpoint_without_a_batch_api_stops_the_run_with_one_clear_message(tmp_path):
    sim = Simulator(SimConfig())
    transport = HandlerTransport(sim.handle)  # chat completions only
    db = tmp_path / "h.duckdb"
    out = anyio.run(lambda: generate(config(db, seeds_file(tmp_path, 3)), transport=transport))
    assert out.status == "failed" and out.exit_code == 1
    assert "does not offer the Batch API" in out.message and "batch export" in out.message
    assert query(db, "SELECT state FROM batches") == [("abandoned",)]
    assert query(db, "SELECT sum(pusd) FROM ledger WHERE event <> 'batch_reserve'") == [(0,)]
    # nothing is left at the provider, so an interactive session may start
    again = anyio.run(
        lambda: generate(config(db, seeds_file(tmp_path, 3), batch=None), transport=transport)
    )
    assert again.status == "done"


def test_the_view_lists_batches_in_both_modes():
    from io import StringIO

    from rich.console import Console

    rows = [BatchRow("batch_1", "in_progress", 17, 1, 40, 125.0)]
    stats = RunStats(run_id="r")
    stats.stage("qa", "sample").in_flight = 40
    buf = StringIO()
    view = ProgressView(
        stats=stats,
        ledger=Ledger(10**12),
        limiter_snapshot=RateLimiter(RateLimit()).snapshot,
        console=Console(file=buf, width=120, force_terminal=True),
        batches=lambda: rows,
    )
    assert "batches: batch_1 in_progress 17+1 failed/40 2m05s" in view.plain_line()
    view.console.print(view.render())
    text = buf.getvalue()
    assert "batch_1" in text and "in_progress" in text and "2m05s" in text
    rows.clear()
    assert "batches: none running" in view.plain_line()


def test_batch_status_lists_the_batches_of_the_store(tmp_path, capsys):
    from tests.batch.support import in_process
    from tests.batch.test_batch_mode import run

    db = tmp_path / "h.duckdb"
    env = in_process()
    assert run(config(db, seeds_file(tmp_path, 3)), env).status == "done"
    capsys.readouterr()
    assert main(["batch", "status", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert text.count("collected") == 2 and "batch_sim" in text
