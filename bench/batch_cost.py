"""What a run costs interactively and in batch mode, from the simulator's own bill.

The same seeds (the real HotpotQA and CNN/DailyMail samples when they are beside the
checkout) go through ``halugen run`` twice against the in-process simulator: once with
interactive calls, once with ``--batch``. Prints, per task: samples, calls, tokens, what the
simulator billed, what the store says was spent, the number of batches and the worst case
reserved. Then a batch run under a budget that covers half of the batch bill, to show the
provider's bill stays under it. Timings are not the point (the batch clock is simulated).

    python bench/batch_cost.py [--seeds 165]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio
import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import write_cnndm, write_hotpot

from halugen.config import BatchOptions, RunConfig
from halugen.engine import generate
from halugen.llm.transport import HandlerTransport
from halugen.simulate import SimConfig, Simulator
from halugen.simulate.batch import in_process_handlers, with_batch_stats
from halugen.simulate.config import BatchSimConfig


class StepClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def one(
    task: str, seeds: Path, db: Path, *, batch: bool, budget: float, response_format: str = "honour"
) -> dict:
    """One run; ``response_format``: what the simulated server does with a JSON schema."""
    sim = Simulator(
        SimConfig(
            response_format=response_format,
            batch=BatchSimConfig(duration_s=5.0, clock=StepClock()),
        )
    )
    post, get = in_process_handlers(sim)
    cfg = RunConfig(
        tasks=(task,),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url="http://sim/v1",
        api_key="k",
        db=db,
        budget_usd=budget,
        progress=False,
        batch=BatchOptions(poll_seconds=0) if batch else None,
    )
    outcome = anyio.run(lambda: generate(cfg, transport=HandlerTransport(post, get)))
    stats = with_batch_stats(sim, sim.stats(keys=False))
    with duckdb.connect(str(db), read_only=True) as conn:
        samples = conn.execute("SELECT count(*) FROM samples").fetchone()[0]
        spent = conn.execute(
            "SELECT COALESCE(sum(pusd), 0) FROM ledger WHERE event IN ('settle','consume','lost')"
        ).fetchone()[0]
        calls = conn.execute("SELECT count(*) FROM call_log WHERE status = 'ok'").fetchone()[0]
        batches, reserved = conn.execute(
            "SELECT count(*), COALESCE(max(reserved_pusd), 0) FROM batches"
        ).fetchone()
    tokens = (
        (stats["batch"]["prompt_tokens"], stats["batch"]["completion_tokens"])
        if batch
        else (stats["prompt_tokens"], stats["completion_tokens"])
    )
    return {
        "status": outcome.status,
        "samples": samples,
        "calls": calls,
        "tokens": tokens,
        "billed": stats["billed_usd"],
        "billed_requests": stats["billed_requests"],
        "interactive_billed": stats["interactive_billed_usd"],  # in batch mode: the probe
        "interactive_requests": stats["requests"],
        "duplicates": stats["duplicate_bills"],
        "spent": spent / 1e12,
        "batches": batches,
        "reserved": reserved / 1e12,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=165)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        files = {
            "qa": write_hotpot(t / "hotpot.json", args.seeds),
            "summarization": write_cnndm(t / "cnndm.csv", min(args.seeds, 100)),
        }
        for task, seeds in files.items():
            inter = one(task, seeds, t / f"{task}-i.duckdb", batch=False, budget=50.0)
            batch = one(task, seeds, t / f"{task}-b.duckdb", batch=True, budget=50.0)
            print(f"{task}: {inter['samples']} samples from {inter['calls']} calls")
            for name, r in (("interactive", inter), ("batch", batch)):
                print(
                    f"  {name:11s} billed ${r['billed']:.6f} (store: ${r['spent']:.6f}), "
                    f"tokens in/out {r['tokens'][0]:,}/{r['tokens'][1]:,}, samples "
                    f"{r['samples']}, duplicate bills {r['duplicates']}"
                    + (
                        f", {r['batches']} batches, largest worst case reserved "
                        f"${r['reserved']:.6f}"
                        if name == "batch"
                        else ""
                    )
                )
            print(f"  batch / interactive: {batch['billed'] / inter['billed']:.3f}")
            budget = round(batch["billed"] / 2, 6)
            capped = one(task, seeds, t / f"{task}-cap.duckdb", batch=True, budget=budget)
            print(
                f"  batch under a ${budget:.6f} budget: {capped['status']}, billed "
                f"${capped['billed']:.6f} (store: ${capped['spent']:.6f}), "
                f"{capped['samples']} samples, {capped['batches']} batches"
            )


if __name__ == "__main__":
    main()
