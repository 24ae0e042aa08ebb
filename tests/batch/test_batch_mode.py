"""Batch mode end to end against the simulator's Batch API, the budget from its own bill."""

from __future__ import annotations

import signal
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

from halugen.batch import run as batch_run
from halugen.config import BatchOptions, RetryPolicy, RunConfig
from halugen.engine import generate
from halugen.errors import RetryableError, UsageError
from halugen.llm.transport import HttpResponse
from halugen.simulate import CacheConfig
from tests.batch.support import BatchClock, InProcess, in_process, seeds_file


def config(db: Path, seeds: Path | None, **kw: Any) -> RunConfig:
    defaults: dict[str, Any] = dict(
        seeds=(str(seeds),) if seeds else (),
        model="gpt-4o-mini",
        base_url="http://sim/v1",
        api_key="k",
        db=db,
        budget_usd=1.0,
        progress=False,
        retry=RetryPolicy(max_attempts=6, base_delay=0.001, max_delay=0.002),
        batch=BatchOptions(poll_seconds=0),
    )
    defaults.update(kw)
    return RunConfig(**defaults)


def run(cfg: RunConfig, env: InProcess, transport: Any = None):
    return anyio.run(lambda: generate(cfg, transport=transport or env.transport))


def query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def spent_usd(db: Path) -> float:
    value = query(db, "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')")
    return (value[0][0] or 0) / 1e12


def assert_books_agree(db: Path, env: InProcess) -> dict[str, Any]:
    """The store's spend is what the simulator billed, each request billed once."""
    stats = env.stats()
    assert stats["duplicate_bills"] == 0, "a request was billed twice"
    assert spent_usd(db) == pytest.approx(stats["billed_usd"], abs=1e-12)
    # the SQL surface adds up to the ledger
    (by_stage,) = query(db, "SELECT sum(cost_usd) FROM cost_by_stage")[0]
    (run_spend,) = query(db, "SELECT sum(spent_usd) FROM run_spend")[0]
    assert by_stage == pytest.approx(run_spend, abs=1e-12)
    assert run_spend == pytest.approx(spent_usd(db), abs=1e-12)
    assert query(db, "SELECT count(*) FROM calls WHERE status = 'unsettled'") == [(0,)]
    return stats


# call_log columns that say what was answered: the same whether the answer came back from a
# call or from a batch line (cost, latency, run_id and where the request body is kept differ;
# the answer's body differs only by the time the simulator wrote it)
ANSWER_COLUMNS = (
    "key, key_prefix, stage, task, model, seed_key, status, prompt_tokens, completion_tokens, "
    "cached_tokens, usage_estimated, est_prompt_tokens, attempts, http_status, error_class, "
    """error, finish_reason, json_merge_patch(response_json, '{"created": null}')"""
)


def assert_same_call_rows(interactive_db: Path, batch_db: Path) -> None:
    """Every call answered in both runs has the same call_log row, but for what a batch changes."""
    sql = f"SELECT {ANSWER_COLUMNS} FROM call_log ORDER BY key"
    rows_i, rows_b = query(interactive_db, sql), query(batch_db, sql)
    assert len(rows_i) == len(rows_b) > 30
    assert rows_b == rows_i
    # a batch line has no latency of its own and keeps its request beside its answer
    (line_latency,) = query(
        batch_db, "SELECT count(latency_ms) FROM call_log JOIN batch_lines ON key = custom_id"
    )[0]
    assert line_latency == 0
    sql = "SELECT key, request_json FROM calls ORDER BY key"
    assert query(batch_db, sql) == query(interactive_db, sql)
    assert query(batch_db, "SELECT count(*) FROM calls WHERE request_json IS NULL") == [(0,)]


