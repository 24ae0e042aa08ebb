"""``halugen compare``: systems ranked, every pair tested on the items both judged, the tables
and the forest plot; three simulated judges of known accuracy on the same items."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import pytest
from scipy.stats import binomtest

from halugen.cli import main
from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.evaluate.compare import compare_from_store, compare_tables
from halugen.evaluate.config import EvalConfig
from halugen.evaluate.paired import holm
from halugen.evaluate.run import evaluate
from halugen.store.db import open_store
from halugen.tables import render_tables
from tests.e2e.test_eval import write_qa

T0 = datetime(2024, 5, 1, 12, 0, 0)


def _insert(store, rows) -> None:
    store.conn.executemany(
        "INSERT INTO judgements (run_id, task, item_key, item_id, strategy, model, shown, "
        "truth, verdict, shown_length, created_at, reader) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'strict')",
        rows,
    )


def _judgement(run, model, key, right, *, strategy="plain", at=0, truth=True):
    verdict = ("yes" if truth else "no") if right else ("no" if truth else "yes")
    shown = "hallucinated" if truth else "right"
    return [run, "qa", key, key, strategy, model, shown, truth, verdict, 10, T0 + timedelta(at)]


def test_pairs_only_items_both_judged_and_count_discordant_ones(tmp_path: Path) -> None:
    with open_store(tmp_path / "h.duckdb") as store:
        rows = []
        # model-a: 30 items q00..q29, right on all but q00..q02
        rows += [_judgement("ra", "model-a", f"q{i:02d}", i >= 3) for i in range(30)]
        # model-b: q05..q34 (25 shared with a), right on the even ones
        rows += [_judgement("rb", "model-b", f"q{i:02d}", i % 2 == 0) for i in range(5, 35)]
        # model-b wrote q06 again later, now wrong: the latest counts
        rows.append(_judgement("rb", "model-b", "q06", False, at=1))
        _insert(store, rows)
        result = compare_from_store(store, seed=3)
    a, b = result.systems
    assert (a.label, b.label) == ("model-a · plain", "model-b · plain")
    assert (a.metrics.n, b.metrics.n) == (30, 30)
    (pair,) = result.pairs
    assert pair.paired == 25 and pair.clusters == 25  # q05..q29
    # shared items q05..q29: a right on all; b right on the even ones but q06
    b_right = [i for i in range(5, 30) if i % 2 == 0 and i != 6]
    assert pair.b_only == 0 and pair.a_only == 25 - len(b_right)
    assert pair.a_accuracy == 1.0 and pair.b_accuracy == pytest.approx(len(b_right) / 25)
    assert pair.difference == pytest.approx(pair.a_accuracy - pair.b_accuracy)
    assert pair.p_value == pytest.approx(binomtest(pair.a_only, pair.a_only, 0.5).pvalue)
    assert pair.p_holm == pair.p_value  # one pair: nothing to adjust
    assert pair.ci[0] <= pair.difference <= pair.ci[1]
    # the seed fixes the interval
    with open_store(tmp_path / "h.duckdb", read_only=True) as store:
        assert compare_from_store(store, seed=3).pairs[0].ci == pair.ci


def test_same_label_in_two_sources_is_told_apart(tmp_path: Path) -> None:
    with open_store(tmp_path / "h.duckdb") as store:
        _insert(store, [_judgement("r1", "m", "q1", True), _judgement("r2", "m", "q1", False)])
        result = compare_from_store(store)
    labels = sorted(s.label for s in result.systems)
    assert labels == ["m · plain [unknown: run r1]", "m · plain [unknown: run r2]"]


def _eval(base_url: str, data: Path, db: Path, model: str) -> None:
    cfg = RunConfig(
        tasks=("qa",),
        model=model,
        base_url=base_url,
        api_key="k",
        db=db,
        rate=RateLimit(concurrency=16),
        progress=False,
        retry=RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.02),
        timeouts=Timeouts(total=5, read=5),
    )
    ecfg = EvalConfig(run=cfg, task="qa", strategy="plain", data=(str(data),))
    outcome = anyio.run(lambda: evaluate(ecfg))
    assert outcome.exit_code == 0, outcome.message


JUDGES = {"judge-strong": 0.9, "judge-middle": 0.75, "judge-weak": 0.5}


@pytest.fixture
def three_judges(simulator, tmp_path):
    """Three simulated models of known accuracy, each judging the same 200 QA items."""
    data, oracle = write_qa(tmp_path / "qa_data.json", 200)
    db = tmp_path / "h.duckdb"
    for seed, (model, accuracy) in enumerate(JUDGES.items(), 1):
        sim = simulator(oracle=oracle, judge_accuracy=accuracy, seed=seed)
        _eval(sim.base_url, data, db, model)
    return db


def test_three_simulated_models_compared(three_judges, tmp_path, capsys) -> None:
    db = three_judges
    figure = tmp_path / "forest.png"
    assert main(["compare", "--db", str(db), "--format", "json", "--plot", str(figure)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert figure.stat().st_size > 0
    systems, pairs = data["systems"], data["pairs"]
    # ranked as the simulator plays them, every model on all 200 items
    assert [s["model"] for s in systems] == list(JUDGES)
    assert all(s["n"] == 200 for s in systems)
    for s in systems:
        assert abs(s["accuracy"] - JUDGES[s["model"]]) < 0.08
        assert s["ci_low"] < s["accuracy"] < s["ci_high"]
    # every pair, on all 200 items, checked against the store read directly and scipy
    with open_store(db, read_only=True) as store:
        right = {
            (model, key): bool(ok)
            for model, key, ok in store.conn.execute(
                "SELECT model, item_key, (verdict = 'yes') = truth AND verdict <> 'invalid' "
                "FROM judgements"
            ).fetchall()
        }
    names = list(JUDGES)
    expected_pairs = [(names[0], names[1]), (names[0], names[2]), (names[1], names[2])]
    assert [(p["a"], p["b"]) for p in pairs] == [
        (f"{a} · plain", f"{b} · plain") for a, b in expected_pairs
    ]
    p_values = []
    for p, (a, b) in zip(pairs, expected_pairs, strict=True):
        keys = {k for m, k in right if m == a}
        a_only = sum(right[(a, k)] and not right[(b, k)] for k in keys)
        b_only = sum(right[(b, k)] and not right[(a, k)] for k in keys)
        assert (p["paired"], p["a_only"], p["b_only"]) == (200, a_only, b_only)
        assert p["difference"] == pytest.approx((a_only - b_only) / 200)
        assert p["p_mcnemar"] == pytest.approx(binomtest(a_only, a_only + b_only).pvalue)
        assert p["ci_low"] <= p["difference"] <= p["ci_high"]
        p_values.append(p["p_mcnemar"])
    assert [p["p_holm"] for p in pairs] == pytest.approx(holm(p_values))
    # 0.9 against 0.5 on 200 items: no doubt left
    assert pairs[1]["p_holm"] < 1e-6 and pairs[1]["ci_low"] > 0.2

    # the same, ready for a paper
    assert main(["compare", "--db", str(three_judges), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "### Accuracy (%)" in md and "### Paired differences (percentage points)" in md
    assert "| QA | judge-strong · plain | judge-weak · plain | 200 |" in md
    assert "exact McNemar" in md and "Holm" in md
    assert main(["compare", "--db", str(three_judges), "--format", "latex"]) == 0
    latex = capsys.readouterr().out
    assert latex.count(r"\toprule") == 2 and r"\label{tab:pairs}" in latex
    with open_store(three_judges, read_only=True) as store:
        tables = compare_tables(compare_from_store(store))
    buf = io.StringIO()
    render_tables(tables, "csv", buf)
    assert buf.getvalue().count("judge-strong · plain") == 3  # its row, and two pairs


def test_compare_with_nothing_to_pair(tmp_path, capsys) -> None:
    with open_store(tmp_path / "h.duckdb") as store:
        _insert(store, [_judgement("r1", "m", "q1", True)])
    assert main(["compare", "--db", str(tmp_path / "h.duckdb")]) == 0
    captured = capsys.readouterr()
    assert "nothing to pair" in captured.err and "m · plain" in captured.out
    assert main(["compare", "--db", str(tmp_path / "h.duckdb"), "--plot", "x.gif"]) != 0
