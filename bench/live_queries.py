"""What watching a run with SQL costs it: calls/s with and without a client querying.

A generation run (QA, HotpotQA's real dev sample) against the simulator in its own process,
once alone and once while another process queries the live store once a
second through ``halugen.store.live.connect_live`` (the holder answers it, see
halugen/store/live.py); the client is a long-lived process, as a notebook would be, so its
own start-up is not counted. Prints both rates and their ratio,
alternating the two kinds of run so that drift on a shared machine hits both alike.

    python bench/live_queries.py [--seeds 3000] [--repeat 3]

With ``--trial heavy`` / ``--trial long`` it runs the two trials of issue 25 instead: a
``halugen run`` in its own process while another process asks a 30-million-row window sort
(heavy), or while two processes ask endless queries and are killed 5 s later (long), or
with no query (none, the baseline); each prints the run's exit code and how long after its
last stored call it exited, ``--repeat`` times, then the median of each kind (the kinds
alternate, so that drift on a shared machine hits them alike).

    python bench/live_queries.py --seeds 3000 --repeat 3 --trial none --trial heavy --trial long
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


# -- trials: a live query that must not hurt the run ------------------------------------
HEAVY = (  # a 30-million-row window sort: spills far past any limit the holder keeps
    "SELECT max(rn) FROM (SELECT row_number() OVER (ORDER BY hash(i)) AS rn "
    "FROM range(30000000) t(i))"
)
LONG = "SELECT sum(hash(x)) FROM range(300000000000) t(x)"  # hours of CPU

_ASKER = """
import sys
from halugen.store.live import connect_live
db, query = sys.argv[1], sys.argv[2]
live = None
while live is None:
    live = connect_live(db)
try:
    live.execute(query).fetchall()
    print("answered", flush=True)
except Exception as exc:
    print("refused:", str(exc).splitlines()[0][:200], flush=True)
"""


def trial(url: str, seeds: Path, db: Path, kind: str) -> tuple[str, float]:
    """A ``halugen run`` in its own process while other processes query it: ``heavy`` (the
    window sort, let to finish) or ``long`` (two endless queries whose clients are killed
    after 5 s). Returns one line: the run's exit code, its error if any, and how long after
    its last stored call it exited (a query must never keep a finished run alive), and
    those seconds."""
    from datetime import UTC, datetime

    import duckdb

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import halugen_run_cmd

    cmd = halugen_run_cmd(seeds, url, db, "--concurrency", "64", "--fresh")
    run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    query, n = {"heavy": (HEAVY, 1), "long": (LONG, 2), "none": ("", 0)}[kind]
    time.sleep(3.0)  # the run is sending
    askers = [
        subprocess.Popen(
            [sys.executable, "-c", _ASKER, str(db), query], stdout=subprocess.PIPE, text=True
        )
        for _ in range(n)
    ]
    if kind == "long":
        time.sleep(5.0)
        for a in askers:
            a.kill()
    stderr = run.communicate()[1]
    exited = datetime.now(UTC).replace(tzinfo=None)
    answers = []
    for a in askers:
        out = a.communicate()[0] if kind == "heavy" else "(client killed)"
        answers.append((out or "no answer").strip())
    with duckdb.connect(str(db), read_only=True) as con:
        (last,) = con.execute("SELECT max(created_at) FROM calls").fetchone()
    tail = (exited - last).total_seconds() if last is not None else float("nan")
    problem = stderr.strip().splitlines()[-1] if run.returncode not in (0, 3) and stderr else ""
    line = (
        f"{kind}: run exit {run.returncode}{f' ({problem})' if problem else ''}, exited "
        f"{tail:.1f} s after its last call; queries: {'; '.join(answers)}"
    )
    return line, tail


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--trial",
        choices=("heavy", "long", "none"),
        action="append",
        help="instead of the rates: a run while a heavy or a long query is asked, or none (the "
        "baseline) (repeatable)",
    )
    args = ap.parse_args()
    if args.trial:
        with tempfile.TemporaryDirectory() as tmp, simulator_process("--latency-ms", "200") as url:
            seeds = write_hotpot(Path(tmp) / "seeds.json", args.seeds)
            tails: dict[str, list[float]] = {kind: [] for kind in args.trial}
            for i in range(args.repeat):
                for j, kind in enumerate(args.trial):
                    line, tail = trial(url, seeds, Path(tmp) / f"trial{i}-{j}.duckdb", kind)
                    tails[kind].append(tail)
                    print(f"  {line}", flush=True)
            for kind, seconds in tails.items():
                listed = " / ".join(f"{t:.1f}" for t in seconds)
                print(
                    f"{kind}: exit after the last call, median {statistics.median(seconds):.1f} s "
                    f"({listed})"
                )
        return
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
