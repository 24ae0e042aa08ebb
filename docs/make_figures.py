"""Make the README's figures from a simulated run: ``python docs/make_figures.py``.

Generates QA, dialogue and summarization samples from the real seed samples beside the
checkout (``/work/shared/data``; HotpotQA, OpenDialKG, CNN/DailyMail) against halugen's
simulator, then runs recognition experiments whose judge is the simulator with a set
accuracy per strategy (it knows which texts are hallucinated), and draws

- ``docs/report-accuracy.png`` with ``halugen report --plot``;
- ``docs/run-cost.png`` with ``halugen status --plot`` (the generation run).

The accuracies are the simulator's settings, not any model's: the figure shows what
``report --plot`` draws, not a result.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from halugen.cli import main  # noqa: E402
from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts  # noqa: E402
from halugen.engine import generate  # noqa: E402
from halugen.evaluate.config import EvalConfig  # noqa: E402
from halugen.evaluate.run import evaluate  # noqa: E402
from halugen.simulate import SimConfig, serve  # noqa: E402
from halugen.store.db import open_store  # noqa: E402

SHARED = ROOT.parents[1] / "shared" / "data"
if not SHARED.exists():
    SHARED = Path("/work/shared/data")
SEEDS = {
    "qa": SHARED / "hotpotqa" / "hotpot_dev_distractor_v1.head165.json",
    "dialogue": SHARED / "opendialkg" / "opendialkg_test_split.csv",
    "summarization": SHARED / "cnndm" / "cnn_dailymail_train_sample100.csv",
}
# the simulated judge's accuracy per strategy (set here, not measured)
ACCURACY = {"plain": 0.64, "knowledge": 0.78, "cot": 0.6}


def config(base_url: str, db: Path, **kw: object) -> RunConfig:
    values: dict[str, object] = dict(
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="sim",
        db=db,
        rate=RateLimit(concurrency=32),
        retry=RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05),
        timeouts=Timeouts(total=10, read=10),
        progress=False,
    )
    values.update(kw)
    return RunConfig(**values)  # type: ignore[arg-type]


async def make(db: Path) -> str:
    runner, port = await serve(SimConfig(latency_ms=40, jitter_ms=40), "127.0.0.1", 0)
    try:
        cfg = config(
            f"http://127.0.0.1:{port}/v1",
            db,
            tasks=("all",),
            seeds=tuple(str(p) for p in SEEDS.values()),
            limit=100,
            budget_usd=1.0,
            rate=RateLimit(concurrency=8),
        )
        outcome = await generate(cfg)
        print(outcome.message)
    finally:
        await runner.cleanup()
    with open_store(db, read_only=True) as store:
        oracle: dict[str, bool] = {}
        for right, hallucinated in store.query(
            "SELECT coalesce(right_answer, right_response, right_summary), "
            "coalesce(hallucinated_answer, hallucinated_response, hallucinated_summary) "
            "FROM samples"
        ):
            oracle[right] = False
            oracle[hallucinated] = True
    for strategy, accuracy in ACCURACY.items():
        runner, port = await serve(
            SimConfig(oracle=oracle, judge_accuracy=accuracy, seed=7), "127.0.0.1", 0
        )
        try:
            for task in SEEDS:
                if strategy == "knowledge" and task == "summarization":
                    continue  # the same prompt as plain
                ecfg = EvalConfig(
                    run=config(f"http://127.0.0.1:{port}/v1", db, tasks=(task,)),
                    task=task,
                    strategy=strategy,
                )
                result = await evaluate(ecfg)
                print(f"{task}/{strategy}: {result.message}")
        finally:
            await runner.cleanup()
    return outcome.run_id


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "figures.duckdb"
        gen_run = anyio.run(make, db)
        docs = ROOT / "docs"
        with contextlib.redirect_stdout(io.StringIO()):  # the tables: not needed here
            draw(db, docs, gen_run)
        print(f"wrote {docs / 'report-accuracy.png'} and {docs / 'run-cost.png'}")


def draw(db: Path, docs: Path, gen_run: str) -> None:
    accuracy = ["report", "--db", str(db), "--plot", str(docs / "report-accuracy.png")]
    cost = ["status", "--db", str(db), "--run", gen_run, "--plot", str(docs / "run-cost.png")]
    if main(accuracy) or main(cost):
        raise SystemExit("a figure could not be made (see above)")


if __name__ == "__main__":
    run()
