"""Generation end to end against the simulator over loopback HTTP."""

from __future__ import annotations

from pathlib import Path

import anyio
import duckdb
import pytest

from halugen.cli import main
from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.cost.prices import PUSD_PER_USD
from halugen.engine import generate


def config(base_url: str, seed_file: Path, db: Path, **kw: object) -> RunConfig:
    defaults: dict[str, object] = dict(
        tasks=("qa",),
        seeds=(str(seed_file),),
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="test-key",
        db=db,
        rate=RateLimit(concurrency=16),
        retry=RetryPolicy(max_attempts=6, base_delay=0.01, max_delay=0.05),
        timeouts=Timeouts(total=5.0, read=5.0),
        progress=False,
    )
    defaults.update(kw)
    return RunConfig(**defaults)  # type: ignore[arg-type]


def run(cfg: RunConfig):
    return anyio.run(lambda: generate(cfg))


def query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def test_run_produces_one_sample_per_seed_and_logs_every_call(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(20), db))
    assert outcome.status == "done", outcome.message
    assert outcome.exit_code == 0
    rows = query(
        db,
        "SELECT seed_id, pattern, template_hash, knowledge, question, right_answer,"
        " hallucinated_answer FROM samples",
    )
    assert len(rows) == 20
    assert len({r[0] for r in rows}) == 20
    for _, pattern, template_hash, knowledge, question, right, hallucinated in rows:
        assert pattern in ("comprehension", "factualness", "specificity", "inference")
        assert len(template_hash) == 12
        assert knowledge and question and right and hallucinated
        assert hallucinated.strip() == hallucinated and right.strip() == right
        assert hallucinated.lower() != right.lower()
    # every billed call is in the ledger, and the store's spend is the simulator's bill
    stats = sim.stats()
    (spent,) = query(db, "SELECT sum(cost_usd) FROM calls")[0]
    assert spent == pytest.approx(stats["billed_usd"], rel=1e-9)
    statuses = dict(query(db, "SELECT status, count(*) FROM calls GROUP BY 1"))
    assert statuses["ok"] == stats["ok"]
    stages = {r[0] for r in query(db, "SELECT stage FROM cost_by_stage")}
    # "probe": the one small request that found out the endpoint takes a JSON schema
    assert stages <= {"sample", "filter", "probe"} and "sample" in stages


