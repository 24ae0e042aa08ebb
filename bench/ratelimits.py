"""Rate limits that hold: achieved rate and 429 share against quantised limits, and a
one-at-a-time server at the default concurrency.

Every case is a whole QA generation run (real HotpotQA sample, ~850-token prompts) against
the simulator in its own process. The rate is measured on the simulator's side: what passed
its limits between the first and the last admitted request (``/_sim/stats``), against the
limit it announces.

- requests-bound: ``--rpm 1200`` (20 a second when quantised to 1 s), tokens-bound:
  ``--tpm 1000000``; each quantised to 1 s and to 60 s (a whole minute may burst); each with
  the limits learned from the headers and with a user limit far too high
  (``--rpm 100000`` / ``--tpm 100000000``);
- capacity: ``--capacity 1 --no-n`` (llama.cpp's server), 250 ms per request, halugen at its
  default concurrency of 64, with ``--timeout 300`` and ``--timeout 5``;
- fleet: three simulators quantised to 1 s at 600, 1,200 and 1,800 requests/min, one run
  through all three (``--endpoint`` each), limits learned from each one's headers.

    python bench/ratelimits.py [--seconds 40] [--cases rate,capacity,fleet]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import anyio
import duckdb
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import simulator_process, write_hotpot

from halugen.config import Endpoint, RateLimit, RunConfig, Timeouts
from halugen.engine import generate

CALLS_PER_SEED = 2.5  # QA: two candidates and, for most seeds, one filter call
TOKENS_PER_CALL = 1000  # what the simulator's tokens/min limit counts per QA call, about


def sim_stats(url: str) -> dict:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/_sim/stats?keys=0") as resp:
        return orjson.loads(resp.read())


def run(
    url: str,
    seeds: Path,
    db: Path,
    rate: RateLimit,
    timeout: float = 300.0,
    endpoints: tuple[Endpoint, ...] = (),
) -> tuple[float, str, tuple[int, int, int]]:
    cfg = RunConfig(
        tasks=("qa",),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url=url,
        api_key="bench",
        db=db,
        rate=rate,
        endpoints=endpoints,
        timeouts=Timeouts(total=timeout, read=min(120.0, timeout)),
        progress=False,
        fresh=True,
    )
    t0 = time.perf_counter()
    outcome = anyio.run(lambda: generate(cfg))
    wall = time.perf_counter() - t0
    with duckdb.connect(str(db), read_only=True) as conn:
        row = conn.execute(
            "SELECT count(*), sum(attempts), count(*) FILTER (WHERE status = 'failed') FROM calls"
        ).fetchone()
    assert row is not None
    return wall, outcome.status, (int(row[0]), int(row[1] or 0), int(row[2]))


def rate_cases(tmp: Path, seconds: float) -> None:
    print("| bound | quantum | limits | achieved / announced | 429 share | calls | status |")
    print("|---|---|---|---|---|---|---|")
    cases = []
    for quantum in ("1", "60"):
        cases += [
            ("requests", quantum, ("--rpm", "1200"), RateLimit(), "learned"),
            ("requests", quantum, ("--rpm", "1200"), RateLimit(rpm=100_000), "--rpm 100000"),
            ("tokens", quantum, ("--rpm", "100000", "--tpm", "1000000"), RateLimit(), "learned"),
            (
                "tokens",
                quantum,
                ("--rpm", "100000", "--tpm", "1000000"),
                RateLimit(tpm=10**8),
                "--tpm 100000000",
            ),
        ]
    for i, (bound, quantum, limits, user, label) in enumerate(cases):
        per_s = 1200 / 60 if bound == "requests" else 1_000_000 / 60 / TOKENS_PER_CALL
        seeds = write_hotpot(tmp / f"seeds{i}.json", int(per_s * seconds / CALLS_PER_SEED))
        args = (*limits, "--quantise", quantum, "--latency-ms", "50", "--jitter-ms", "50")
        with simulator_process(*args) as url:
            _, status, (calls, _, _) = run(url, seeds, tmp / f"r{i}.duckdb", user)
            st = sim_stats(url)
        span = max(1e-9, st["admitted_span_s"])
        if bound == "requests":
            achieved = st["admitted"] / span * 60 / 1200
        else:
            achieved = st["admitted_tokens"] / span * 60 / 1_000_000
        share = st["rate_limited"] / max(1, st["requests"])
        print(
            f"| {bound}/min | {quantum} s | {label} | {achieved:.1%} | {share:.2%} "
            f"({st['rate_limited']} of {st['requests']}) | {calls} | {status} |",
            flush=True,
        )


def capacity_cases(tmp: Path, seeds_n: int, latency_ms: float) -> None:
    print()
    print(
        "| server | --timeout | calls | attempts | timeouts | abandoned at the server | wall | "
        "the server's own time | status |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    seeds = write_hotpot(tmp / "cap.json", seeds_n)
    for timeout in (300.0, 5.0):
        args = ("--capacity", "1", "--no-n", "--latency-ms", str(latency_ms))
        with simulator_process(*args) as url:
            wall, status, (calls, attempts, failed) = run(
                url, seeds, tmp / f"cap{timeout:g}.duckdb", RateLimit(concurrency=64), timeout
            )
            st = sim_stats(url)
        own = st["billed_requests"] * latency_ms / 1000
        print(
            f"| one slot, {latency_ms:g} ms | {timeout:g} | {calls} | {attempts} | "
            f"{attempts - calls + failed} | {st['abandoned']} | {wall:.1f} s | {own:.1f} s | "
            f"{status} |",
            flush=True,
        )


def fleet_case(tmp: Path, seconds: float) -> None:
    limits = (600, 1200, 1800)
    seeds = write_hotpot(tmp / "fleet.json", int(sum(limits) / 60 * seconds / CALLS_PER_SEED))
    with contextlib.ExitStack() as stack:
        urls = [
            stack.enter_context(
                simulator_process(
                    "--rpm", str(rpm), "--quantise", "1", "--latency-ms", "50", "--jitter-ms", "50"
                )
            )
            for rpm in limits
        ]
        endpoints = tuple(Endpoint(url=u, api_key="bench") for u in urls)
        _, status, (calls, _, _) = run(
            urls[0], seeds, tmp / "fleet.duckdb", RateLimit(concurrency=192), endpoints=endpoints
        )
        stats = [sim_stats(u) for u in urls]
    print()
    print("| endpoint limit | achieved / its limit | 429 share |")
    print("|---|---|---|")
    total = 0.0
    for rpm, st in zip(limits, stats, strict=True):
        achieved = st["admitted"] / max(1e-9, st["admitted_span_s"]) * 60
        total += achieved
        share = st["rate_limited"] / max(1, st["requests"])
        print(f"| {rpm} rpm | {achieved / rpm:.1%} | {share:.2%} |")
    requests = sum(st["requests"] for st in stats)
    limited = sum(st["rate_limited"] for st in stats)
    share = limited / max(1, requests)
    print(
        f"| fleet, {sum(limits)} rpm | {total / sum(limits):.1%} | {share:.2%} "
        f"({limited} of {requests}); {calls} calls, {status} |",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=40.0, help="length of each rate case")
    ap.add_argument("--cases", default="rate,capacity,fleet")
    ap.add_argument("--capacity-seeds", type=int, default=64)
    ap.add_argument("--capacity-latency-ms", type=float, default=250.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if "rate" in args.cases:
            rate_cases(Path(tmp), args.seconds)
        if "capacity" in args.cases:
            capacity_cases(Path(tmp), args.capacity_seeds, args.capacity_latency_ms)
        if "fleet" in args.cases:
            fleet_case(Path(tmp), args.seconds)


if __name__ == "__main__":
    main()
