"""What watching a run with SQL costs it: calls/s with and without a client querying.

A generation run (QA, HotpotQA's real dev sample) against the simulator in its own process,
once alone and once while another process queries the live store once a
second through ``halugen.store.live.connect_live`` (the holder answers it, see
halugen/store/live.py); the client is a long-lived process, as a notebook would be, so its
own start-up is not counted. Prints both rates and their ratio,
alternating the two kinds of run so that drift on a shared machine hits both alike.

    python bench/live_queries.py [--seeds 3000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import simulator_process, write_hotpot

from halugen.config import RateLimit, RunConfig
from halugen.engine import generate

QUERY = (
    "SELECT stage, count(*) AS calls, sum(cost_usd) AS cost FROM calls GROUP BY stage "
    "UNION ALL SELECT 'samples', count(*), NULL FROM samples"
)


_WATCHER = """
import sys, time
from halugen.store.live import connect_live
db, query = sys.argv[1], sys.argv[2]
print("ready", flush=True)
while True:
    t0 = time.perf_counter()
    live = connect_live(db)
    if live is not None:
        try:
            live.execute(query).fetchall()
            print(f"{time.perf_counter() - t0:.6f}", flush=True)
        except Exception:
            pass
    time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
"""


def watcher(db: Path, stop: threading.Event, answered: list[float]) -> None:
    """A user's notebook in another process: one query over the live store each second."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _WATCHER, str(db), QUERY], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    reader = threading.Thread(
        target=lambda: [answered.append(float(line)) for line in proc.stdout], daemon=True
    )
    reader.start()
    stop.wait()
    proc.kill()
    proc.wait()


def one_run(url: str, seeds: Path, db: Path, watch: bool) -> tuple[float, int, list[float]]:
    cfg = RunConfig(
        tasks=("qa",),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url=url,
        api_key="bench",
        db=db,
        rate=RateLimit(concurrency=256),
        progress=False,
        fresh=True,
    )
    stop, answered = threading.Event(), []
    thread = threading.Thread(target=watcher, args=(db, stop, answered), daemon=True)
    if watch:
        thread.start()
        time.sleep(1.0)  # the watcher process is up (its imports) before the run starts
    t0 = time.perf_counter()
    outcome = anyio.run(lambda: generate(cfg))
    wall = time.perf_counter() - t0
    stop.set()
    if watch:
        thread.join()
    calls = sum(s.done + s.failed for s in outcome.stats.stages.values())
    return wall, calls, answered


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rates: dict[bool, list[float]] = {False: [], True: []}
    answers: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, simulator_process("--latency-ms", "0") as url:
        seeds = write_hotpot(Path(tmp) / "seeds.json", args.seeds)
        for i in range(args.repeat):
            for watch in (False, True):
                db = Path(tmp) / f"run{i}{int(watch)}.duckdb"
                wall, calls, answered = one_run(url, seeds, db, watch)
                rates[watch].append(calls / wall)
                answers.extend(answered)
                label = "with a query each second" if watch else "alone"
                extra = f", {len(answered)} queries answered" if watch else ""
                print(f"  run {i + 1} {label}: {calls / wall:,.0f} calls/s{extra}", flush=True)
    alone, watched = statistics.median(rates[False]), statistics.median(rates[True])
    print(
        f"alone: median {alone:,.0f} calls/s; with a client querying once a second: "
        f"{watched:,.0f} calls/s ({watched / alone - 1:+.1%}); query round trip median "
        f"{statistics.median(answers) * 1000 if answers else float('nan'):,.1f} ms"
    )


if __name__ == "__main__":
    main()