def test_same_command_resumes_without_paying_twice(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    seeds = hotpot_file(10)
    first = run(config(sim.base_url, seeds, db, limit=5))
    assert first.status == "done"
    billed_after_first = sim.stats()["requests"]
    second = run(config(sim.base_url, seeds, db, limit=10))
    assert second.run_id == first.run_id  # same settings -> same run
    assert second.stats.already_done.get("qa") == 5
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 10
    # the first five seeds cost nothing the second time
    assert sim.stats()["requests"] - billed_after_first <= 5 * 3
    third = run(config(sim.base_url, seeds, db, limit=10))
    assert third.stats.already_done.get("qa") == 10
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 10
    fresh = run(config(sim.base_url, seeds, db, limit=3, fresh=True))
    assert fresh.run_id != first.run_id
    # a fresh run with the same settings reuses stored answers by request key: no new bill
    assert sim.stats()["requests"] - billed_after_first <= 5 * 3
    assert (
        query(
            db,
            "SELECT count(*) FROM calls WHERE run_id = ? AND status = 'cached'".replace(
                "?", f"'{fresh.run_id}'"
            ),
        )[0][0]
        > 0
    )


def test_results_do_not_depend_on_concurrency(simulator, hotpot_file, tmp_path):
    sim = simulator(latency_ms=2, jitter_ms=5)
    seeds = hotpot_file(16)
    out = []
    for conc, name in ((1, "a.duckdb"), (32, "b.duckdb")):
        db = tmp_path / name
        run(config(sim.base_url, seeds, db, rate=RateLimit(concurrency=conc), run_seed=7))
        out.append(
            query(db, "SELECT seed_id, hallucinated_answer, pattern FROM samples ORDER BY seed_id")
        )
    assert out[0] == out[1]
    orders = query(
        tmp_path / "a.duckdb", "SELECT shown_order FROM filter_decisions WHERE method = 'judge'"
    )
    assert {o[0] for o in orders} == {"[0,1]", "[1,0]"} or len(orders) < 4


def test_budget_is_never_exceeded_under_faults_and_concurrency(simulator, hotpot_file, tmp_path):
    # faults whose billing is unambiguous: 5xx are not billed, content_filter is
    sim = simulator(fail_rate=0.2, faults=("500", "503", "content_filter"), latency_ms=1)
    db = tmp_path / "h.duckdb"
    budget = 0.004
    outcome = run(
        config(
            sim.base_url, hotpot_file(200), db, budget_usd=budget, rate=RateLimit(concurrency=64)
        )
    )
    assert outcome.status == "budget_exhausted"
    assert outcome.exit_code == 3
    billed = sim.stats()["billed_usd"]
    assert 0 < billed <= budget
    (spent,) = query(db, "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')")[
        0
    ]
    assert spent / PUSD_PER_USD == pytest.approx(billed, rel=1e-9)
    assert spent <= budget * PUSD_PER_USD
    # the budget was used, not left mostly idle: within one worst-case call of the cap
    worst = query(db, "SELECT max(pusd) FROM ledger WHERE event = 'reserve'")[0][0]
    assert spent >= budget * PUSD_PER_USD - 64 * worst
    pending = query(db, "SELECT count(*) FROM seed_progress WHERE outcome = 'pending'")[0][0]
    assert pending > 0


def test_budget_holds_with_ambiguous_faults(simulator, hotpot_file, tmp_path):
    # timeouts, malformed bodies and dropped connections may be billed: counted as spent
    sim = simulator(fail_rate=0.25, faults=("hang", "malformed", "drop", "500"), hang_s=3.0)
    db = tmp_path / "h.duckdb"
    budget = 0.003
    outcome = run(
        config(
            sim.base_url,
            hotpot_file(150),
            db,
            budget_usd=budget,
            timeouts=Timeouts(total=0.5, read=0.5),
            rate=RateLimit(concurrency=64),
        )
    )
    assert outcome.exit_code == 3
    billed = sim.stats()["billed_usd"]
    (spent,) = query(db, "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')")[
        0
    ]
    assert billed <= budget
    assert spent / PUSD_PER_USD >= billed - 1e-12  # we never count less than the bill
    assert spent <= budget * PUSD_PER_USD


def test_continue_after_budget_with_a_larger_budget(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    seeds = hotpot_file(30)
    first = run(config(sim.base_url, seeds, db, budget_usd=0.002))
    assert first.exit_code == 3
    second = run(config(sim.base_url, seeds, db, budget_usd=1.0))
    assert second.run_id == first.run_id
    assert second.exit_code == 0, second.message
    assert query(db, "SELECT count(DISTINCT seed_key), count(*) FROM sample_rows")[0] == (30, 30)
    assert sim.stats()["billed_usd"] <= 1.0


def test_rate_limit_storm_completes(simulator, hotpot_file, tmp_path):
    # half of all requests answered 429 with retry-after-ms: the run still completes
    sim = simulator(fail_rate=0.5, faults=("429",))
    db = tmp_path / "h.duckdb"
    outcome = run(
        config(
            sim.base_url,
            hotpot_file(30),
            db,
            rate=RateLimit(concurrency=64),
            retry=RetryPolicy(max_attempts=12, base_delay=0.01, max_delay=0.05),
        )
    )
    assert outcome.status == "done", outcome.message
    stats = sim.stats()
    assert stats["by_status"][429] >= 20  # it was a storm
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 30
    retried = query(db, "SELECT count(*) FROM calls WHERE attempts > 1")[0][0]
    assert retried > 0
    # nothing a 429 refused was billed or counted as spent
    (spent,) = query(db, "SELECT sum(cost_usd) FROM calls")[0]
    assert spent == pytest.approx(stats["billed_usd"], rel=1e-9)


def test_401_stops_the_run_with_a_clear_message(simulator, hotpot_file, tmp_path, capsys):
    sim = simulator(api_key="right-key")
    db = tmp_path / "h.duckdb"
    code = main(
        [
            "run",
            "--seeds",
            str(hotpot_file(50)),
            "--base-url",
            sim.base_url,
            "--api-key",
            "wrong-key",
            "--db",
            str(db),
            "--no-progress",
            "--model",
            "gpt-4o-mini",
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "401" in err and "API key" in err
    assert "wrong-key" not in err
    assert sim.stats()["requests"] <= 64  # stopped at once, not after every seed was tried
    assert query(db, "SELECT status FROM runs")[0][0] == "failed"


def test_malformed_seed_lines_are_skipped_and_recorded(simulator, tmp_path):
    sim = simulator()
    lines = [
        # each knowledge holds a distractor of the right answer's form (guard knowledge_span)
        '{"knowledge": "The Tamsa river runs past Ovel; the Lenno river does not.", "question": '
        '"Which river runs past Ovel?", "right_answer": "Tamsa"}',
        '{"knowledge": "broken json',
        '{"knowledge": "K", "question": "", "right_answer": "x"}',
        '{"knowledge": "Mount Ferro is 2,100 m high, Mount Arle 1,800 m.", "question": '
        '"How high is Mount Ferro?", "right_answer": "2,100 m"}',
    ]
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text("\n".join(lines) + "\n")
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, seeds, db))
    assert outcome.exit_code == 0, outcome.message
    bad = query(db, "SELECT source_file, source_line, reason FROM bad_records ORDER BY 2")
    assert [b[1] for b in bad] == [2, 3]
    assert all(b[0] == str(seeds) and b[2] for b in bad)
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 2


def test_unknown_model_with_budget_is_a_usage_error(hotpot_file, tmp_path, capsys):
    code = main(
        [
            "run",
            "--seeds",
            str(hotpot_file(2)),
            "--model",
            "my-local-llama",
            "--budget",
            "5usd",
            "--api-key",
            "k",
            "--db",
            str(tmp_path / "h.duckdb"),
            "--no-progress",
        ]
    )
    assert code == 2
    assert "--price-in" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["50", "fifty", "-3usd", "50eur", "$"])
def test_bad_budget_is_a_usage_error(bad, hotpot_file, tmp_path, capsys):
    code = main(
        [
            "run",
            "--seeds",
            str(hotpot_file(2)),
            f"--budget={bad}",
            "--db",
            str(tmp_path / "h.duckdb"),
            "--no-progress",
        ]
    )
    assert code == 2
    assert "50usd" in capsys.readouterr().err


def test_unreachable_endpoint_stops_the_run_with_a_clear_message(hotpot_file, tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = tmp_path / "h.duckdb"
    code = main(
        [
            "run",
            "--seeds",
            str(hotpot_file(20)),
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--api-key",
            "k",
            "--db",
            str(db),
            "--no-progress",
            "--max-attempts",
            "2",
            "--concurrency",
            "2",
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "cannot reach" in err and "--base-url" in err
    # nothing was sent, so nothing counts as spent (the probe may stop it before any store)
    assert (
        not db.exists()
        or query(db, "SELECT coalesce(sum(pusd), 0) FROM ledger WHERE event <> 'reserve'")[0][0]
        == 0
    )


def test_content_filter_and_unparseable_judges_are_recorded_never_data(
    simulator, hotpot_file, tmp_path
):
    # without structured outputs, so that judges may answer off the format
    sim = simulator(
        fail_rate=0.3, faults=("content_filter",), garbage_rate=0.3, response_format="400"
    )
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(150), db))
    assert outcome.exit_code == 0, outcome.message
    reasons = dict(
        query(
            db, "SELECT reason, count(*) FROM seed_progress WHERE outcome = 'rejected' GROUP BY 1"
        )
    )
    assert reasons.get("judge_unparseable", 0) + reasons.get("judge_content_filter", 0) > 0
    statuses = {r[0] for r in query(db, "SELECT DISTINCT status FROM candidates")}
    assert {"content_filter", "unparseable"} <= statuses
    # what was rejected never became a sample, and every sample has a real hallucination
    rejected = {
        r[0] for r in query(db, "SELECT seed_key FROM seed_progress WHERE outcome = 'rejected'")
    }
    sampled = {r[0] for r in query(db, "SELECT seed_key FROM samples")}
    assert not rejected & sampled
    assert (
        query(
            db,
            "SELECT count(*) FROM samples WHERE hallucinated_answer = '' "
            "OR hallucinated_answer IS NULL",
        )[0][0]
        == 0
    )
