"""Detection of the dialogue and summarization formats, wrong-task errors, and grouping files
by task for runs over several tasks."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError, UsageError
from halugen.records import Seed
from halugen.seeds import FORMATS, detect_format, formats_by_task, read_seeds, task_of_format
from halugen.seeds.detect import LAYOUTS, SIGNATURES, sniff

OPENDIALKG = (
    b"Messages,User Rating,Assistant Rating\r\n"
    b'"[{""message"": ""Hi"", ""type"": ""chat"", ""sender"": ""user""}]","{}","{}"\r\n'
)
CNNDM_CSV = b',id,article,highlights\n0,x1,"Body\ntext.","One .\nTwo ."\n'
CNNDM_JSONL = orjson.dumps({"id": "x1", "article": "Body.", "highlights": "One ."}) + b"\n"
STORY = b"Body text.\n\n@highlight\n\nOne\n"
DIALOGUE = orjson.dumps({"knowledge": "k", "dialogue_history": "h", "right_response": "r"})
SUMMARY = orjson.dumps({"document": "d", "right_summary": "s", "hallucinated_summary": "x"})
QA = orjson.dumps({"knowledge": "k", "question": "q", "right_answer": "a"})


def put(tmp_path: Path, name: str, data: bytes) -> str:
    file = tmp_path / name
    file.write_bytes(data)
    return str(file)


@pytest.mark.parametrize(
    ("name", "data", "fmt"),
    [
        ("test.csv", OPENDIALKG, "opendialkg"),
        ("bom.csv", b"\xef\xbb\xbf" + OPENDIALKG, "opendialkg"),
        ("odd-name.txt", OPENDIALKG, "opendialkg"),  # content decides, not the suffix
        ("cnn.csv", CNNDM_CSV, "cnndm"),
        ("cnn.jsonl", CNNDM_JSONL, "cnndm"),
        ("cnn.json", b"[" + CNNDM_JSONL + b"]", "cnndm"),
        ("a1.story", STORY, "cnndm-story"),
        ("a1.txt", b"\n" + STORY, "cnndm-story"),  # an @highlight line tells it
        ("dialogue_data.json", DIALOGUE + b"\n", "halueval-dialogue"),
        ("summarization_data.json", SUMMARY + b"\n", "halueval-summarization"),
        ("qa_data.json", QA + b"\n", "halueval-qa"),
    ],
)
def test_each_format_is_detected(tmp_path: Path, name: str, data: bytes, fmt: str) -> None:
    assert detect_format(put(tmp_path, name, data)) == fmt


def test_gzip_csv_and_story(tmp_path: Path) -> None:
    assert detect_format(put(tmp_path, "t.csv.gz", gzip.compress(OPENDIALKG))) == "opendialkg"
    assert detect_format(put(tmp_path, "a.story.gz", gzip.compress(STORY))) == "cnndm-story"
    seeds = list(read_seeds([str(tmp_path / "a.story.gz")], "summarization"))
    assert [s.seed_id for s in seeds] == ["a"]


def test_a_csv_header_with_json_format_keys_is_not_taken_for_json(tmp_path: Path) -> None:
    # halueval-qa comes as JSON only; a CSV with its column names must not be read as one.
    file = put(tmp_path, "qa.csv", b"knowledge,question,right_answer\nk,q,a\n")
    with pytest.raises(InputError, match="text starting with 'knowledge,question,right_answer'"):
        detect_format(file)


def test_opendialkg_as_json_keys_is_not_detected(tmp_path: Path) -> None:
    file = put(tmp_path, "o.jsonl", orjson.dumps({"messages": [], "user rating": {}}) + b"\n")
    with pytest.raises(InputError, match="cannot tell the seed format"):
        detect_format(file)


def test_what_the_sniffer_reports(tmp_path: Path) -> None:
    assert sniff(put(tmp_path, "c.csv", CNNDM_CSV)) == (
        "csv",
        frozenset({"", "id", "article", "highlights"}),
        "a CSV header with columns (unnamed), id, article, highlights",
    )
    layout, keys, _ = sniff(put(tmp_path, "d.jsonl", DIALOGUE))
    assert layout == "json"
    assert keys == frozenset({"knowledge", "dialogue_history", "right_response"})


def test_unknown_text_error_lists_every_format(tmp_path: Path) -> None:
    file = put(tmp_path, "x.csv", b"title,body\nA,B\n")
    with pytest.raises(InputError) as err:
        detect_format(file)
    message = str(err.value)
    assert file in message
    assert "text starting with 'title,body'" in message
    for name in FORMATS:
        assert name in message
    assert "--seed-format" in message
    assert "\n" not in message


def test_empty_story_file_is_told_by_its_name(tmp_path: Path) -> None:
    # one story per file: an empty one is a bad record when read, not a broken input
    assert detect_format(put(tmp_path, "e.story", b" \n")) == "cnndm-story"


@pytest.mark.parametrize(
    ("name", "data", "fmt", "task"),
    [
        ("d.csv", OPENDIALKG, "opendialkg", "dialogue"),
        ("c.csv", CNNDM_CSV, "cnndm", "summarization"),
        ("a.story", STORY, "cnndm-story", "summarization"),
        ("s.jsonl", SUMMARY, "halueval-summarization", "summarization"),
    ],
)
def test_a_file_of_another_task(
    tmp_path: Path, name: str, data: bytes, fmt: str, task: str
) -> None:
    file = put(tmp_path, name, data)
    with pytest.raises(
        InputError,
        match=rf"{name.replace('.', '[.]')} is in the {fmt} format, which holds {task} seeds, "
        r"not qa seeds \(seed formats for qa: hotpotqa, halueval-qa\); "
        rf"to make {task} samples from it, add --task {task}$",
    ):
        read_seeds([file], "qa")


def test_dialogue_seeds_for_the_qa_task_by_name(tmp_path: Path) -> None:
    file = put(tmp_path, "q.jsonl", QA)
    with pytest.raises(InputError, match="seed format opendialkg holds dialogue seeds, not qa"):
        read_seeds([file], "qa", fmt="opendialkg")


def test_task_of_format() -> None:
    assert task_of_format("opendialkg") == "dialogue"
    assert task_of_format("halueval-dialogue") == "dialogue"
    assert task_of_format("cnndm") == "summarization"
    assert task_of_format("cnndm-story") == "summarization"
    assert task_of_format("halueval-summarization") == "summarization"
    assert task_of_format("hotpotqa") == "qa"
    with pytest.raises(UsageError, match="unknown seed format 'squad'"):
        task_of_format("squad")


def test_formats_by_task_groups_files_in_order(tmp_path: Path) -> None:
    d = put(tmp_path, "1-dialogs.csv", OPENDIALKG)
    q = put(tmp_path, "2-qa.jsonl", QA)
    c = put(tmp_path, "3-cnn.csv", CNNDM_CSV)
    s = put(tmp_path, "4-story.story", STORY)
    h = put(tmp_path, "5-dialogue.jsonl", DIALOGUE)
    groups = formats_by_task([str(tmp_path / "*")])
    assert groups == {
        "dialogue": [(d, "opendialkg"), (h, "halueval-dialogue")],
        "qa": [(q, "halueval-qa")],
        "summarization": [(c, "cnndm"), (s, "cnndm-story")],
    }
    # each group reads back through read_seeds for its task
    for task, files in groups.items():
        out = list(read_seeds([f for f, _ in files], task))
        assert {x.source_file for x in out} == {f for f, _ in files}, task
        assert all(x.task == task for x in out if isinstance(x, Seed)), task


def test_formats_by_task_with_a_named_format_and_its_errors(tmp_path: Path) -> None:
    q = put(tmp_path, "q.jsonl", QA)
    assert formats_by_task([q], fmt="halueval-dialogue") == {"dialogue": [(q, "halueval-dialogue")]}
    with pytest.raises(UsageError, match="unknown seed format"):
        formats_by_task([q], fmt="nope")
    with pytest.raises(InputError, match="not found"):
        formats_by_task([q, str(tmp_path / "missing.csv")])
    bad = put(tmp_path, "x.csv", b"title,body\n")
    with pytest.raises(InputError, match="cannot tell the seed format"):
        formats_by_task([q, bad])


def test_every_signature_has_layouts() -> None:
    # every format but the table (any columns) is told by its keys
    assert {name for name, _, _ in SIGNATURES} == set(LAYOUTS) == set(FORMATS) - {"table"}
    assert all(LAYOUTS[name] <= {"json", "csv", "story"} for name in LAYOUTS)


def test_damaged_gzip_text_is_an_input_error(tmp_path: Path) -> None:
    data = gzip.compress(b"title,body\n" + b"x,y\n" * 300_000)
    file = put(tmp_path, "cut.csv.gz", data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cannot read seed file .*cut\.csv\.gz"):
        detect_format(file)
