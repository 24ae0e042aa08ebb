"""Wall time of ``halugen --help`` and of every ``halugen COMMAND --help``.

Each command line runs ``--repeat`` times in a fresh interpreter (as a user's shell would
start it); the script prints the median and the slowest run per command, the bare
interpreter's start-up for reference, and which heavy modules ``--help`` loaded (none is the
goal). Timings on a shared 2-core machine are noisy: read the medians.

    python bench/cli_startup.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("duckdb", "pyarrow", "aiohttp", "numpy", "sklearn", "torch", "matplotlib", "rich.live")
TARGET_S = 0.3


def commands() -> list[list[str]]:
    sys.path.insert(0, str(ROOT))
    from halugen.cli import build_parser

    parser = build_parser()
    out: list[list[str]] = [[]]

    def walk(p: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    out.append([*prefix, name])
                    walk(child, [*prefix, name])

    walk(parser, [])
    return out


def wall(argv: list[str], env: dict[str, str]) -> float:
    return timed(argv, env)[0]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child): CPU time hardly depends on the load of the
    machine, wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def heavy_loaded(words: list[str], env: dict[str, str]) -> list[str]:
    probe = (
        "import sys\nfrom halugen.cli import main\n"
        f"try:\n    main({[*words, '--help']!r})\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    line = done.stdout.rsplit("HEAVY:", 1)[1].strip()
    return [m for m in line.split(",") if m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = statistics.median(wall([sys.executable, "-c", "pass"], env) for _ in range(args.repeat))
    print(f"python -c pass (interpreter start-up): median {base * 1000:.0f} ms")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'command':<24} {'median ms':>10} {'max ms':>8} {'CPU ms':>7}  heavy modules loaded")
    worst = 0.0
    for words in commands():
        runs = [
            timed([sys.executable, "-m", "halugen", *words, "--help"], env)
            for _ in range(args.repeat)
        ]
        times = [w for w, _ in runs]
        med = statistics.median(times)
        cpu = statistics.median(c for _, c in runs)
        worst = max(worst, med)
        loaded = ", ".join(heavy_loaded(words, env)) or "-"
        name = " ".join(["halugen", *words])
        print(
            f"{name:<24} {med * 1000:>10.0f} {max(times) * 1000:>8.0f} {cpu * 1000:>7.0f}  {loaded}"
        )
    verdict = "under" if worst < TARGET_S else "OVER"
    print(f"slowest median {worst * 1000:.0f} ms: {verdict} the {TARGET_S * 1000:.0f} ms target")


if __name__ == "__main__":
    main()
