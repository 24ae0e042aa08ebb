"""The HaluEval QA reader: JSON lines, bad lines with their numbers, CRLF, BOM."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError
from halugen.records import BadRecord, Seed
from halugen.seeds.halueval import read_halueval_qa


def line(**fields: object) -> bytes:
    base: dict[str, object] = {
        "knowledge": "The river rises in the hills.The river ends in the sea.",
        "question": "Where does the river end?",
        "right_answer": "the sea",
        "hallucinated_answer": "It ends in a lake.",
    }
    base.update(fields)
    return orjson.dumps({k: v for k, v in base.items() if v is not ...})


def write(
    tmp_path: Path, lines: list[bytes], name: str = "qa_data.json", end: bytes = b"\n"
) -> str:
    path = tmp_path / name
    path.write_bytes(b"".join(x + end for x in lines))
    return str(path)


def test_fields_ids_and_lines(tmp_path: Path) -> None:
    path = write(tmp_path, [line(), line(question="  Where\n does it  start? ")])
    seeds = list(read_halueval_qa(path))
    assert all(isinstance(s, Seed) for s in seeds)
    first, second = seeds
    assert isinstance(first, Seed) and isinstance(second, Seed)
    assert dict(first.fields) == {
        "knowledge": "The river rises in the hills.The river ends in the sea.",
        "question": "Where does the river end?",
        "right_answer": "the sea",
    }  # hallucinated_answer is dropped; the knowledge text is kept as the file has it
    assert (first.seed_id, first.source_line, first.dataset) == ("qa_data.json:1", 1, "halueval-qa")
    assert first.source_file == path
    assert second.fields["question"] == "  Where\n does it  start? "  # as the file has it
    assert second.seed_id == "qa_data.json:2"
    assert first.key != second.key


def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    path = write(tmp_path, [line(), b'{"knowledge": "cut off', line(right_answer="a delta")])
    out = list(read_halueval_qa(path))
    assert [type(x) for x in out] == [Seed, BadRecord, Seed]
    bad = out[1]
    assert isinstance(bad, BadRecord)
    assert (bad.source_file, bad.source_line) == (path, 2)
    assert bad.reason.startswith("invalid JSON (")
    assert "\n" not in bad.reason
    assert out[2].fields["right_answer"] == "a delta"
    assert out[2].source_line == 3


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (line(knowledge=...), "missing field knowledge"),
        (line(right_answer=""), "field right_answer is empty"),
        (line(question=" \t "), "field question is empty"),
        (line(question=["a", "list"]), "field question is a list, not a string"),
        (line(right_answer=None), "field right_answer is null, not a string"),
        (line(knowledge={"a": 1}), "field knowledge is an object, not a string"),
        (b"[1, 2]", "not a JSON object (a list)"),
        (b'"just text"', "not a JSON object (a string)"),
    ],
)
def test_bad_lines(tmp_path: Path, text: bytes, reason: str) -> None:
    path = write(tmp_path, [line(), text, line()])
    out = list(read_halueval_qa(path))
    assert out[1] == BadRecord(path, 2, reason)
    assert isinstance(out[0], Seed) and isinstance(out[2], Seed)


def test_first_line_holding_a_list_reads_as_an_array(tmp_path: Path) -> None:
    # The layout is told by the first character; a file starting with "[" is a JSON array.
    path = write(tmp_path, [b"[1, 2]", line()])
    out = []
    with pytest.raises(InputError, match="JSON lines must hold one object per line"):
        out.extend(read_halueval_qa(path))
    assert out == [
        BadRecord(path, 1, "not a JSON object (a number)"),
        BadRecord(path, 2, "not a JSON object (a number)"),
    ]


def test_invalid_utf8_line_is_a_bad_record(tmp_path: Path) -> None:
    path = write(
        tmp_path, [line(), b'{"knowledge": "\xff\xfe", "question": "q", "right_answer": "a"}']
    )
    out = list(read_halueval_qa(path))
    assert isinstance(out[0], Seed)
    assert isinstance(out[1], BadRecord) and out[1].source_line == 2


def test_blank_lines_skipped_but_counted(tmp_path: Path) -> None:
    path = write(tmp_path, [b"", line(), b"   ", b"", line(right_answer="x"), b""])
    out = list(read_halueval_qa(path))
    assert [s.source_line for s in out] == [2, 5]


def test_crlf_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "crlf.json"
    path.write_bytes(b"\xef\xbb\xbf" + line() + b"\r\n" + line(right_answer="B\r") + b"\r\n")
    out = list(read_halueval_qa(str(path)))
    assert [type(x) for x in out] == [Seed, Seed]
    assert out[0].fields["knowledge"].startswith("The river")
    assert out[1].fields["right_answer"] == "B\r"  # the value's own CR is text, kept


def test_json_array_of_the_same_objects(tmp_path: Path) -> None:
    path = tmp_path / "qa.json"
    path.write_bytes(b"[" + line() + b",\n" + line(right_answer="x") + b"]")
    out = list(read_halueval_qa(str(path)))
    assert [(s.seed_id, s.fields["right_answer"]) for s in out] == [
        ("qa.json:1", "the sea"),
        ("qa.json:2", "x"),
    ]


@pytest.mark.parametrize("content", [b"", b"\n\r\n  \n"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "none.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"none\.jsonl is empty"):
        list(read_halueval_qa(str(path)))