@pytest.mark.parametrize("response_format", ["honour", "ignore"])
def test_batch_mode_makes_the_same_samples_at_half_the_price(tmp_path, response_format):
    """Also against a server that ignores response_format: the probe settles how the filter
    asks before anything is planned, so no filter request is planned twice."""
    seeds = seeds_file(tmp_path, 30)
    # no prompt cache, and prices without a cached rate: both ways send the same (short)
    # templates at the same rates (at the card's gpt-4o-mini prices an interactive run sends
    # the cache plan's longer openings, and the cache bills its hits cheaper)
    sim = {"response_format": response_format, "cache": CacheConfig(enabled=False)}
    interactive, batch = in_process(sim=sim), in_process(sim=sim)
    prices = {"price_in": 0.15, "price_out": 0.60}
    out_i = run(config(tmp_path / "i.duckdb", seeds, batch=None, **prices), interactive)
    out_b = run(config(tmp_path / "b.duckdb", seeds, **prices), batch)
    assert out_i.status == out_b.status == "done", out_b.message
    assert out_b.exit_code == 0
    sql = "SELECT seed_key, pattern, hallucinated_answer FROM samples ORDER BY seed_key"
    assert query(tmp_path / "b.duckdb", sql) == query(tmp_path / "i.duckdb", sql)
    assert len(query(tmp_path / "b.duckdb", sql)) == 30
    assert "30 sampled" in out_b.message
    # a pass's deferred calls left no trace: the outcomes and candidates of an interactive run
    for sql in (
        "SELECT outcome, count(*) FROM seed_outcomes GROUP BY ALL ORDER BY ALL",
        "SELECT status, count(*) FROM candidates GROUP BY ALL ORDER BY ALL",
    ):
        assert query(tmp_path / "b.duckdb", sql) == query(tmp_path / "i.duckdb", sql)

    si = assert_books_agree(tmp_path / "i.duckdb", interactive)
    sb = assert_books_agree(tmp_path / "b.duckdb", batch)
    assert_same_call_rows(tmp_path / "i.duckdb", tmp_path / "b.duckdb")
    # the one request to the chat endpoint is the structured-output probe, as interactive
    assert sb["requests"] == sb["billed_requests"] - sb["batch"]["billed_requests"] == 1
    probe_usd = sb["interactive_billed_usd"]
    assert 0 < probe_usd < si["billed_usd"] / 100
    # every other request exactly once, at exactly half the price
    assert sb["batch"]["billed_requests"] == si["billed_requests"] - 1
    assert sb["batch"]["prompt_tokens"] + sb["prompt_tokens"] == si["prompt_tokens"]
    assert sb["batch"]["completion_tokens"] + sb["completion_tokens"] == si["completion_tokens"]
    assert sb["batch"]["billed_usd"] == pytest.approx((si["billed_usd"] - probe_usd) / 2)
    # stage after stage: one batch of sampling requests, then one of filter requests
    stages = query(
        tmp_path / "b.duckdb",
        "SELECT b.batch_id, list(DISTINCT l.stage) FROM batches b JOIN batch_lines l "
        "USING (batch_id) GROUP BY b.batch_id, b.created_at ORDER BY b.created_at",
    )
    assert [s for _, s in stages] == [["sample"], ["filter"]]
    assert sb["batch"]["batches_created"] == 2
    # the answers are ordinary stored calls: an interactive rerun pays nothing
    again = run(config(tmp_path / "b.duckdb", seeds, batch=None, **prices), batch)
    assert again.status == "done" and batch.stats()["requests"] == 1


def test_a_run_keeps_the_templates_of_its_first_way_of_paying(tmp_path):
    # gpt-4o-mini at the card's prices: interactive calls would send the longer cached
    # openings, batch lines the short ones. A run begun in batches and finished interactively
    # goes on with the batch plan: what it paid for stays its answers
    seeds = seeds_file(tmp_path, 12)
    env = in_process()
    db = tmp_path / "b.duckdb"
    first = run(config(db, seeds, limit=6), env)
    assert first.status == "done", first.message
    sent = env.stats()["requests"]
    again = run(config(db, seeds, batch=None), env)
    assert again.status == "done", again.message
    assert query(db, "SELECT DISTINCT cache_plan FROM runs") == [("batch",)]
    short = {h for (h,) in query(db, "SELECT DISTINCT template_hash FROM samples")}
    assert len(query(db, "SELECT * FROM samples")) == 12
    # the interactive session sent only the 6 new seeds' calls, with the same templates
    assert env.stats()["requests"] > sent
    fresh = tmp_path / "i.duckdb"
    assert run(config(fresh, seeds, batch=None), in_process()).status == "done"
    longer = {h for (h,) in query(fresh, "SELECT DISTINCT template_hash FROM samples")}
    assert short.isdisjoint(longer)  # a fresh interactive run sends the other variants


def test_a_fresh_run_in_batch_mode_is_one_run_and_pays_nothing_twice(tmp_path):
    seeds = seeds_file(tmp_path, 8)
    env = in_process()
    db = tmp_path / "h.duckdb"
    assert run(config(db, seeds, limit=4), env).status == "done"
    again = run(config(db, seeds, fresh=True), env)  # 4 seeds answered, 4 to send: passes
    assert again.status == "done", again.message
    assert query(db, "SELECT count(*) FROM runs") == [(2,)]  # one new run, not one a pass
    assert query(db, f"SELECT count(*) FROM samples WHERE run_id = '{again.run_id}'") == [(8,)]
    # the answers it took from the first run are logged with their finish reason, as an
    # interactive run logs them
    reused = query(
        db,
        "SELECT finish_reason, count(*) FROM call_log WHERE status = 'cached' "
        f"AND run_id = '{again.run_id}' GROUP BY ALL",
    )
    assert reused and all(reason == "stop" for reason, _ in reused), reused
    assert_books_agree(db, env)


