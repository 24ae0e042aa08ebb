"""HaluEval's dialogue and summarization seed files: fields, ignored hallucinations, bad lines."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError
from halugen.records import BadRecord, Seed
from halugen.seeds import read_seeds
from halugen.seeds.halueval import read_halueval_dialogue, read_halueval_summarization

DIALOGUE = {
    "knowledge": "Sun Harbour is written by Ilse Varga",
    "dialogue_history": "[Human]: Do you know Sun Harbour? [Assistant]: I do. "
    "[Human]: Who wrote it? ",
    "right_response": "Ilse Varga wrote it.",
    "hallucinated_response": "Tomas Orl wrote it in 1902.",
}
SUMMARY = {
    "document": "The harbour of Sollen reopened on Monday.  Ships queued all day.",
    "right_summary": "Sollen's harbour reopened and ships queued.\n",
    "hallucinated_summary": "Sollen's airport reopened.",
}


def write(tmp_path: Path, lines: list[bytes], name: str) -> str:
    file = tmp_path / name
    file.write_bytes(b"\n".join(lines) + b"\n")
    return str(file)


def test_dialogue_lines(tmp_path: Path) -> None:
    other = {**DIALOGUE, "right_response": "She did."}
    file = write(
        tmp_path,
        [orjson.dumps(DIALOGUE), b'{"knowledge": ', orjson.dumps(other)],
        "dialogue_data.json",
    )
    out = list(read_halueval_dialogue(file))
    assert [type(x) for x in out] == [Seed, BadRecord, Seed]
    first = out[0]
    assert isinstance(first, Seed)
    assert dict(first.fields) == {
        "knowledge": "Sun Harbour is written by Ilse Varga",
        "dialogue_history": "[Human]: Do you know Sun Harbour? [Assistant]: I do. "
        "[Human]: Who wrote it? ",  # the released files' trailing space kept
        "right_response": "Ilse Varga wrote it.",
    }
    assert (first.seed_id, first.source_line, first.task, first.dataset) == (
        "dialogue_data.json:1",
        1,
        "dialogue",
        "halueval-dialogue",
    )
    bad = out[1]
    assert isinstance(bad, BadRecord)
    assert (bad.source_line, bad.reason.startswith("invalid JSON (")) == (2, True)
    assert out[2].seed_id == "dialogue_data.json:3"


def test_summarization_lines(tmp_path: Path) -> None:
    missing = {k: v for k, v in SUMMARY.items() if k != "right_summary"}
    file = write(
        tmp_path,
        [orjson.dumps(SUMMARY), orjson.dumps(missing), b"[1]"],
        "summarization_data.json",
    )
    out = list(read_halueval_summarization(file))
    seed = out[0]
    assert isinstance(seed, Seed)
    assert dict(seed.fields) == {
        "document": "The harbour of Sollen reopened on Monday.  Ships queued all day.",
        # the released right summaries end in a newline: kept in the seed, trimmed where
        # texts are compared or shown to a model under test
        "right_summary": "Sollen's harbour reopened and ships queued.\n",
    }
    assert (seed.task, seed.dataset) == ("summarization", "halueval-summarization")
    assert out[1] == BadRecord(file, 2, "missing field right_summary")
    assert out[2] == BadRecord(file, 3, "not a JSON object (a list)")


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({**DIALOGUE, "dialogue_history": " "}, "field dialogue_history is empty"),
        ({**DIALOGUE, "knowledge": None}, "field knowledge is null, not a string"),
        ({**DIALOGUE, "right_response": ["a"]}, "field right_response is a list, not a string"),
    ],
)
def test_bad_dialogue_records(tmp_path: Path, record: dict[str, object], reason: str) -> None:
    file = write(tmp_path, [orjson.dumps(record)], "d.jsonl")
    assert list(read_halueval_dialogue(file)) == [BadRecord(file, 1, reason)]


def test_arrays_and_detection_through_read_seeds(tmp_path: Path) -> None:
    dialogue = tmp_path / "d.json"
    dialogue.write_bytes(orjson.dumps([DIALOGUE, DIALOGUE]))
    summary = write(tmp_path, [orjson.dumps(SUMMARY)], "s.json")
    assert [s.seed_id for s in read_seeds([str(dialogue)], "dialogue")] == ["d.json:1", "d.json:2"]
    assert [s.dataset for s in read_seeds([summary], "summarization")] == ["halueval-summarization"]


def test_empty_files(tmp_path: Path) -> None:
    file = write(tmp_path, [b""], "empty.json")
    with pytest.raises(InputError, match=r"empty\.json is empty"):
        list(read_halueval_dialogue(file))
    with pytest.raises(InputError, match=r"empty\.json is empty"):
        list(read_halueval_summarization(file))
