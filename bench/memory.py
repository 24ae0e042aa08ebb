"""Peak memory of a run over a small and a huge seed file, stopped after the same seeds.

Both runs read a HotpotQA-format JSON array (the huge one is streamed, never loaded) and
stop after ``--limit`` seeds; memory must not grow with the input. Each run is a separate
``halugen run`` process; its peak RSS comes from the kernel's accounting of children.

    python bench/memory.py [--small 10000] [--large 1000000] [--limit 2000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import simulator_process

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import orjson

from tests.conftest import hotpot_record


def write_array(path: Path, n: int) -> None:
    """A JSON array of ``n`` distinct records, written in chunks (flat memory here too)."""
    with path.open("wb") as f:
        f.write(b"[")
        for i in range(n):
            if i:
                f.write(b",")
            f.write(orjson.dumps(hotpot_record(i)))
        f.write(b"]")


def peak_rss_mb(cmd: list[str]) -> tuple[float, float, int]:
    """Run ``cmd`` in a fresh child (via a wrapper so its peak is its own)."""
    wrapper = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "rc = subprocess.call(sys.argv[1:]); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
        "time.perf_counter() - t, rc)"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    kb, secs, rc = out.stdout.split()[-3:]
    return int(kb) / 1024, float(secs), int(rc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--limit", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, simulator_process() as url:
        results = {}
        for n in (args.small, args.large):
            seeds = Path(tmp) / f"seeds-{n}.json"
            t = time.perf_counter()
            write_array(seeds, n)
            size = seeds.stat().st_size / 2**20
            print(
                f"wrote {n:,} records ({size:,.0f} MB) in {time.perf_counter() - t:.0f} s",
                flush=True,
            )
            cmd = [
                sys.executable,
                "-m",
                "halugen",
                "run",
                "--seeds",
                str(seeds),
                "--base-url",
                url,
                "--api-key",
                "bench",
                "--db",
                str(Path(tmp) / f"{n}.db"),
                "--limit",
                str(args.limit),
                "--no-progress",
                "--concurrency",
                "128",
            ]
            rss, secs, rc = peak_rss_mb(cmd)
            results[n] = rss
            print(
                f"{n:>9,} records, --limit {args.limit}: peak RSS {rss:,.0f} MB "
                f"({secs:.1f} s, exit {rc})",
                flush=True,
            )
            seeds.unlink()
        small, large = results[args.small], results[args.large]
        print(
            f"peak RSS large/small = {large / small:.3f} "
            f"({'within' if abs(large / small - 1) <= 0.10 else 'NOT within'} 10%; "
            f"{'under' if max(small, large) < 300 else 'OVER'} 300 MB)"
        )


if __name__ == "__main__":
    main()
