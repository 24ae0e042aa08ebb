"""Money at the edges of a run, counted at the simulator (its own request count and bill).

    python bench/money_edges.py ctrl-c [--code DIR]   requests sent after the first Ctrl-C
    python bench/money_edges.py kills  [--code DIR]   reservations counted as spent after a
                                                      kill -9 vs requests at the provider
    python bench/money_edges.py gone   [--code DIR]   time to stop once the provider is gone

``--code DIR`` runs the halugen found in DIR (another checkout, e.g. the code before a change)
against the simulator of this checkout, so before and after are measured the same way.
Nothing is asserted: it prints what it counted.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import duckdb
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import simulator_process, write_hotpot

HERE = Path(__file__).resolve().parents[1]


def stats(base_url: str) -> dict:
    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/_sim/stats?keys=0", timeout=30) as resp:
        return orjson.loads(resp.read())


def halugen(code: Path, base_url: str, seeds: Path, db: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [
        sys.executable, "-m", "halugen", "run", "--seeds", str(seeds), "--base-url", base_url,
        "--api-key", "k", "--db", str(db), "--no-progress", "--model", "gpt-4o-mini", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=code
    )


def wait_for(proc: subprocess.Popen, ready, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            err = proc.stderr.read() if proc.stderr else ""
            raise SystemExit(f"the run ended or stalled before {what}: {err}")
        time.sleep(0.02)


def one(conn: duckdb.DuckDBPyConnection, sql: str) -> tuple:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return row


def ctrl_c(code: Path, tmp: Path, trials: int) -> None:
    print("first Ctrl-C with --rpm 200 (default concurrency 64), simulator latency 500 ms")
    for trial in range(trials):
        with simulator_process("--latency-ms", "500") as url:
            db = tmp / f"c{trial}.duckdb"
            proc = halugen(code, url, write_hotpot(tmp / "s.json", 400), db, "--rpm", "200")
            wait_for(proc, lambda: stats(url)["requests"] >= 30, "30 requests")
            at_signal = stats(url)["requests"]
            os.kill(proc.pid, signal.SIGINT)
            assert proc.stderr is not None
            line = proc.stderr.readline()
            while line and not line.startswith("stopping"):
                line = proc.stderr.readline()
            said = stats(url)["requests"]
            t0 = time.monotonic()
            rest = proc.communicate(timeout=300)[1]
            waited = time.monotonic() - t0
            after = stats(url)["requests"]
            closing = rest.strip().splitlines()[-1] if rest.strip() else ""
            print(
                f"  trial {trial}: requests after the Ctrl-C {after - at_signal} (after the "
                f"message {after - said}); exit {proc.returncode} after {waited:.1f} s\n"
                f"    said: {line.strip()}\n    closing: {closing}"
            )


def open_reservations(db: Path) -> tuple[int, float]:
    with duckdb.connect(str(db), read_only=True) as conn:
        n, usd = one(
            conn,
            "SELECT count(*), COALESCE(sum(r.pusd), 0) / 1e12 FROM ledger r WHERE r.event = "
            "'reserve' AND NOT EXISTS (SELECT 1 FROM ledger c WHERE c.call_id = r.call_id AND "
            "c.res_no = r.res_no AND c.event <> 'reserve')",
        )
    return int(n), float(usd)


def spent_counted(db: Path) -> float:
    """What the store counts as spent after a kill: closed money plus every open reservation."""
    with duckdb.connect(str(db), read_only=True) as conn:
        (closed,) = one(
            conn,
            "SELECT COALESCE(sum(pusd), 0) / 1e12 FROM ledger "
            "WHERE event IN ('settle', 'consume', 'lost')",
        )
    return closed + open_reservations(db)[1]


def kills(code: Path, tmp: Path, trials: int) -> None:
    print(
        "kill -9 at random moments; --rpm 3000 --concurrency 64, simulator latency 300 ms "
        "(jitter 200 ms), a new run per trial"
    )
    rng = random.Random(7)
    for trial in range(trials):
        with simulator_process("--latency-ms", "300", "--jitter-ms", "200") as url:
            db = tmp / f"k{trial}.duckdb"
            proc = halugen(
                code, url, write_hotpot(tmp / "s.json", 600), db, "--rpm", "3000",
                "--concurrency", "64", "--budget", "5usd",
            )  # fmt: skip
            point = rng.randrange(40, 400)
            wait_for(proc, lambda p=point: stats(url)["ok"] >= p, f"{point} answers")
            before = stats(url)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            time.sleep(1.0)  # let the simulator finish the requests it holds (it bills first)
            after = stats(url)
            n_open, open_usd = open_reservations(db)
            counted = spent_counted(db)
            billed = after["billed_usd"]
            print(
                f"  trial {trial}: at the provider when killed {before['in_flight']}; "
                f"reservations left open {n_open} (${open_usd:.5f}); counted as spent "
                f"${counted:.5f} vs billed ${billed:.5f} ({(counted / billed - 1) * 100:+.1f}%)"
            )


def gone(code: Path, tmp: Path, cap_s: float) -> None:
    print("a 60-seed run; the simulator goes down for good after 40 requests")
    with simulator_process("--down-after", "40", "--latency-ms", "50") as url:
        db = tmp / "g.duckdb"
        proc = halugen(code, url, write_hotpot(tmp / "s.json", 60), db, "--concurrency", "8")
        last: dict = {}

        def down() -> bool:  # once down, its stats route is refused like everything else
            try:
                last.update(stats(url))
            except OSError:
                return True
            return False

        wait_for(proc, down, "the provider went down")
        t0 = time.monotonic()
        try:
            rest = proc.communicate(timeout=cap_s)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            print(f"  still running {cap_s:.0f} s after the provider went down (stopped here)")
            return
        took = time.monotonic() - t0
        closing = rest.strip().splitlines()[-1] if rest.strip() else ""
        closing = re.sub(r"\s+", " ", closing)[:400]
        print(f"  stopped {took:.1f} s after the provider went down, exit {proc.returncode}")
        print(f"    closing: {closing}")
        with duckdb.connect(str(db), read_only=True) as conn:
            (ok,) = one(conn, "SELECT count(*) FROM calls WHERE status = 'ok'")
        print(f"    answers kept in the store: {ok} (the simulator had answered {last['ok']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("ctrl-c", "kills", "gone"))
    parser.add_argument("--code", type=Path, default=HERE, help="the checkout to measure")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--cap", type=float, default=300.0, help="gone: give up after (s)")
    args = parser.parse_args()
    print(f"halugen from {args.code}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.what == "ctrl-c":
            ctrl_c(args.code.resolve(), Path(tmp), args.trials)
        elif args.what == "kills":
            kills(args.code.resolve(), Path(tmp), args.trials)
        else:
            gone(args.code.resolve(), Path(tmp), args.cap)


if __name__ == "__main__":
    main()
