"""CPU per call of a paced run: what halugen costs when the provider's limit, not halugen,
sets the pace (the usual case).

``halugen run`` against the minimal stub (``bench/stub_server.py``, answering after
``--latency-ms``, 500 by default, as a provider's generation takes time) with
``--rpm`` set so calls go at ``--rate`` per second. The run's CPU (all threads, from /proc)
is read each time it prints its plain progress line (every 5 s), beside the calls it
reports; CPU per call is taken over the steady part of the run (start-up and the last line
left out), for each of ``--repeat`` runs, and the median is printed.

    python bench/paced_cpu.py [--rate 20] [--seconds 40] [--repeat 3] [--latency-ms 500]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import halugen_run_cmd, process_cpu_seconds, simulator_process, write_hotpot

_CALLS = re.compile(r"calls ([\d,]+) ok")


def paced_run(url: str, seeds: Path, db: Path, rate: float, seconds: float) -> float | None:
    """CPU seconds per call between the run's first and last progress lines."""
    cmd = halugen_run_cmd(seeds, url, db, "--rpm", str(int(rate * 60)))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    readings: list[tuple[int, float]] = []
    t0 = time.monotonic()
    assert proc.stderr is not None
    for line in proc.stderr:
        m = _CALLS.search(line)
        if m:
            readings.append((int(m.group(1).replace(",", "")), process_cpu_seconds(proc.pid)))
        if time.monotonic() - t0 > seconds:
            break
    proc.terminate()
    proc.wait(30)
    steady = readings[1:]  # the first line's interval holds start-up
    if len(steady) < 2 or steady[-1][0] == steady[0][0]:
        return None
    (calls0, cpu0), (calls1, cpu1) = steady[0], steady[-1]
    return (cpu1 - cpu0) / (calls1 - calls0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=20.0, help="calls per second (--rpm = 60x)")
    ap.add_argument("--seconds", type=float, default=40.0, help="length of each run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency-ms", type=int, default=500, help="the stub's answer time")
    args = ap.parse_args()
    stub = ("--latency-ms", str(args.latency_ms))
    with tempfile.TemporaryDirectory() as tmp, simulator_process(*stub, stub=True) as url:
        seeds = write_hotpot(Path(tmp) / "seeds.json", int(args.rate * args.seconds))
        per_call = []
        for i in range(args.repeat):
            cpu = paced_run(url, seeds, Path(tmp) / f"{i}.duckdb", args.rate, args.seconds)
            if cpu is None:
                print(f"  run {i + 1}: too few progress lines", flush=True)
                continue
            per_call.append(cpu * 1e6)
            print(f"  run {i + 1}: {cpu * 1e6:,.0f} us CPU per call", flush=True)
        if per_call:
            print(
                f"paced at {args.rate:g} calls/s, answers in {args.latency_ms} ms: median "
                f"{statistics.median(per_call):,.0f} us CPU per call (all threads; runs: "
                f"{', '.join(f'{c:,.0f}' for c in per_call)})"
            )


if __name__ == "__main__":
    main()