def test_the_provider_never_bills_more_than_the_budget_and_a_resume_finishes(tmp_path):
    seeds = seeds_file(tmp_path, 30)
    env = in_process()
    db = tmp_path / "h.duckdb"
    first = run(config(db, seeds, budget_usd=0.002), env)
    assert first.status == "budget_exhausted", first.message
    assert first.exit_code == 3
    stats = assert_books_agree(db, env)
    assert 0 < stats["billed_usd"] <= 0.002
    done = run(config(db, seeds, budget_usd=1.0), env)
    assert done.status == "done", done.message
    assert_books_agree(db, env)
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 30
    assert query(db, "SELECT count(*) FROM runs")[0][0] == 1


def test_batches_are_split_at_the_request_and_size_limits(tmp_path):
    seeds = seeds_file(tmp_path, 20)
    env = in_process(max_requests=7)  # the provider refuses bigger files
    db = tmp_path / "h.duckdb"
    out = run(config(db, seeds, batch=BatchOptions(poll_seconds=0, max_requests=7)), env)
    assert out.status == "done", out.message
    sizes = query(db, "SELECT requests, bytes FROM batches ORDER BY created_at")
    assert max(n for n, _ in sizes) == 7
    assert sum(n for n, _ in sizes if n) >= 40  # 40 sampling requests, then the filter ones
    assert env.stats()["batch"]["batches_by_status"] == {"completed": len(sizes)}

    db2 = tmp_path / "bytes.duckdb"
    line_bytes = max(b / n for n, b in sizes)
    limit = int(line_bytes * 3.5)
    env2 = in_process()
    out2 = run(config(db2, seeds, batch=BatchOptions(poll_seconds=0, max_bytes=limit)), env2)
    assert out2.status == "done", out2.message
    sizes2 = query(db2, "SELECT requests, bytes FROM batches")
    assert all(size <= limit for _, size in sizes2)
    assert len(sizes2) >= 52 * line_bytes / limit  # many small files, none over the limit
    assert_books_agree(db2, env2)


def test_a_batch_over_the_provider_limit_stops_the_run_with_the_reason(tmp_path):
    env = in_process(max_requests=7)
    out = run(config(tmp_path / "h.duckdb", seeds_file(tmp_path, 20)), env)
    assert out.status == "failed" and out.exit_code == 1
    assert "too_many_requests" in out.message
    assert env.stats()["billed_usd"] == 0
    assert spent_usd(tmp_path / "h.duckdb") == 0


def test_expired_batches_settle_what_finished_and_resend_the_rest(tmp_path):
    # a provider that does 8 lines per batch before the window closes
    env = in_process(BatchClock(step=1.0), line_s=0.5, expire_s=4.0)
    db = tmp_path / "h.duckdb"
    out = run(config(db, seeds_file(tmp_path, 12)), env)
    assert out.status == "done", out.message
    by_status = env.stats()["batch"]["batches_by_status"]
    assert by_status.get("expired", 0) >= 2
    assert_books_agree(db, env)
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 12
    # every line of an expired batch that did not run was released, none settled twice
    assert query(
        db,
        "SELECT count(*) FROM (SELECT call_id FROM ledger WHERE event NOT IN "
        "('batch_reserve', 'reserve') GROUP BY call_id HAVING count(*) > 1)",
    ) == [(0,)]


def test_failed_lines_are_released_and_sent_again(tmp_path):
    env = in_process(fail_rate=0.3)
    db = tmp_path / "h.duckdb"
    out = run(config(db, seeds_file(tmp_path, 20)), env)
    assert out.status == "done", out.message
    released = query(db, "SELECT count(*) FROM ledger WHERE event = 'release'")[0][0]
    assert released > 0
    assert_books_agree(db, env)
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 20


