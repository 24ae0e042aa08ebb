"""A rerun whose calls the store answers: what it costs beside the run that paid for them.

One ``halugen run`` over HotpotQA seeds against the simulator (50 ms answers), then, on a copy
of its store, the same command with ``--fresh``: a new run with the very same requests, each
answered from the store (the simulator is not called; its CPU says so). Prints wall time and
CPU (the halugen process, from exec to exit) of both, and the simulator's CPU during each.

    python bench/rerun_from_store.py [--seeds 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import halugen_run_cmd, simulator_process, write_hotpot


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one command run to its end; exits on a failed run."""
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:4])} ... exited {done.returncode}: {done.stderr[-800:]}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    firsts, reruns = [], []
    with tempfile.TemporaryDirectory() as tmp_name, simulator_process("--latency-ms", "50") as url:
        tmp = Path(tmp_name)
        seeds = write_hotpot(tmp / "seeds.json", args.seeds)
        for i in range(args.repeat):
            db, copy = tmp / f"first{i}.duckdb", tmp / f"rerun{i}.duckdb"
            sim = url.cpu()
            wall, cpu = timed(halugen_run_cmd(seeds, url, db))
            firsts.append((wall, cpu, url.cpu() - sim))
            shutil.copy(db, copy)
            sim = url.cpu()
            wall, cpu = timed(halugen_run_cmd(seeds, url, copy, "--fresh"))
            reruns.append((wall, cpu, url.cpu() - sim))
            for name, (w, c, s) in (("first", firsts[-1]), ("rerun", reruns[-1])):
                print(f"  {name} {i + 1}: {w:.1f} s wall, {c:.1f} s CPU, simulator {s:.1f} s CPU")
    for name, runs in (("first run", firsts), ("rerun from the store", reruns)):
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        sim = statistics.median(r[2] for r in runs)
        print(
            f"{name}, {args.seeds} seeds, medians of {len(runs)}: {wall:.1f} s wall, "
            f"{cpu:.1f} s CPU; simulator {sim:.1f} s CPU"
        )


if __name__ == "__main__":
    main()
