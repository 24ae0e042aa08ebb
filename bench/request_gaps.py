"""The longest gap between requests during a run that passes several store checkpoints.

DuckDB checkpoints when its WAL reaches about 16 MB; a checkpoint on the path of a request
(its reservation committed to DuckDB before it may leave) held every request back for
0.5-2.5 s, then let those it held go at once. This runs ``halugen run`` over enough seeds to
write the store past several checkpoints, against the minimal stub (bench/stub_server.py)
served here on a thread that notes when each request arrives, and prints:

* the longest gap between two requests arriving in the steady part of the run (the first and
  last 2% of requests left out), where it fell, and the 99.9th percentile of the gaps;
* the most requests arriving within any 0.1 s and any 1 s;
* the store's size at the end (how many 16 MB WALs it went through, roughly).

    python bench/request_gaps.py [--seeds 20000] [--concurrency 128] [--rpm 0] [--pin]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stub_server
from _common import halugen_run_cmd, write_hotpot


class _Noting(stub_server.Stub):
    arrivals: ClassVar[list[float]] = []

    def data_received(self, data: bytes) -> None:
        before = stub_server.Stub.counter
        super().data_received(data)
        now = time.monotonic()
        self.arrivals.extend([now] * (stub_server.Stub.counter - before))


def serve() -> str:
    """The stub on a thread of its own; its URL."""
    ready: list[str] = []
    started = threading.Event()

    def run() -> None:
        async def main() -> None:
            loop = asyncio.get_running_loop()
            server = await loop.create_server(_Noting, "127.0.0.1", 0, backlog=2048)
            ready.append(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
            started.set()
            await server.serve_forever()

        asyncio.run(main())

    threading.Thread(target=run, daemon=True).start()
    started.wait(10)
    return ready[0]


def most_within(times: list[float], seconds: float) -> int:
    return max(
        (bisect.bisect_right(times, t + seconds) - i for i, t in enumerate(times)), default=0
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20_000)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--rpm", type=int, default=0, help="a --rpm for the run (0: none)")
    ap.add_argument("--pin", action="store_true", help="run halugen with taskset -c 0")
    args = ap.parse_args()
    url = serve()
    with tempfile.TemporaryDirectory() as tmp:
        seeds = write_hotpot(Path(tmp) / "hotpot.json", args.seeds)
        db = Path(tmp) / "gaps.duckdb"
        options = ["--concurrency", str(args.concurrency)]
        if args.rpm:
            options += ["--rpm", str(args.rpm)]
        cmd = halugen_run_cmd(seeds, url, db, *options)
        if args.pin:
            cmd = ["taskset", "-c", "0", *cmd]
        started = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True)
        elapsed = time.monotonic() - started
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            sys.exit(1)
        size_mb = os.path.getsize(db) / 1e6
    times = sorted(_Noting.arrivals)
    # the steady part: not the start (the probe goes alone, then the crew grows) nor the end
    # (the last seeds' filter calls and retries trickle out)
    edge = max(1, len(times) // 50)
    steady = times[edge:-edge]
    gaps = sorted(b - a for a, b in itertools.pairwise(steady))
    longest = gaps[-1] if gaps else 0.0
    # where it fell: a gap at the very end (the last seeds' retries) is not a stall
    at = max(range(1, len(steady)), key=lambda i: steady[i] - steady[i - 1], default=0)
    p999 = gaps[int(len(gaps) * 0.999)] if gaps else 0.0
    print(
        f"{len(times):,} requests in {elapsed:.1f} s ({len(times) / elapsed:,.0f}/s), "
        f"store {size_mb:,.0f} MB (~{size_mb / 16:.0f} WALs of 16 MB)"
    )
    print(
        f"longest gap between requests: {longest * 1e3:,.0f} ms, after request {at:,} of "
        f"{len(steady):,} ({steady[at] - times[0] if steady else 0:.1f} s in); "
        f"99.9th pct {p999 * 1e3:.1f} ms"
    )
    print(
        f"most requests within 0.1 s: {most_within(steady, 0.1):,}; "
        f"within 1 s: {most_within(steady, 1.0):,}"
    )


if __name__ == "__main__":
    main()
