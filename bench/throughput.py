"""LLM calls per second through the whole generation pipeline.

Everything a real run does is included: durable reservations in DuckDB, token counting,
request keys, the rate limiter, retries, the store writer. The server runs in its own
process: halugen's simulator (at 0 ms and 50 ms latency), and a minimal stub that costs the
server side almost nothing, so the last figure is halugen's own ceiling on this machine.
Prints calls/s (median of repeats) and halugen's CPU per call (all its threads, and the event
loop's own thread), and, against the same server in the same run, a bare aiohttp client
sending the very bodies halugen sent.

Two ways, because they give different figures:

- in process (``inproc``): the run is a function call in this process; its figures leave
  out the interpreter's start-up and imports, and its threads (the store's two writer
  lanes, the seed reader) run on the second core beside the event loop, while the server
  shares both cores. The event loop thread's own CPU is the ceiling of one process.
- pinned (``pinned``): ``halugen run`` as a command of its own, pinned with ``taskset -c 0``
  to one core, start-up included (from exec to exit), against the server pinned to the
  other core; the bare client is likewise a process of its own on core 0. This is what a
  user's run on one core costs.

    python bench/throughput.py [--seeds 2000] [--concurrency 256] [--repeat 3]
                               [--ways inproc,pinned] [--servers sim0,sim50,stub]
                               [--profile]

``--profile`` adds one pinned run under bench/cpu_profile.py: halugen's CPU by thread (the
event loop, the journal's sync and feed threads, the bulk lane) and the functions with the
most CPU of their own.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SimProcess, halugen_run_cmd, simulator_process, write_cnndm, write_hotpot

from halugen.config import RateLimit, RunConfig
from halugen.engine import generate


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one_run(
    base_url: str, seeds: Path, db: Path, concurrency: int, task: str
) -> tuple[float, int, float, float]:
    cfg = RunConfig(
        tasks=(task,),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="bench",
        db=db,
        rate=RateLimit(concurrency=concurrency),
        progress=False,
        fresh=True,
    )
    cpu0, loop0, t0 = cpu_seconds(), time.thread_time(), time.perf_counter()
    outcome = anyio.run(lambda: generate(cfg))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    loop_cpu = time.thread_time() - loop0  # the event loop's own thread: the ceiling
    calls = sum(s.done + s.failed for s in outcome.stats.stages.values())
    if outcome.exit_code != 0:
        print("  run ended with:", outcome.message)
    return wall, calls, cpu, loop_cpu


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pinned_run(
    base_url: str, seeds: Path, db: Path, concurrency: int, task: str, profile: Path | None = None
) -> tuple[float, int, float]:
    """``halugen run`` in a process of its own on core 0: (wall, calls, CPU), start-up in.

    ``profile``: run it under bench/cpu_profile.py, which writes its report there."""
    options = ("--task", task, "--concurrency", str(concurrency))
    command = halugen_run_cmd(seeds, base_url, db, *options)
    if profile is not None:  # ``python -m halugen ...`` -> ``python cpu_profile.py OUT ...``
        command = [command[0], str(Path(__file__).with_name("cpu_profile.py")), str(profile),
                   *command[3:]]  # fmt: skip
    cmd = ["taskset", "-c", "0", *command]
    cpu0, t0, unix0 = children_cpu(), time.perf_counter(), time.time()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, cpu, unix1 = time.perf_counter() - t0, children_cpu() - cpu0, time.time()
    if done.returncode != 0:
        print("  run ended with:", done.stderr[-500:])
    import duckdb

    with duckdb.connect(str(db), read_only=True) as conn:
        calls, first, last = conn.execute(
            "SELECT count(*), epoch(min(created_at)), epoch(max(created_at)) FROM call_log"
        ).fetchone() or (0, None, None)
    if first is not None and last is not None:
        # the calls' rows are stamped when their answers are appended to the journal
        print(
            f"    start-up (exec to the first answer) {first - unix0:.2f} s, answers "
            f"{last - first:.2f} s, shutdown (last answer to exit) {unix1 - last:.2f} s",
            flush=True,
        )
    return wall, int(calls), cpu


def pinned_bare(url: str, db: Path, concurrency: int) -> tuple[float, int, float]:
    """The bare client in a process of its own on core 0, start-up included."""
    cmd = ["taskset", "-c", "0", sys.executable, __file__, "--bare", url, str(db),
           str(concurrency)]  # fmt: skip
    cpu0, t0 = children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    return wall, int(out.split()[0]), cpu


def bare_client(url: str, db: Path, concurrency: int) -> tuple[float, int, float]:
    """A bare aiohttp client sending the bodies halugen sent, at the same concurrency.

    No store, no budget, no keys, no counting: the floor of what any Python client pays.
    """
    import asyncio

    import aiohttp
    import duckdb

    with duckdb.connect(str(db), read_only=True) as conn:
        bodies = [
            r[0].encode()
            for r in conn.execute(
                "SELECT request_json FROM calls WHERE request_json IS NOT NULL"
            ).fetchall()
        ]

    async def go() -> None:
        queue = list(reversed(bodies))
        headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def worker() -> None:
                while queue:
                    body = queue.pop()
                    async with session.post(
                        f"{url}/chat/completions", data=body, headers=headers
                    ) as resp:
                        await resp.read()

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    cpu0, t0 = cpu_seconds(), time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - t0, len(bodies), cpu_seconds() - cpu0


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--bare":  # pinned_bare's child
        _, calls, _ = bare_client(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))
        print(calls)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--task",
        choices=("qa", "summarization"),
        default="qa",
        help="summarization: CNN/DailyMail articles, long prompts",
    )
    ap.add_argument("--servers", default="sim0,sim50,stub")
    ap.add_argument("--ways", default="inproc,pinned", help="inproc, pinned or both")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="pinned: one more run under bench/cpu_profile.py; prints CPU by thread and the "
        "top functions",
    )
    args = ap.parse_args()
    servers = {
        "sim0": ("simulator, 0 ms", ("--latency-ms", "0"), False),
        "sim50": ("simulator, 50 ms", ("--latency-ms", "50"), False),
        "stub": ("minimal stub", (), True),
    }
    ways = args.ways.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        seeds = (
            write_hotpot(Path(tmp) / "seeds.json", args.seeds)
            if args.task == "qa"
            else write_cnndm(Path(tmp) / "seeds.csv", args.seeds)
        )
        for name in args.servers.split(","):
            label, sim_args, stub = servers[name]
            with simulator_process(*sim_args, stub=stub) as url:
                if "inproc" in ways:
                    in_process(url, label, name, seeds, Path(tmp), args)
                if "pinned" in ways:
                    os.sched_setaffinity(url.pid, {1})  # the server on the other core
                    pinned(url, label, name, seeds, Path(tmp), args)


def in_process(
    url: SimProcess, label: str, name: str, seeds: Path, tmp: Path, args: argparse.Namespace
) -> None:
    rates, cpus, loops, server_cpus = [], [], [], []
    for i in range(args.repeat):
        server0 = url.cpu()
        wall, calls, cpu, loop_cpu = one_run(
            url, seeds, tmp / f"{name}{i}.duckdb", args.concurrency, args.task
        )
        rates.append(calls / wall)
        cpus.append(cpu / calls * 1e6)
        loops.append(loop_cpu / calls * 1e6)
        server_cpus.append((url.cpu() - server0) / calls * 1e6)
        print(
            f"  {label} run {i + 1}: {calls} calls in {wall:.2f} s = {calls / wall:,.0f} calls/s",
            flush=True,
        )
    bare = [bare_client(url, tmp / f"{name}0.duckdb", args.concurrency) for _ in range(args.repeat)]
    bare_rate = statistics.median(calls / wall for wall, calls, _ in bare)
    bare_cpu = statistics.median(cpu / calls * 1e6 for _, calls, cpu in bare)
    print(
        f"{label}, in process: bare aiohttp client, the same bodies: {bare_rate:,.0f} "
        f"calls/s, {bare_cpu:,.0f} us CPU/call",
        flush=True,
    )
    print(
        f"{label}, in process: median {statistics.median(rates):,.0f} calls/s; halugen CPU "
        f"{statistics.median(cpus):,.0f} us/call (event loop thread "
        f"{statistics.median(loops):,.0f} us/call); server CPU "
        f"{statistics.median(server_cpus):,.0f} us/call "
        f"(concurrency {args.concurrency}, {args.seeds} {args.task} seeds)",
        flush=True,
    )


def pinned(
    url: SimProcess, label: str, name: str, seeds: Path, tmp: Path, args: argparse.Namespace
) -> None:
    runs, bare = [], []
    for i in range(args.repeat):
        db = tmp / f"{name}-pinned{i}.duckdb"
        wall, calls, cpu = pinned_run(url, seeds, db, args.concurrency, args.task)
        runs.append((calls / wall, cpu / calls * 1e6))
        print(
            f"  {label} pinned run {i + 1}: {calls} calls in {wall:.2f} s = "
            f"{calls / wall:,.0f} calls/s, {cpu / calls * 1e6:,.0f} us CPU/call",
            flush=True,
        )
        wall, calls, cpu = pinned_bare(url, db, args.concurrency)
        bare.append((calls / wall, cpu / calls * 1e6))
    rate = statistics.median(r for r, _ in runs)
    bare_rate = statistics.median(r for r, _ in bare)
    cpu, bare_cpu = statistics.median(c for _, c in runs), statistics.median(c for _, c in bare)
    print(
        f"{label}, pinned to one core, start-up included: median {rate:,.0f} calls/s, "
        f"{cpu:,.0f} us CPU/call; bare aiohttp client "
        f"{bare_rate:,.0f} calls/s, {bare_cpu:,.0f} us CPU/call; "
        f"halugen/bare rate = {rate / bare_rate:.2f}, CPU per call = {cpu / bare_cpu:.2f}x",
        flush=True,
    )
    if args.profile:
        report = tmp / f"{name}-profile.json"
        pinned_run(url, seeds, tmp / f"{name}-profiled.duckdb", args.concurrency, args.task, report)
        print_profile(label, orjson.loads(report.read_bytes()))


def print_profile(label: str, report: dict) -> None:
    """bench/cpu_profile.py's report: CPU by thread, then the functions with most own CPU."""
    total = sum(t["cpu_s"] for t in report["threads"]) or 1.0
    print(f"{label}, profiled run (thread CPU clocks; the profiler inflates Python code):")
    for t in report["threads"]:
        if t["cpu_s"] >= 0.005:
            print(f"    {t['thread']:<24} {t['cpu_s']:7.2f} s  {t['cpu_s'] / total:6.1%}")
    print(f"    top {len(report['top_own'])} by own CPU (a DuckDB call counts as its caller's):")
    for f in report["top_own"]:
        print(
            f"    {f['own_s']:7.2f} s {f['own_s'] / total:6.1%} {f['calls']:>9,}  {f['function']}"
        )


if __name__ == "__main__":
    main()
