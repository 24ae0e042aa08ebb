"""Peak memory of whole runs: over the seeds a run processes, and over the size of its input.

``processed`` (the default): ``halugen run`` over 1k, 10k and 100k distinct HotpotQA seeds
of real size, every seed processed (sampled and filtered), against the minimal stub server
(``bench/stub_server.py``, answers at once) in its own process. The run's RSS is sampled
from /proc every 0.2 s, so besides the peak the script says when it happened: while seeds
were processed, or in the run's last seconds (finishing: the writer's last commits, the
closing queries, the store's close). Memory must not grow with the seeds processed.

``input``: the same number of seeds (``--limit``) taken from a small and a huge seed file
(the huge one is streamed, never loaded): memory must not grow with the input either.

    python bench/memory.py [processed] [--seeds 1000,10000,100000] [--keep DIR]
    python bench/memory.py input [--small 10000] [--large 1000000] [--limit 2000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import halugen_run_cmd, real_hotpot_records, simulator_process

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import orjson

from tests.conftest import hotpot_record

_PAGE = 4096


def write_array(path: Path, n: int, *, real: bool) -> None:
    """A JSON array of ``n`` distinct records, written a record at a time (flat memory here
    too). ``real``: the real HotpotQA sample's records, varied per copy (about 6 KB prompts);
    else small invented ones."""
    base = real_hotpot_records() if real else []
    with path.open("wb") as f:
        f.write(b"[")
        for i in range(n):
            if i:
                f.write(b",")
            if real:
                rec = dict(base[i % len(base)])
                rec["_id"] = f"{rec['_id']}-{i}"
                rec["question"] = f"{rec['question']} (variant {i // len(base)})"
            else:
                rec = hotpot_record(i)
            f.write(orjson.dumps(rec))
        f.write(b"]")


def _rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE / 2**20
    except (OSError, IndexError, ValueError):
        return None


def sampled_run(cmd: list[str], every: float = 0.2) -> tuple[list[tuple[float, float]], float, int]:
    """Run ``cmd``; its RSS every ``every`` seconds as (seconds since start, MB), its wall
    time and exit code. The kernel's own peak (VmHWM) is the last sample's companion."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[float, float]] = []
    hwm = 0.0
    while proc.poll() is None:
        rss = _rss_mb(proc.pid)
        if rss is not None:
            samples.append((time.perf_counter() - t0, rss))
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = max(hwm, int(line.split()[1]) / 1024)
        except OSError:
            pass
        time.sleep(every)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode:
        print(err[-2000:], file=sys.stderr)
    if hwm:
        samples.append((wall, hwm))  # the kernel's peak, in case it fell between samples
    return samples, wall, proc.returncode


def run_cmd(seeds: Path, url: str, db: Path, limit: int | None, concurrency: int) -> list[str]:
    limited = ("--limit", str(limit)) if limit is not None else ()
    return halugen_run_cmd(seeds, url, db, "--concurrency", str(concurrency), *limited)


def describe(samples: list[tuple[float, float]], wall: float, tail: float) -> str:
    """Peak, where it was, and the RSS at quarters of the run."""
    peak_t, peak = max(samples, key=lambda s: s[1])
    body = [mb for t, mb in samples if t < wall - tail]
    body_peak = max(body) if body else 0.0
    quarters = []
    for q in (0.25, 0.5, 0.75):
        near = min(samples, key=lambda s, q=q: abs(s[0] - q * wall))
        quarters.append(f"{near[1]:.0f}")
    return (
        f"peak {peak:,.0f} MB at {peak_t:.0f}s of {wall:.0f}s; before the last {tail:.0f} s "
        f"{body_peak:,.0f} MB; at 1/4, 1/2, 3/4 of the run {', '.join(quarters)} MB"
    )


def processed(args: argparse.Namespace) -> None:
    counts = [int(n) for n in args.seeds.split(",")]
    with tempfile.TemporaryDirectory(dir=args.keep) as tmp, simulator_process(stub=True) as url:
        peaks = {}
        for n in counts:
            seeds = Path(tmp) / f"seeds-{n}.json"
            write_array(seeds, n, real=True)
            db = Path(tmp) / f"{n}.duckdb"
            samples, wall, rc = sampled_run(run_cmd(seeds, url, db, None, args.concurrency))
            peaks[n] = max(mb for _, mb in samples)
            size = db.stat().st_size / 2**20 if db.exists() else 0
            print(
                f"{n:>7,} seeds processed: {describe(samples, wall, args.tail)}; exit {rc}; "
                f"store {size:,.0f} MB",
                flush=True,
            )
            if args.trace:
                trace = Path(args.trace).with_suffix(f".{n}.tsv")
                trace.write_text("".join(f"{t:.2f}\t{mb:.1f}\n" for t, mb in samples))
            seeds.unlink()
            db.unlink(missing_ok=True)
        if len(counts) > 1:
            small, large = peaks[counts[-2]], peaks[counts[-1]]
            print(
                f"peak RSS {counts[-1]:,}/{counts[-2]:,} seeds = {large / small:.3f}; "
                f"largest {max(peaks.values()):,.0f} MB "
                f"({'under' if max(peaks.values()) < 300 else 'OVER'} 300 MB)"
            )


def input_size(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir=args.keep) as tmp, simulator_process() as url:
        results = {}
        for n in (args.small, args.large):
            seeds = Path(tmp) / f"seeds-{n}.json"
            t = time.perf_counter()
            write_array(seeds, n, real=False)
            size = seeds.stat().st_size / 2**20
            print(
                f"wrote {n:,} records ({size:,.0f} MB) in {time.perf_counter() - t:.0f} s",
                flush=True,
            )
            cmd = run_cmd(seeds, url, Path(tmp) / f"{n}.db", args.limit, 128)
            samples, wall, rc = sampled_run(cmd)
            results[n] = max(mb for _, mb in samples)
            print(
                f"{n:>9,} records, --limit {args.limit}: peak RSS {results[n]:,.0f} MB "
                f"({wall:.1f} s, exit {rc})",
                flush=True,
            )
            seeds.unlink()
        small, large = results[args.small], results[args.large]
        print(
            f"peak RSS large/small = {large / small:.3f} "
            f"({'within' if abs(large / small - 1) <= 0.10 else 'NOT within'} 10%; "
            f"{'under' if max(small, large) < 300 else 'OVER'} 300 MB)"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", choices=("processed", "input"), default="processed")
    ap.add_argument("--seeds", default="1000,10000,100000", help="processed: seed counts")
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--tail", type=float, default=25.0, help="seconds counted as finishing")
    ap.add_argument("--trace", help="processed: write each run's RSS samples to PATH.<n>.tsv")
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--limit", type=int, default=2000)
    ap.add_argument("--keep", help="directory for the temporary files (default: $TMPDIR)")
    args = ap.parse_args()
    (processed if args.mode == "processed" else input_size)(args)


if __name__ == "__main__":
    main()
