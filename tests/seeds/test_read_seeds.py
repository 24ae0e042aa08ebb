"""read_seeds: paths and patterns, per-file detection, task checks, eager errors."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError, UsageError
from halugen.records import Seed
from halugen.seeds import FORMATS, SeedFormat, expand_paths, read_seeds


def hotpot(_id: str) -> dict[str, object]:
    return {
        "_id": _id,
        "answer": "yes",
        "question": f"Question {_id}?",
        "supporting_facts": [["T", 0]],
        "context": [["T", [f"Fact {_id}."]]],
    }


def halueval_line(n: int) -> bytes:
    return orjson.dumps({"knowledge": f"k{n}", "question": f"q{n}", "right_answer": f"a{n}"})


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    (tmp_path / "b.json").write_bytes(orjson.dumps([hotpot("b1"), hotpot("b2")]))
    (tmp_path / "a.json").write_bytes(orjson.dumps([hotpot("a1")]))
    (tmp_path / "c.jsonl").write_bytes(halueval_line(1) + b"\n" + halueval_line(2) + b"\n")
    (tmp_path / "sub").mkdir()
    return tmp_path


def test_glob_sorted_and_formats_detected_per_file(files: Path) -> None:
    seeds = list(read_seeds([str(files / "*.json*")], "qa"))
    assert all(isinstance(s, Seed) for s in seeds)
    assert [(s.seed_id, s.dataset) for s in seeds] == [
        ("a1", "hotpotqa"),
        ("b1", "hotpotqa"),
        ("b2", "hotpotqa"),
        ("c.jsonl:1", "halueval-qa"),
        ("c.jsonl:2", "halueval-qa"),
    ]
    assert seeds[0].source_file == str(files / "a.json")


def test_paths_keep_their_order_and_duplicates_are_dropped(files: Path) -> None:
    got = expand_paths([str(files / "c.jsonl"), str(files / "*.json"), str(files / "a.json")])
    assert got == [str(files / "c.jsonl"), str(files / "a.json"), str(files / "b.json")]


def test_lone_string_is_one_path(files: Path) -> None:
    assert [s.seed_id for s in read_seeds(str(files / "a.json"), "qa")] == ["a1"]


def test_missing_file_fails_before_iteration(files: Path) -> None:
    with pytest.raises(InputError, match=r"seed file .*nope\.json not found \(check the path"):
        read_seeds([str(files / "a.json"), str(files / "nope.json")], "qa")


def test_pattern_matching_nothing(files: Path) -> None:
    with pytest.raises(InputError, match=r"\*\.csv not found: the pattern matches no file"):
        read_seeds([str(files / "*.csv")], "qa")


def test_directory_and_no_paths(files: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_seeds([str(files / "sub")], "qa")
    with pytest.raises(InputError, match="no seed files given"):
        read_seeds([], "qa")


def test_file_named_like_a_pattern_is_taken_literally(tmp_path: Path) -> None:
    (tmp_path / "odd[1].json").write_bytes(orjson.dumps([hotpot("odd")]))
    assert [s.seed_id for s in read_seeds([str(tmp_path / "odd[1].json")], "qa")] == ["odd"]


def test_relative_paths_are_kept_as_given(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(files)
    seeds = list(read_seeds(["a.json", "c.*"], "qa"))
    assert [s.source_file for s in seeds] == ["a.json", "c.jsonl", "c.jsonl"]


def test_format_of_another_task(files: Path) -> None:
    with pytest.raises(
        InputError,
        match=r"a\.json is in the hotpotqa format, which holds qa "
        r"seeds, not dialogue seeds \(seed formats for "
        r"dialogue: halueval-dialogue, opendialkg, opendialkg-dialogue\)",
    ):
        read_seeds([str(files / "a.json")], "dialogue")
    # a task no format serves is a task folder's, whose seeds are its own records: a name
    # that is neither built in nor a folder's is an unknown task
    with pytest.raises(UsageError, match=r"unknown task 'poetry'"):
        read_seeds([str(files / "a.json")], "poetry")
    with pytest.raises(InputError, match="seed format halueval-qa holds qa seeds, not dialogue"):
        read_seeds([str(files / "a.json")], "dialogue", fmt="halueval-qa")


def test_unknown_format_name() -> None:
    with pytest.raises(
        UsageError, match="unknown seed format 'squad' \\(known: hotpotqa, halueval-qa, "
    ):
        read_seeds(["whatever"], "qa", fmt="squad")


def test_undetectable_file_fails_before_any_seed(files: Path) -> None:
    (files / "z.json").write_bytes(b"id,text\n1,hello\n")
    with pytest.raises(InputError, match="cannot tell the seed format"):
        read_seeds([str(files / "a.json"), str(files / "z.json")], "qa")


def test_explicit_format_skips_detection(files: Path) -> None:
    # With the format named, records that do not fit become bad records, not a stop.
    out = list(read_seeds([str(files / "a.json")], "qa", fmt="halueval-qa"))
    assert len(out) == 1
    assert out[0].reason == "missing field knowledge"


def test_registry_entries_are_task_and_reader_pairs() -> None:
    for name, entry in FORMATS.items():
        assert isinstance(entry, SeedFormat)
        task, reader = entry
        # a table ("") is read by any task, through its columns
        assert task in {"qa", "dialogue", "summarization", ""} and callable(reader), name


def test_home_directory_is_expanded(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(files))
    assert expand_paths(["~/a.json"]) == [os.path.join(str(files), "a.json")]


def test_a_symlink_loop_is_named_as_such_not_as_missing(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(InputError) as err:
        read_seeds([str(a)], "qa")
    message = str(err.value)
    assert "symbolic link that loops" in message and str(a) in message
    assert "not found" not in message


def test_a_dangling_symlink_names_its_target(tmp_path: Path) -> None:
    link = tmp_path / "seeds.json"
    link.symlink_to(tmp_path / "moved-away.json")
    with pytest.raises(InputError, match=r"symbolic link to .*moved-away\.json, which does not"):
        read_seeds([str(link)], "qa")
