"""The shortcut probes on simulated data: generate QA, dialogue and summarization samples with
the simulator, then ``audit --balance`` each task and print n, the hard split's kept share and
every certifying probe's figure with its 95% interval, on the full set and on the hard split.

    python bench/audit_probes.py [--out DIR] [--tasks qa,dialogue,summarization]

Seeds: the real samples beside the checkout (HotpotQA dev head 165, OpenDialKG test split
first 500, CNN/DailyMail 100), ``run --seed 7`` against ``halugen simulate --no-cache``, then
``audit --db DB --task T --balance --min-items 10 --out T.json``. The stores stay in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import SHARED, SHARED_CNNDM, SHARED_HOTPOT, halugen_run_cmd, simulator_process

PROBES = ("substring", "final_char", "casing", "char_ngrams", "weak_ensemble")
SEEDS = {
    "qa": (SHARED_HOTPOT, 165),
    "dialogue": (SHARED / "opendialkg" / "opendialkg_test_split.csv", 500),
    "summarization": (SHARED_CNNDM, 100),
}


def run_task(task: str, url: str, out: Path) -> dict[str, str]:
    """Generate one task's samples; the run's counts (seeds, sampled, rejected, calls)."""
    seeds, limit = SEEDS[task]
    db = out / f"{task}.duckdb"
    cmd = halugen_run_cmd(seeds, url, db, "--task", task, "--seed", "7", "--limit", str(limit))
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    text = done.stdout + done.stderr
    final = re.findall(r"(\d+) sampled, (\d+) rejected, (\d+) failed", text)[-1]
    calls = re.findall(r"calls ([\d,]+) ok", text)[-1].replace(",", "")
    sampled, rejected, failed = (int(x) for x in final)
    return {
        "seeds": str(sampled + rejected + failed),
        "sampled": str(sampled),
        "calls": calls,
    }


def audit_task(task: str, out: Path) -> tuple[dict[str, dict[str, str]], ...]:
    """``audit --balance``: the probes' rows on the full set and on the hard split."""
    cmd = [
        sys.executable, "-m", "halugen", "audit", "--db", str(out / f"{task}.duckdb"),
        "--task", task, "--balance", "--min-items", "10", "--format", "json",
        "--out", str(out / f"{task}.json"),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    tables = list(json.loads(done.stdout).values())
    rows = []
    for table in tables:
        rows.append(
            {
                r["Measure"]: r
                for r in table
                if r["Pattern"] == "all" and r["Measure"] in (*PROBES, "length_only")
            }
        )
    return tuple(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the stores here")
    parser.add_argument("--tasks", default="qa,dialogue,summarization")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="audit_probes_"))
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "| | n (hard: kept) | seeds → samples, calls | "
        + " | ".join(PROBES)
        + " | within 5 (figure / interval) |",
        "|---|---:|---|" + "---:|" * len(PROBES) + "---|",
    ]
    with simulator_process("--no-cache") as url:
        for task in args.tasks.split(","):
            counts = run_task(task, url, out)
            full, hard = audit_task(task, out)
            n_full = int(full["length_only"]["n"])
            n_hard = int(hard["length_only"]["n"])
            for name, rows, n in ((task, full, n_full), (f"{task}, hard", hard, n_hard)):
                cells = [
                    f"{rows[p]['Value %']} {rows[p]['95% CI']}" if p in rows else "-"
                    for p in PROBES
                ]
                figures = [float(rows[p]["Value %"]) for p in PROBES if p in rows]
                bounds = [
                    float(x)
                    for p in PROBES
                    if p in rows
                    for x in rows[p]["95% CI"].strip("[]").split(",")
                ]
                near = all(abs(f - 50) <= 5 for f in figures)
                inside = all(45 <= b <= 55 for b in bounds)
                size = f"{n} ({n_hard}, {100 * n_hard / n_full:.0f}%)" if name == task else f"{n}"
                run = (
                    f"{counts['seeds']} → {counts['sampled']}, {counts['calls']}"
                    if name == task
                    else ""
                )
                lines.append(
                    f"| {name} | {size} | {run} | "
                    + " | ".join(cells)
                    + f" | {'yes' if near else 'no'} / {'yes' if inside else 'no'} |"
                )
    print("\n".join(lines))
    print(f"stores and splits in {out}")


if __name__ == "__main__":
    main()
