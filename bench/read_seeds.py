"""Reading seeds: HotpotQA JSON arrays, one enormous field, seed file hashes, big Parquet.

Prints, for a HotpotQA-shaped array built from the real dev sample (../shared/data, or the
test fixture records when it is absent), the read rate of ``read_seeds`` with clean records and
with one bad record in 50, against ijson straight over the file (what the reader did before
bad bytes were marked). Then the time ``fit_to_context`` takes on one 50 MB field without
whitespace, and the time exact tiktoken counting of 3 MB of such text takes, for scale.

``hash``: what a run pays at each start to stamp its seed files (size + streamed sha256,
``seeds/stamps.py``) for an array as large as HotpotQA's train file (566 MB), beside the
time reading it takes. ``parquet``: peak RSS of a process reading every seed of a large
generated Parquet file (2M rows of HF-hotpot_qa-shaped nested columns, uncompressed, ~1 GB;
written to $TMPDIR and deleted) through ``--map``, against the same for a 1,000-row file:
memory stays flat. Timings on a shared 2-core machine are noisy: medians of 3.

    python bench/read_seeds.py [--mb 100] [--hash-mb 566] [--parquet-rows 2000000]
                               [--only json,fit,hash,parquet]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import string
import subprocess
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
from halugen.tasks import builtin_task
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


def bench_hash(mb: int) -> None:
    from halugen.seeds import stamps

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hotpot_train_like.json"
        n = write_array(path, mb)
        size = path.stat().st_size / (1 << 20)

        def stamp() -> object:
            stamps._HASHED.clear()  # measure the hashing, not the per-process cache
            return stamps.stamp_files([str(path)])

        t_hash, _ = timed(stamp)
        t_cached, _ = timed(lambda: stamps.stamp_files([str(path)]))
        t_read, _ = timed(lambda: count_seeds(path))
        print(f"Seed file stamp (size + sha256) of a {size:.0f} MB HotpotQA array ({n:,} records):")
        print(f"  hashing, at each run start:  {t_hash:6.2f} s ({size / t_hash:,.0f} MB/s)")
        print(
            f"  again in the same process:   {t_cached * 1000:6.2f} ms (cached by size/mtime/inode)"
        )
        print(f"  reading its seeds, for scale: {t_read:6.2f} s ({t_hash / t_read:.1%} of it)")


def write_parquet(path: Path, rows: int) -> None:
    """HF hotpot_qa-shaped rows (context: struct of title list and sentence lists), written
    without dictionaries or compression so the file's size on disk is its data's."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(7)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(4000)]
    sentences = pa.array(
        [" ".join(rng.choices(words, k=14)).capitalize() + "." for _ in range(20_000)]
    )
    chunk = 100_000  # rows per row group
    writer = None
    try:
        for start in range(0, rows, chunk):
            m = min(chunk, rows - start)
            picks = np.random.default_rng(start).integers(0, len(sentences), m * 6)
            flat = sentences.take(pa.array(picks))  # 6 sentences a row
            inner = pa.ListArray.from_arrays(pa.array(np.arange(0, m * 6 + 1, 3)), flat)
            pairs = pa.array(np.arange(0, m * 2 + 1, 2))
            table = pa.table(
                {
                    "id": pa.array([f"r{start + i}" for i in range(m)]),
                    "question": flat.slice(m * 2, m),
                    "answer": flat.slice(m * 3, m),
                    "context": pa.StructArray.from_arrays(
                        [
                            pa.ListArray.from_arrays(pairs, flat.slice(0, m * 2)),
                            pa.ListArray.from_arrays(pairs, inner),
                        ],
                        names=["title", "sentences"],
                    ),
                }
            )
            if writer is None:
                writer = pq.ParquetWriter(
                    str(path), table.schema, compression="NONE", use_dictionary=False
                )
            writer.write_table(table, row_group_size=chunk)
    finally:
        if writer is not None:
            writer.close()


# Peak RSS from VmHWM: the process's own high-water mark (getrusage's ru_maxrss may carry
# the forking parent's over exec, and the parent here holds the generated data).
_READ_ALL = """
import sys, time
from halugen.records import Seed
from halugen.seeds import read_seeds
t = time.perf_counter()
mapping = {"knowledge": "context.sentences", "right_answer": "answer", "id": "id"}
n = sum(isinstance(x, Seed) for x in read_seeds([sys.argv[1]], "qa", mapping=mapping))
secs = time.perf_counter() - t
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(n, int(hwm.split()[1]) / 1024, secs)
"""


def read_all(path: Path) -> tuple[int, float, float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", _READ_ALL, str(path)], capture_output=True, text=True, env=env
    )
    if out.returncode:
        raise RuntimeError(out.stderr)
    n, rss, secs = out.stdout.split()
    return int(n), float(rss), float(secs)


def bench_parquet(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.parquet", Path(tmp) / "big.parquet"
        write_parquet(small, 1000)
        start = time.perf_counter()
        write_parquet(big, rows)
        made = time.perf_counter() - start
        size = big.stat().st_size / (1 << 20)
        n_small, rss_small, _ = read_all(small)
        n_big, rss_big, secs = read_all(big)
        kb = small.stat().st_size / 1024
        print("Parquet seeds through --map (nested context.sentences), read to the end:")
        print(f"  {n_small:>9,} rows, {kb:,.0f} KB: peak RSS {rss_small:,.0f} MB")
        print(
            f"  {n_big:>9,} rows, {size:,.0f} MB: peak RSS {rss_big:,.0f} MB "
            f"({rss_big - rss_small:+,.0f} MB; read in {secs:,.0f} s, {n_big / secs:,.0f} rows/s; "
            f"written in {made:,.0f} s)"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--hash-mb", type=int, default=566)
    ap.add_argument("--parquet-rows", type=int, default=2_000_000)
    ap.add_argument("--only", default="json,fit,hash,parquet")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if "hash" in only:
        bench_hash(args.hash_mb)
    if "parquet" in only:
        bench_parquet(args.parquet_rows)
    if "json" in only:
        bench_json(args.mb)
    if "fit" in only:
        bench_fit()


def bench_json(mb: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clean, dirty = Path(tmp) / "clean.json", Path(tmp) / "dirty.json"
        n = write_array(clean, mb)
        write_array(dirty, mb, bad_every=50)
        size = clean.stat().st_size / (1 << 20)
        t_ijson, _ = timed(lambda: plain_ijson(clean))
        t_clean, got = timed(lambda: count_seeds(clean))
        t_dirty, got_dirty = timed(lambda: count_seeds(dirty))
        source = REAL.name if REAL.is_file() else "the test fixture's records"
        print(f"HotpotQA array: {size:.0f} MB, {n:,} records (from {source})")
        print(f"  ijson alone (parse only):        {size / t_ijson:6.1f} MB/s")
        print(f"  read_seeds, clean:               {size / t_clean:6.1f} MB/s  {got}")
        print(f"  read_seeds, 1 bad record in 50:  {size / t_dirty:6.1f} MB/s  {got_dirty}")


def bench_fit() -> None:
    counter = get_counter("cl100k_base")
    rng = random.Random(1)
    block = "".join(rng.choices(string.ascii_letters, k=1 << 16))
    huge = (block * 800)[: 50 << 20]
    task = load_tasks([builtin_task("summarization")])["summarization"]
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
