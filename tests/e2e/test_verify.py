"""The verify stage end to end against the simulator: its money from the simulator's own
bill, resume, batch mode, exports without suspects, the card's wording, status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

from halugen.config import BatchOptions, RateLimit, RetryPolicy, RunConfig
from halugen.engine import generate
from halugen.export import ExportRequest, export
from halugen.simulate import CacheConfig
from halugen.store.db import open_store
from tests.batch.support import in_process, seeds_file


def _config(base_url: str, seeds: Path, db: Path, **kw: Any) -> RunConfig:
    values: dict[str, Any] = dict(
        tasks=("qa",),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="test-key",
        db=db,
        rate=RateLimit(concurrency=8),
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02),
        progress=False,
    )
    values.update(kw)
    return RunConfig(**values)


def _query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def _spent(db: Path) -> float:
    (value,) = _query(
        db, "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')"
    )[0]
    return (value or 0) / 1e12


def test_verify_checks_every_sample_and_its_money_is_the_simulators_bill(
    simulator, hotpot_file, tmp_path
):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    outcome = anyio.run(lambda: generate(_config(sim.base_url, hotpot_file(30), db, verify=True)))
    assert outcome.status == "done", outcome.message
    (samples,) = _query(db, "SELECT count(*) FROM samples")[0]
    assert samples > 0
    checks = _query(db, "SELECT outcome, reason, asked FROM label_checks")
    assert len(checks) == samples  # one check per sample
    outcomes = {o for o, _, _ in checks}
    assert outcomes == {"passed", "flagged"}  # the simulator's minority of flags, and passes
    # two questions a sample, a third or fourth call where a reply was asked again
    (verify_calls,) = _query(db, "SELECT count(*) FROM calls WHERE stage = 'verify'")[0]
    assert verify_calls == sum(a for _, _, a in checks) >= 2 * samples
    flagged = _query(db, "SELECT count(*) FROM samples WHERE label_check = 'flagged'")[0][0]
    assert flagged == sum(o == "flagged" for o, _, _ in checks)
    note = next(n for n in outcome.notes if n.startswith("verify: "))
    assert f"{samples} sample(s) checked" in note and f"{flagged} flagged" in note
    # the ledger is the provider's bill, verify calls included
    assert _spent(db) == pytest.approx(sim.stats(keys=False)["billed_usd"], abs=1e-12)


def test_verifying_later_resumes_the_run_and_pays_nothing_twice(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    seeds = hotpot_file(20)
    first = anyio.run(lambda: generate(_config(sim.base_url, seeds, db)))
    assert first.status == "done"
    assert _query(db, "SELECT count(*) FROM label_checks") == [(0,)]
    billed_before = sim.stats(keys=False)["billed_requests"]
    second = anyio.run(lambda: generate(_config(sim.base_url, seeds, db, verify=True)))
    assert second.run_id == first.run_id  # --verify is not part of the run's identity
    (samples,) = _query(db, "SELECT count(*) FROM samples")[0]
    assert _query(db, "SELECT count(*) FROM label_checks") == [(samples,)]
    stats = sim.stats(keys=False)
    (verify_calls,) = _query(db, "SELECT count(*) FROM calls WHERE stage = 'verify'")[0]
    assert stats["billed_requests"] - billed_before == verify_calls  # only the verify calls
    # a third session finds every sample checked: it pays for nothing
    third = anyio.run(lambda: generate(_config(sim.base_url, seeds, db, verify=True)))
    assert third.status == "done"
    assert sim.stats(keys=False)["billed_requests"] == stats["billed_requests"]
    assert _spent(db) == pytest.approx(sim.stats(keys=False)["billed_usd"], abs=1e-12)


def test_batch_mode_plans_the_verify_calls_and_checks_the_same_samples(tmp_path):
    seeds = seeds_file(tmp_path, 16)
    # no prompt cache: both ways of paying then send the same sampling templates
    sim = {"cache": CacheConfig(enabled=False)}
    interactive, batch = in_process(sim=sim), in_process(sim=sim)
    common: dict[str, Any] = dict(verify=True, budget_usd=1.0, price_in=0.15, price_out=0.60)
    out_i = anyio.run(
        lambda: generate(
            _config("http://sim/v1", seeds, tmp_path / "i.duckdb", **common),
            transport=interactive.transport,
        )
    )
    out_b = anyio.run(
        lambda: generate(
            _config(
                "http://sim/v1",
                seeds,
                tmp_path / "b.duckdb",
                batch=BatchOptions(poll_seconds=0),
                **common,
            ),
            transport=batch.transport,
        )
    )
    assert out_i.status == out_b.status == "done", out_b.message
    sql = (
        "SELECT seed_key, outcome, reason, hallucination_verdict, right_verdict "
        "FROM label_checks ORDER BY seed_key"
    )
    checked = _query(tmp_path / "b.duckdb", sql)
    assert checked and checked == _query(tmp_path / "i.duckdb", sql)
    stats = batch.stats()
    assert stats["duplicate_bills"] == 0
    assert stats["batch"]["billed_requests"] > 0
    (verify_lines,) = _query(
        tmp_path / "b.duckdb", "SELECT count(*) FROM calls WHERE stage = 'verify'"
    )[0]
    assert verify_lines >= 2 * len(checked)
    assert _spent(tmp_path / "b.duckdb") == pytest.approx(stats["billed_usd"], abs=1e-12)


def _export(db: Path, out: Path, **kw: Any) -> tuple[int, str, tuple[str, ...]]:
    with open_store(db, read_only=True) as store:
        result = export(store, ExportRequest(fmt="jsonl", out=f"{out}/", **kw))
    rows = sum(n for _, n in result.files)
    card = (out / "README.md").read_text(encoding="utf-8")
    return rows, card, result.notes


def test_exports_leave_flagged_samples_out_unless_asked_and_the_card_says_so(
    simulator, hotpot_file, tmp_path
):
    sim = simulator()
    seeds = hotpot_file(24)
    plain_db, checked_db = tmp_path / "plain.duckdb", tmp_path / "checked.duckdb"
    anyio.run(lambda: generate(_config(sim.base_url, seeds, plain_db)))
    anyio.run(lambda: generate(_config(sim.base_url, seeds, checked_db, verify=True)))

    rows, card, _ = _export(plain_db, tmp_path / "plain")
    (samples,) = _query(plain_db, "SELECT count(*) FROM samples")[0]
    assert rows == samples
    assert "**Labels not verified**" in card

    (flagged,) = _query(checked_db, "SELECT count(*) FROM samples WHERE label_check = 'flagged'")[0]
    assert 0 < flagged < samples
    rows, card, notes = _export(checked_db, tmp_path / "checked")
    assert rows == samples - flagged
    assert any(f"{flagged} sample(s) flagged" in n for n in notes)
    assert "labels not verified" not in card.lower()
    share = f"{100 * flagged / samples:.1f}%"
    assert f"| qa | all | {samples} | {flagged} | {share} (" in card
    exported = (tmp_path / "checked" / "qa.jsonl").read_text(encoding="utf-8")
    assert '"label_check":"flagged"' not in exported.replace(" ", "")

    rows, _, _ = _export(checked_db, tmp_path / "all", include_suspect=True)
    assert rows == samples


def test_status_states_the_flagged_share_or_that_labels_were_not_verified(
    simulator, hotpot_file, tmp_path
):
    from halugen.cli.data import status_tables

    sim = simulator()
    db = tmp_path / "h.duckdb"
    seeds = hotpot_file(12)
    anyio.run(lambda: generate(_config(sim.base_url, seeds, db)))
    with open_store(db, read_only=True) as store:
        table = next(t for t in status_tables(store) if t.name == "label_check")
    assert [row[5] for row in table.rows] == ["labels not verified"]
    anyio.run(lambda: generate(_config(sim.base_url, seeds, db, verify=True)))
    with open_store(db, read_only=True) as store:
        table = next(t for t in status_tables(store) if t.name == "label_check")
    whole = [row for row in table.rows if row[2] == "all"]
    assert len(whole) == 1 and "(" in whole[0][5] and "–" in whole[0][5]
    assert {row[2] for row in table.rows} > {"all"}  # per pattern too
