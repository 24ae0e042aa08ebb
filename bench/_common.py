"""Helpers for the benchmark scripts: a simulator in its own process, seed files."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson

# the real samples beside the checkout, in any parent (or HALUGEN_SHARED_DATA=/path)
SHARED = (
    Path(os.environ["HALUGEN_SHARED_DATA"])
    if os.environ.get("HALUGEN_SHARED_DATA")
    else next(
        (
            p / "shared" / "data"
            for p in Path(__file__).resolve().parents
            if (p / "shared").is_dir()
        ),
        Path(__file__).resolve().parents[2] / "shared" / "data",
    )
)
SHARED_HOTPOT = SHARED / "hotpotqa" / "hotpot_dev_distractor_v1.head165.json"
SHARED_CNNDM = SHARED / "cnndm" / "cnn_dailymail_train_sample100.csv"


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class SimProcess(str):
    """The base URL, with the child's pid for CPU accounting."""

    pid: int

    def cpu(self) -> float:
        return process_cpu_seconds(self.pid)


@contextlib.contextmanager
def simulator_process(*args: str, stub: bool = False) -> Iterator[SimProcess]:
    """Start ``halugen simulate`` (or the minimal stub) in a child process; yields its URL."""
    command = (
        [sys.executable, str(Path(__file__).with_name("stub_server.py")), *args]
        if stub
        else [sys.executable, "-m", "halugen", "simulate", "--port", "0", *args]
    )
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if "listening on" not in line:
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"simulator did not start: {line}{err}")
        url = SimProcess(line.rsplit(" ", 1)[-1].strip())
        url.pid = proc.pid
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def real_hotpot_records() -> list[dict]:
    """The real HotpotQA sample when it is beside the checkout, else invented records."""
    if SHARED_HOTPOT.exists():
        return orjson.loads(SHARED_HOTPOT.read_bytes())
    # said, not silent: invented records are turned away by the task's guards, so the figures
    # measure another run (no filter stage); set HALUGEN_SHARED_DATA to the samples' folder
    print(
        f"bench: no HotpotQA sample at {SHARED_HOTPOT}: using invented records, whose "
        "candidates the guards turn away; set HALUGEN_SHARED_DATA=/path/to/shared/data",
        file=sys.stderr,
    )
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import hotpot_record

    return [hotpot_record(i) for i in range(165)]


def write_hotpot(path: Path, n: int) -> Path:
    """``n`` distinct HotpotQA records with real sizes (the sample, varied per copy)."""
    base = real_hotpot_records()
    out = []
    for i, rec in zip(range(n), itertools.cycle(base), strict=False):
        rec = dict(rec)
        rec["_id"] = f"{rec['_id']}-{i}"
        rec["question"] = f"{rec['question']} (variant {i // len(base)})"
        out.append(rec)
    path.write_bytes(orjson.dumps(out))
    return path


def write_cnndm(path: Path, n: int) -> Path:
    """``n`` distinct CNN/DailyMail-style rows (CSV) with real article sizes when available."""
    import csv

    csv.field_size_limit(2**31 - 1)
    if SHARED_CNNDM.exists():
        with SHARED_CNNDM.open(newline="", encoding="utf-8") as f:
            base = [(r["article"], r["highlights"]) for r in csv.DictReader(f)]
    else:
        article = ("The council voted on Tuesday to rebuild the old stone bridge. " * 60).strip()
        base = [(article, "The council will rebuild the bridge.\nIt costs 4 million euros.")]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "article", "highlights"])
        for i, (article, highlights) in zip(range(n), itertools.cycle(base), strict=False):
            w.writerow([f"bench{i}", f"(Copy {i // len(base)}.) {article}", highlights])
    return path


def halugen_run_cmd(seeds: Path, url: str, db: Path, *options: str) -> list[str]:
    """``halugen run`` as a command over ``seeds`` against ``url``, plain progress lines;
    ``options`` (``--concurrency 128``, ``--rpm 1200``, ``--limit 2000``...) appended."""
    return [
        sys.executable, "-m", "halugen", "run", "--seeds", str(seeds), "--base-url", url,
        "--api-key", "bench", "--model", "gpt-4o-mini", "--db", str(db), "--no-progress",
        *options,
    ]  # fmt: skip
