"""A local server works with --base-url alone: its model, its context window."""

from __future__ import annotations

from pathlib import Path

import anyio
import duckdb
import pytest

from halugen.cli import main
from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.engine import generate
from tests.e2e.test_tasks import write_articles


def _cfg(base_url: str, seeds: Path, db: Path, **kw: object) -> RunConfig:
    values: dict[str, object] = dict(
        tasks=("summarization",),
        seeds=(str(seeds),),
        base_url=base_url,
        api_key="k",
        db=db,
        price_card="local",
        rate=RateLimit(concurrency=4),
        retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02),
        timeouts=Timeouts(total=10.0, read=10.0),
        progress=False,
    )
    values.update(kw)
    return RunConfig(**values)  # type: ignore[arg-type]


def _run(cfg: RunConfig):
    return anyio.run(lambda: generate(cfg))


def _query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def test_without_model_the_one_model_the_server_serves_is_used(
    simulator, hotpot_file, tmp_path, capsys
):
    sim = simulator(served_models=("gemma-3-270m",))
    db = tmp_path / "h.duckdb"
    code = main(["run", "--seeds", str(hotpot_file(2)), "--base-url", sim.base_url,
                 "--api-key", "k", "--db", str(db), "--no-progress", "--price-card", "local",
                 "--budget", "1usd"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert "gemma-3-270m" in err and "the only one" in err
    assert _query(db, "SELECT DISTINCT model FROM runs") == [("gemma-3-270m",)]
    assert _query(db, "SELECT DISTINCT model FROM calls") == [("gemma-3-270m",)]


def test_estimate_asks_the_server_for_its_model_as_run_does(
    simulator, hotpot_file, tmp_path, capsys
):
    sim = simulator(served_models=("gemma-3-270m",))
    code = main(["estimate", "--seeds", str(hotpot_file(2)), "--base-url", sim.base_url,
                 "--price-card", "local"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "gemma-3-270m" in captured.out
    assert sim.stats(keys=False)["requests"] == 0  # GET /models only


def test_several_models_and_no_model_flag_is_a_usage_error(
    simulator, hotpot_file, tmp_path, capsys
):
    sim = simulator(served_models=("a-7b", "b-13b"))
    db = tmp_path / "h.duckdb"
    code = main(["run", "--seeds", str(hotpot_file(2)), "--base-url", sim.base_url,
                 "--api-key", "k", "--db", str(db), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "a-7b" in err and "b-13b" in err and "--model" in err
    assert sim.stats(keys=False)["requests"] == 0


@pytest.mark.parametrize("announce", ["models", "props"])
def test_the_window_the_server_announces_is_used(simulator, tmp_path, announce):
    # articles of ~2,400 prompt tokens against a 2,048-token server: cut to fit, none refused
    sim = simulator(context_window=2048, announce_window=announce)
    db = tmp_path / "h.duckdb"
    outcome = _run(_cfg(sim.base_url, write_articles(tmp_path / "a.csv", 4, repeat=20), db,
                        model="halugen-sim"))  # fmt: skip
    assert outcome.status == "done", outcome.message
    assert sim.stats(keys=False)["by_status"].get(400, 0) == 0
    truncated = _query(db, "SELECT count(*) FROM seeds WHERE truncated_tokens > 0")[0][0]
    assert truncated == 4
    assert _query(db, "SELECT context_window FROM runs") == [(2048,)]


def test_a_context_length_reply_teaches_the_window_and_the_next_run_retries(simulator, tmp_path):
    # the server says nothing about its window; the price card assumes a large one
    sim = simulator(context_window=2048, announce_window="none")
    db = tmp_path / "h.duckdb"
    seeds = write_articles(tmp_path / "a.csv", 40, repeat=20)
    first = _run(_cfg(sim.base_url, seeds, db, model="halugen-sim",
                      rate=RateLimit(concurrency=1)))  # fmt: skip
    rejected = _query(
        db, "SELECT detail FROM seed_progress WHERE outcome = 'rejected' AND reason = "
        "'context_length'",
    )  # fmt: skip
    assert rejected, first.message  # the first seed(s) met the server's limit
    facts = _query(db, "SELECT context_window, source FROM endpoint_facts")
    assert facts == [(2048, "error")]
    # the seeds sent after the error were cut to fit, so only those already on their way
    # (the streams' buffers) failed
    assert len(rejected) < 40
    second = _run(_cfg(sim.base_url, seeds, db, model="halugen-sim"))
    assert second.run_id == first.run_id
    assert any("tried again" in note for note in second.notes), second.notes
    assert _query(db, "SELECT count(*) FROM seed_progress WHERE outcome = 'sampled'") == [(40,)]


def test_the_context_window_flag_wins(simulator, tmp_path):
    sim = simulator(context_window=100_000, announce_window="models")
    db = tmp_path / "h.duckdb"
    outcome = _run(_cfg(sim.base_url, write_articles(tmp_path / "a.csv", 2, repeat=20), db,
                        model="halugen-sim", context_window=1500))  # fmt: skip
    assert outcome.status == "done", outcome.message
    assert _query(db, "SELECT context_window FROM runs") == [(1500,)]
    assert _query(db, "SELECT count(*) FROM seeds WHERE truncated_tokens > 0") == [(2,)]


def test_a_reply_the_server_cut_to_fit_its_context_is_reported_as_that(
    simulator, hotpot_file, tmp_path
):
    # llama.cpp's way: no 400, the reply stops where the context is full. A first run with
    # room to spare gives the sampling prompts' sizes; a window of the longest plus a few
    # tokens leaves it too little room to reply.
    seeds = hotpot_file(3)
    roomy = simulator()
    probe = _cfg(roomy.base_url, seeds, tmp_path / "probe.duckdb", tasks=("qa",),
                 model="halugen-sim", context_window=100_000)  # fmt: skip
    assert _run(probe).status == "done"
    sql = "SELECT max(prompt_tokens) FROM calls WHERE stage = 'sample'"
    longest = _query(tmp_path / "probe.duckdb", sql)[0][0]
    sim = simulator(context_window=longest + 5, shorten_to_fit=True)
    db = tmp_path / "h.duckdb"
    cfg = _cfg(sim.base_url, seeds, db, tasks=("qa",), model="halugen-sim",
               context_window=100_000)  # fmt: skip
    outcome = _run(cfg)
    assert outcome.status in ("done", "incomplete"), outcome.message
    details = [r[0] for r in _query(db, "SELECT detail FROM candidates WHERE status = 'truncated'")]
    assert details, "no reply was cut"
    assert all("the server cut the reply at" in d and "max_tokens was 256" in d for d in details)
