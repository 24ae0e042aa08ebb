"""LLM calls per second through the whole generation pipeline, against the simulator.

Everything a real run does is included: durable reservations in DuckDB, token counting,
request keys, the rate limiter, retries, the store writer. The simulator runs in its own
process (it takes one of the two cores here). Prints calls/s and client CPU per call.

    python bench/throughput.py [--seeds 3000] [--latency 0,50] [--concurrency 256]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import simulator_process, write_hotpot  # noqa: E402

from halugen.config import RateLimit, RunConfig  # noqa: E402
from halugen.engine import generate  # noqa: E402


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one_run(base_url: str, seeds: Path, db: Path, concurrency: int) -> tuple[float, int, float]:
    cfg = RunConfig(tasks=("qa",), seeds=(str(seeds),), model="gpt-4o-mini", base_url=base_url,
                    api_key="bench", db=db, rate=RateLimit(concurrency=concurrency),
                    progress=False, fresh=True)
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    outcome = anyio.run(lambda: generate(cfg))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    calls = sum(s.done + s.failed for s in outcome.stats.stages.values())
    if outcome.exit_code != 0:
        print("  run ended with:", outcome.message)
    return wall, calls, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3000)
    ap.add_argument("--latency", default="0,50")
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        seeds = write_hotpot(Path(tmp) / "seeds.json", args.seeds)
        for latency in (float(x) for x in args.latency.split(",")):
            with simulator_process("--latency-ms", str(latency)) as url:
                rates, cpus = [], []
                for i in range(args.repeat):
                    wall, calls, cpu = one_run(url, seeds, Path(tmp) / f"b{latency}-{i}.duckdb",
                                               args.concurrency)
                    rates.append(calls / wall)
                    cpus.append(cpu / calls * 1e6)
                    print(f"  latency {latency:g} ms run {i + 1}: {calls} calls in {wall:.2f} s"
                          f" = {calls / wall:,.0f} calls/s, client CPU {cpu / calls * 1e6:,.0f}"
                          f" us/call", flush=True)
                print(f"latency {latency:g} ms: median {statistics.median(rates):,.0f} calls/s, "
                      f"client CPU median {statistics.median(cpus):,.0f} us/call "
                      f"(concurrency {args.concurrency}, {args.seeds} seeds)", flush=True)


if __name__ == "__main__":
    main()