def test_a_line_the_provider_refuses_fails_its_seed_and_is_not_resent(tmp_path):
    # a context window so small that the long conversational prompts do not fit
    env = in_process(sim={"context_window": 900})
    db = tmp_path / "h.duckdb"
    out = run(config(db, seeds_file(tmp_path, 6)), env)
    refused = query(
        db, "SELECT count(*), count(DISTINCT key) FROM call_log WHERE status = 'failed'"
    )[0]
    assert refused[0] == refused[1] > 0  # logged once each
    assert out.status in ("done", "incomplete"), out.message
    lines = query(db, "SELECT custom_id FROM batch_lines")
    assert len(lines) == len(set(lines))  # nothing was sent twice in the session
    assert_books_agree(db, env)


class Interrupt:
    """A batch clock that presses Ctrl-C once the run has looked at a frozen batch a while."""

    def __init__(self, after: int) -> None:
        self.clock = BatchClock(frozen=True)
        self.after = after
        self.fired = False

    def __call__(self) -> float:
        t = self.clock()
        if not self.fired and self.clock.readings >= self.after:
            self.fired = True
            signal.raise_signal(signal.SIGINT)
        return t


@pytest.mark.parametrize("choice", ["leave", "cancel"])
def test_ctrl_c_leaves_the_batches_running_or_cancels_them(tmp_path, monkeypatch, choice):
    ctrl_c = Interrupt(after=6)
    env = in_process(ctrl_c, duration_s=2.0)  # type: ignore[arg-type]
    asked: list[int] = []
    monkeypatch.setattr(batch_run, "ask_on_interrupt", lambda n: asked.append(n) or choice)
    db = tmp_path / "h.duckdb"
    seeds = seeds_file(tmp_path, 10)
    out = run(config(db, seeds), env)
    assert out.status == "interrupted" and out.exit_code == 130, out.message
    assert asked == [1]
    assert query(db, "SELECT state FROM batches") == [("submitted",)]
    # the money views count the running batch's worst case as unsettled, like calls in flight
    (unsettled,) = query(db, "SELECT unsettled_usd FROM run_spend")[0]
    (reserved,) = query(db, "SELECT reserved_usd FROM batch_progress")[0]
    assert unsettled == pytest.approx(reserved) and reserved > 0
    stats = env.stats()
    assert stats["batch"]["cancel_requests"] == (1 if choice == "cancel" else 0)
    # an interactive session must not pay again for what the batch may still answer
    with pytest.raises(UsageError, match="--batch"):
        run(config(db, seeds, batch=None), env)
    # the same command again: polls the batch it left, never sends its requests again
    ctrl_c.clock.frozen = False
    done = run(config(db, seeds), env)
    assert done.status == "done", done.message
    stats = assert_books_agree(db, env)
    created = stats["batch"]["batches_created"]
    if choice == "leave":
        assert created == 2  # the sampling batch it left, then the filter batch
        assert env.stats()["batch"]["batches_by_status"] == {"completed": 2}
    else:
        assert "cancelled" in env.stats()["batch"]["batches_by_status"]
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 10


