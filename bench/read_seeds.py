"""Reading seeds: HotpotQA JSON arrays through the bad-byte marking, and one enormous field.

Prints, for a HotpotQA-shaped array built from the real dev sample (../shared/data, or the
test fixture records when it is absent), the read rate of ``read_seeds`` with clean records and
with one bad record in 50, against ijson straight over the file (what the reader did before
bad bytes were marked). Then the time ``fit_to_context`` takes on one 50 MB field without
whitespace, and the time exact tiktoken counting of 3 MB of such text takes, for scale.
Timings on a shared 2-core machine are noisy: medians of 3.

    python bench/read_seeds.py [--mb 100]
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from halugen.engine import load_tasks
from halugen.records import BadRecord, Seed
from halugen.seeds import read_seeds
from halugen.seeds.jsonl import IJSON
from halugen.stages.fit import fit_to_context
from halugen.tokens import get_counter

_HERE = Path(__file__).resolve()
# ../shared/data beside the checkout (a worktree may sit one level deeper)
REAL = next(
    (
        p / "shared/data/hotpotqa/hotpot_dev_distractor_v1.head165.json"
        for p in _HERE.parents
        if (p / "shared/data/hotpotqa").is_dir()
    ),
    Path("/nonexistent"),
)


def records() -> list[dict]:
    if REAL.is_file():
        return orjson.loads(REAL.read_bytes())
    from tests.conftest import hotpot_record

    return [hotpot_record(i) for i in range(165)]


def write_array(path: Path, mb: int, bad_every: int = 0) -> int:
    base = [orjson.dumps(r) for r in records()]
    n = 0
    size = 0
    with path.open("wb") as f:
        f.write(b"[")
        while size < mb << 20:
            rec = base[n % len(base)]
            if bad_every and n % bad_every == bad_every - 1:
                rec = rec.replace(b'"question": "', b'"question": "\xff', 1).replace(
                    b'"question":"', b'"question":"\xff', 1
                )
            f.write((b"," if n else b"") + rec)
            size += len(rec) + 1
            n += 1
        f.write(b"]")
    return n


def timed(fn) -> tuple[float, object]:
    times, out = [], None
    for _ in range(3):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def count_seeds(path: Path) -> tuple[int, int]:
    seeds = bad = 0
    for item in read_seeds([str(path)], "qa"):
        if isinstance(item, BadRecord):
            bad += 1
        else:
            seeds += 1
    return seeds, bad


def plain_ijson(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in IJSON.items(f, "item", use_float=True))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clean, dirty = Path(tmp) / "clean.json", Path(tmp) / "dirty.json"
        n = write_array(clean, args.mb)
        write_array(dirty, args.mb, bad_every=50)
        size = clean.stat().st_size / (1 << 20)
        t_ijson, _ = timed(lambda: plain_ijson(clean))
        t_clean, got = timed(lambda: count_seeds(clean))
        t_dirty, got_dirty = timed(lambda: count_seeds(dirty))
        source = REAL.name if REAL.is_file() else "the test fixture's records"
        print(f"HotpotQA array: {size:.0f} MB, {n:,} records (from {source})")
        print(f"  ijson alone (parse only):        {size / t_ijson:6.1f} MB/s")
        print(f"  read_seeds, clean:               {size / t_clean:6.1f} MB/s  {got}")
        print(f"  read_seeds, 1 bad record in 50:  {size / t_dirty:6.1f} MB/s  {got_dirty}")
    counter = get_counter("cl100k_base")
    rng = random.Random(1)
    block = "".join(rng.choices(string.ascii_letters, k=1 << 16))
    huge = (block * 800)[: 50 << 20]
    task = load_tasks(("summarization",))["summarization"]
    seed = Seed(task="summarization", fields={"document": huge, "right_summary": "x."}, seed_id="h")
    t_fit, fit = timed(
        lambda: fit_to_context(
            seed, task, counter, context_window=128_000, max_tokens=256, policy="truncate"
        )
    )
    kept = len(fit.seed.fields["document"]) if fit.seed else 0
    print(
        f"fit_to_context, one 50 MB field without whitespace: {t_fit:.2f} s (kept {kept:,} chars)"
    )
    sample = huge[: 3 << 20]
    counter._recent.clear()
    t_exact, tokens = timed(lambda: len(counter._encoding.encode_ordinary(sample)))
    print(
        f"exact tiktoken count of 3 MB of it, for scale: {t_exact:.2f} s ({tokens:,} tokens; "
        f"50 MB would take ~{t_exact * 50 / 3:.0f} s per count)"
    )


if __name__ == "__main__":
    main()
