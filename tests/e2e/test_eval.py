"""Recognition experiments end to end against a simulator that judges with a known accuracy."""

from __future__ import annotations

import json
import math
from pathlib import Path

import anyio
import pytest

from halugen.cli import main
from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.evaluate.config import EvalConfig
from halugen.evaluate.run import evaluate
from tests.e2e.test_generate import query


def write_qa(path: Path, n: int) -> tuple[Path, dict[str, bool]]:
    oracle: dict[str, bool] = {}
    with path.open("w") as f:
        for i in range(n):
            right, wrong = f"Serin{i}", f"Varnel river {i} near Ostra"
            f.write(
                json.dumps(
                    {
                        "knowledge": (
                            f"The {right} flows through Vallona{i}. Aldo Brun{i} was born there."
                        ),
                        "question": f"Which river flows through the birthplace of Aldo Brun{i}?",
                        "right_answer": right,
                        "hallucinated_answer": wrong,
                    }
                )
                + "\n"
            )
            oracle[right], oracle[wrong] = False, True
    return path, oracle


def run_eval(
    base_url: str,
    data: Path,
    db: Path,
    *,
    concurrency: int = 16,
    seed: int = 0,
    strategy: str = "plain",
    scoring: str = "parse",
    structured: str = "auto",
    read: str = "strict",
):
    cfg = RunConfig(
        tasks=("qa",),
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="k",
        db=db,
        rate=RateLimit(concurrency=concurrency),
        run_seed=seed,
        progress=False,
        retry=RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.02),
        timeouts=Timeouts(total=5, read=5),
    )
    ecfg = EvalConfig(
        run=cfg,
        task="qa",
        strategy=strategy,
        data=(str(data),),
        scoring=scoring,
        structured=structured,
        read=read,
    )
    return anyio.run(lambda: evaluate(ecfg))


def test_measured_accuracy_matches_the_simulated_judge(simulator, tmp_path, capsys):
    data, oracle = write_qa(tmp_path / "qa_data.json", 400)
    sim = simulator(oracle=oracle, judge_accuracy=0.7)
    db = tmp_path / "h.duckdb"
    outcome = run_eval(sim.base_url, data, db)
    assert outcome.exit_code == 0, outcome.message
    assert outcome.judged == 400
    correct, n = query(
        db, "SELECT count(*) FILTER (WHERE (verdict = 'yes') = truth), count(*) FROM judgements"
    )[0]
    p = correct / n
    half = 1.96 * math.sqrt(0.7 * 0.3 / n)
    assert abs(p - 0.7) <= half + 0.01, p
    shown = dict(query(db, "SELECT shown, count(*) FROM judgements GROUP BY 1"))
    assert 150 <= shown["hallucinated"] <= 250  # about half each way
    assert main(["report", "--db", str(db), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "ChatGPT (HaluEval Table 5)" in md and "62.59" in md


def test_the_shown_side_depends_on_seed_not_on_concurrency(simulator, tmp_path):
    data, oracle = write_qa(tmp_path / "qa_data.json", 60)
    sim = simulator(oracle=oracle, judge_accuracy=0.8, latency_ms=1, jitter_ms=5)
    sides = []
    for name, conc, seed in (("a", 1, 3), ("b", 32, 3), ("c", 8, 4)):
        run_eval(sim.base_url, data, tmp_path / f"{name}.duckdb", concurrency=conc, seed=seed)
        sides.append(
            query(
                tmp_path / f"{name}.duckdb",
                "SELECT item_id, shown FROM judgements ORDER BY item_id",
            )
        )
    assert sides[0] == sides[1]  # same seed, other concurrency: same choices
    assert sides[0] != sides[2]  # another seed: other choices


@pytest.mark.parametrize("strategy", ["knowledge", "cot", "contrast"])
def test_strategies_run_and_are_stored(strategy, simulator, tmp_path):
    data, oracle = write_qa(tmp_path / "qa_data.json", 40)
    sim = simulator(oracle=oracle, judge_accuracy=0.9)
    db = tmp_path / "h.duckdb"
    outcome = run_eval(sim.base_url, data, db, strategy=strategy)
    assert outcome.exit_code == 0, outcome.message
    rows = query(db, "SELECT strategy, shown, verdict FROM judgements")
    assert len(rows) == 40 and {r[0] for r in rows} == {strategy}
    valid = sum(r[2] != "invalid" for r in rows)
    assert valid >= 36
    if strategy == "contrast":
        assert {r[1] for r in rows} == {"both"}
        assert sum(r[2] == "yes" for r in rows) >= 30  # picked the hallucinated one mostly


def test_logprob_scoring_and_resume(simulator, tmp_path):
    data, oracle = write_qa(tmp_path / "qa_data.json", 30)
    sim = simulator(oracle=oracle, judge_accuracy=1.0)
    db = tmp_path / "h.duckdb"
    first = run_eval(sim.base_url, data, db, scoring="logprobs")
    assert first.exit_code == 0
    assert query(db, "SELECT count(*) FROM judgements WHERE p_yes IS NOT NULL")[0][0] == 30
    assert query(db, "SELECT count(*) FROM judgements WHERE (verdict = 'yes') = truth")[0][0] == 30
    before = sim.stats(keys=False)["requests"]
    again = run_eval(sim.base_url, data, db, scoring="logprobs")
    assert again.run_id == first.run_id and sim.stats(keys=False)["requests"] == before


def test_eval_on_generated_samples_under_a_budget(simulator, hotpot_file, tmp_path, capsys):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    assert (
        main(
            [
                "run",
                "--seeds",
                str(hotpot_file(30)),
                "--base-url",
                sim.base_url,
                "--api-key",
                "k",
                "--model",
                "gpt-4o-mini",
                "--db",
                str(db),
                "--no-progress",
            ]
        )
        == 0
    )
    code = main(
        [
            "eval",
            "--task",
            "qa",
            "--base-url",
            sim.base_url,
            "--api-key",
            "k",
            "--model",
            "gpt-4o-mini",
            "--db",
            str(db),
            "--no-progress",
            "--budget",
            "0.0005usd",
        ]
    )
    assert code == 3  # budget used up part way
    billed = sim.stats()["billed_usd"]
    code = main(
        [
            "eval",
            "--task",
            "qa",
            "--base-url",
            sim.base_url,
            "--api-key",
            "k",
            "--model",
            "gpt-4o-mini",
            "--db",
            str(db),
            "--no-progress",
            "--budget",
            "1usd",
        ]
    )
    assert code == 0
    assert query(db, "SELECT count(DISTINCT item_key) FROM judgements")[0][0] == 30
    spent = query(db, "SELECT sum(cost_usd) FROM calls WHERE stage = 'judge'")[0][0]
    assert spent <= 1.0 and sim.stats()["billed_usd"] > billed