class DropsAfterCreate:
    """Forwards to the simulator, but loses the answer of the first 'create batch' call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dropped = 0

    async def post(self, url, headers, body, timeouts) -> HttpResponse:
        resp = await self.inner.post(url, headers, body, timeouts)
        if url.endswith("/batches") and not self.dropped:
            self.dropped += 1
            raise RetryableError("connection dropped", billed_maybe=True)
        return resp

    async def get(self, url, headers, timeouts) -> HttpResponse:
        return await self.inner.get(url, headers, timeouts)

    async def aclose(self) -> None:
        return None


def test_a_batch_whose_creation_answer_was_lost_is_found_not_created_twice(tmp_path):
    env = in_process()
    flaky = DropsAfterCreate(env.transport)
    db = tmp_path / "h.duckdb"
    out = run(config(db, seeds_file(tmp_path, 10)), env, transport=flaky)
    assert out.status == "done", out.message
    assert flaky.dropped == 1
    assert env.stats()["batch"]["batches_created"] == 2  # not 3
    assert_books_agree(db, env)


class Crash(BaseException):
    """Stands for a kill: nothing after it runs."""


class CrashesBeforeCreate(DropsAfterCreate):
    async def post(self, url, headers, body, timeouts) -> HttpResponse:
        if url.endswith("/batches") and not self.dropped:
            self.dropped += 1
            raise Crash
        return await self.inner.post(url, headers, body, timeouts)


def test_a_crash_between_upload_and_create_releases_the_batch_on_resume(tmp_path):
    env = in_process()
    db = tmp_path / "h.duckdb"
    seeds = seeds_file(tmp_path, 10)
    with pytest.raises(Crash):
        run(config(db, seeds), env, transport=CrashesBeforeCreate(env.transport))
    assert query(db, "SELECT state, input_file_id IS NOT NULL FROM batches") == [
        ("submitting", True)
    ]
    out = run(config(db, seeds), env)
    assert out.status == "done", out.message
    assert query(db, "SELECT state FROM batches ORDER BY created_at")[0] == ("abandoned",)
    assert env.stats()["batch"]["batches_created"] == 2
    assert_books_agree(db, env)


def test_the_live_view_shows_each_batch_beside_the_budget(tmp_path, monkeypatch):
    from io import StringIO

    from rich.console import Console

    env = in_process(duration_s=3.0)
    db = tmp_path / "h.duckdb"
    buf = StringIO()
    console = Console(file=buf, width=160, force_terminal=False)
    cfg = config(db, seeds_file(tmp_path, 4), progress=True)
    # plain lines every poll: a view without a terminal prints one every few seconds
    monkeypatch.setattr(
        "halugen.progress.ProgressView.tick", lambda self: self._print(self.plain_line())
    )
    out = anyio.run(lambda: generate(cfg, transport=env.transport, console=console))
    assert out.status == "done"
    text = buf.getvalue()
    assert "batches: batch_sim" in text and "in_progress" in text
    assert "spent" in text and "left" in text


def test_eval_in_batch_mode_gives_the_same_verdicts_at_half_the_price(tmp_path):
    import shutil

    from halugen.evaluate.config import EvalConfig
    from halugen.evaluate.run import evaluate

    gen = in_process()
    db = tmp_path / "h.duckdb"
    assert run(config(db, seeds_file(tmp_path, 16)), gen).status == "done"
    db2 = tmp_path / "copy.duckdb"
    shutil.copy(db, db2)
    outcomes = {}
    envs = {"batch": in_process(), "interactive": in_process()}
    for mode, path in (("batch", db), ("interactive", db2)):
        batch = BatchOptions(poll_seconds=0) if mode == "batch" else None
        ecfg = EvalConfig(run=config(path, None, batch=batch), task="qa")
        outcomes[mode] = anyio.run(partial(evaluate, ecfg, transport=envs[mode].transport))
    assert outcomes["batch"].status == outcomes["interactive"].status == "done"
    assert outcomes["batch"].judged == outcomes["interactive"].judged == 16
    sql = "SELECT item_key, shown, verdict FROM judgements ORDER BY item_key"
    assert query(db, sql) == query(db2, sql)
    sb, si = envs["batch"].stats(), envs["interactive"].stats()
    assert sb["requests"] == 0 and sb["batch"]["batches_created"] == 1
    assert sb["billed_usd"] == pytest.approx(si["billed_usd"] / 2)


def test_preselect_in_batch_mode_finds_out_first_that_n_is_ignored(tmp_path):
    from halugen.preselect.run import PreselectConfig, preselect
    from tests.e2e.test_general_track import scorer_or_skip, write_alpaca

    scorer = scorer_or_skip()
    env = in_process(sim={"honour_n": False})  # a server that answers n=3 with one choice
    db = tmp_path / "h.duckdb"
    queries = write_alpaca(tmp_path / "alpaca.json", 10)
    pcfg = PreselectConfig(
        run=config(db, None), queries=(str(queries),), scorer=scorer.spec, keep=4
    )
    out = anyio.run(lambda: preselect(pcfg, transport=env.transport, scorer=scorer))
    assert out.status == "done", out.message
    assert out.scored == 10 and len(out.kept) == 4
    stats = assert_books_agree(db, env)
    # the n probe (the one request to the chat endpoint) found n ignored, so no request
    # asks for n; the answers come one index a round (preselect asks for the next response
    # only once it has the one before)
    assert stats["requests"] == 1
    assert stats["batch"]["batches_created"] == 3
    assert stats["batch"]["billed_requests"] == 30
    assert query(db, "SELECT count(*) FROM preselect_responses") == [(30,)]


def test_a_run_begun_interactively_is_finished_in_batch_mode_paying_nothing_twice(tmp_path):
    seeds = seeds_file(tmp_path, 20)
    env = in_process()
    db = tmp_path / "h.duckdb"
    first = run(config(db, seeds, batch=None, budget_usd=0.003), env)
    assert first.status == "budget_exhausted", first.message
    assert env.stats()["requests"] > 0  # interactive calls were made and paid
    done = run(config(db, seeds), env)
    assert done.status == "done", done.message
    stats = assert_books_agree(db, env)  # no request billed in both modes
    assert stats["batch"]["billed_requests"] > 0
    assert query(db, "SELECT count(*) FROM samples") == [(20,)]
    assert query(db, "SELECT count(*) FROM runs") == [(1,)]
