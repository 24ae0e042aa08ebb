"""The CSV readers stay lazy: the first seed of a big file comes without reading the file,
and memory stays flat through all of it."""

from __future__ import annotations

import csv
import itertools
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from halugen.records import Seed
from halugen.seeds import read_seeds

FILLER = " ".join(["padding"] * 40)


def dialogue(i: int) -> str:
    turns = [
        {"message": f"Question {i}? {FILLER}", "type": "chat", "sender": "user"},
        {
            "metadata": {"path": [0.0, [["A", "rel", "B"]], f"Fact {i}"]},
            "type": "action",
            "sender": "assistant",
            "action_id": "kgwalk/choose_path",
        },
        {"message": f"Answer {i}.", "type": "chat", "sender": "assistant"},
    ]
    return orjson.dumps(turns, option=orjson.OPT_INDENT_2).decode()  # multi-line cells


def opendialkg_csv(path: Path, rows: int) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["Messages", "User Rating", "Assistant Rating"])
        for i in range(rows):
            writer.writerow([dialogue(i), "{}", "{}"])


def cnndm_csv(path: Path, rows: int) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["", "id", "article", "highlights"])
        for i in range(rows):
            writer.writerow([i, f"id{i}", f"Article {i}.\n{FILLER}\n{FILLER}", "One .\nTwo ."])


def peak_while(fn: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_first_seed_of_a_big_opendialkg_csv(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    opendialkg_csv(path, 30_000)
    assert path.stat().st_size > 15_000_000
    got, peak = peak_while(lambda: list(itertools.islice(read_seeds([str(path)], "dialogue"), 1)))
    assert [s.seed_id for s in got] == ["big.csv:2:3"]
    assert peak < 1_000_000, peak


def test_first_seed_of_a_big_cnndm_csv(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    cnndm_csv(path, 25_000)
    assert path.stat().st_size > 15_000_000
    got, peak = peak_while(
        lambda: list(itertools.islice(read_seeds([str(path)], "summarization"), 1))
    )
    assert [s.seed_id for s in got] == ["id0"]
    assert peak < 1_000_000, peak


def test_memory_stays_flat_through_the_whole_csv(tmp_path: Path) -> None:
    rows = 5_000  # holding them all would take several MB
    path = tmp_path / "big.csv"
    opendialkg_csv(path, rows)

    def count() -> tuple[int, str]:
        n, last = 0, ""
        for seed in read_seeds([str(path)], "dialogue"):
            assert isinstance(seed, Seed)
            n, last = n + 1, seed.fields["right_response"]
        return n, last

    got, peak = peak_while(count)
    assert got == (rows, f"Answer {rows - 1}.")
    assert peak < 1_000_000, peak
