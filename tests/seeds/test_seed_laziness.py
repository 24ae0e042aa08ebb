"""Reading stays lazy: taking the first seed of a big file does not load the file."""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from halugen.records import Seed
from halugen.seeds import read_seeds

RECORDS = 50_000
FILLER = " ".join(["padding"] * 40)  # ~320 bytes per record: a file of about 20 MB


def hotpot_array(path: Path, records: int = RECORDS) -> None:
    with path.open("wb") as f:
        f.write(b"[")
        for i in range(records):
            record = {
                "_id": f"id{i}",
                "answer": "yes",
                "question": f"Question {i}?",
                "supporting_facts": [["T", 0]],
                "context": [["T", [f"Fact {i}. {FILLER}"]]],
            }
            f.write((b"," if i else b"") + orjson.dumps(record))
        f.write(b"]")


def halueval_lines(path: Path) -> None:
    with path.open("wb") as f:
        for i in range(RECORDS):
            record = {"knowledge": f"k{i} {FILLER}", "question": f"q{i}", "right_answer": "a"}
            f.write(orjson.dumps(record) + b"\n")


def peak_while(fn: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_first_seed_of_a_big_array_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    hotpot_array(path)
    assert path.stat().st_size > 15_000_000
    got, peak = peak_while(lambda: list(itertools.islice(read_seeds([str(path)], "qa"), 1)))
    assert [s.seed_id for s in got] == ["id0"]
    assert peak < 1_000_000, peak


def test_first_seed_of_big_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    halueval_lines(path)
    got, peak = peak_while(lambda: list(itertools.islice(read_seeds([str(path)], "qa"), 1)))
    assert [s.source_line for s in got] == [1]
    assert peak < 1_000_000, peak


def test_memory_stays_flat_through_the_whole_array(tmp_path: Path) -> None:
    # Fewer records (tracemalloc is slow); holding them all would still take ~10 MB.
    records = 10_000
    path = tmp_path / "big.json"
    hotpot_array(path, records)

    def count() -> tuple[int, str]:
        n, last = 0, ""
        for seed in read_seeds([str(path)], "qa"):
            assert isinstance(seed, Seed)
            n, last = n + 1, seed.seed_id
        return n, last

    got, peak = peak_while(count)
    assert got == (records, f"id{records - 1}")
    assert peak < 2_000_000, peak
