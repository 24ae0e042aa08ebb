"""Format detection from the first record, and what the error says when nothing fits."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError
from halugen.seeds import FORMATS, detect_format
from halugen.seeds.detect import SIGNATURES

HOTPOT = {
    "_id": "x1",
    "answer": "yes",
    "question": "Q?",
    "supporting_facts": [["A", 0]],
    "context": [["A", ["a."]]],
    "type": "comparison",
    "level": "hard",
}
HALUEVAL = {"knowledge": "k", "question": "q", "right_answer": "a", "hallucinated_answer": "h"}


def put(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_hotpotqa_array(tmp_path: Path) -> None:
    assert detect_format(put(tmp_path, "h.json", orjson.dumps([HOTPOT, HOTPOT]))) == "hotpotqa"


def test_hotpotqa_array_pretty_printed_with_bom(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf\n  " + orjson.dumps([HOTPOT], option=orjson.OPT_INDENT_2)
    assert detect_format(put(tmp_path, "h.json", data)) == "hotpotqa"


def test_halueval_lines(tmp_path: Path) -> None:
    data = b"\r\n" + orjson.dumps(HALUEVAL) + b"\r\n" + orjson.dumps(HALUEVAL) + b"\r\n"
    assert detect_format(put(tmp_path, "qa_data.json", data)) == "halueval-qa"


def test_halueval_without_hallucinated_answer(tmp_path: Path) -> None:
    data = orjson.dumps({"knowledge": "k", "question": "q", "right_answer": "a"}) + b"\n"
    assert detect_format(put(tmp_path, "qa.jsonl", data)) == "halueval-qa"


def test_other_layouts_of_the_same_records(tmp_path: Path) -> None:
    assert detect_format(put(tmp_path, "a.json", orjson.dumps([HALUEVAL]))) == "halueval-qa"
    assert detect_format(put(tmp_path, "b.jsonl", orjson.dumps(HOTPOT) + b"\n")) == "hotpotqa"


def test_gzip(tmp_path: Path) -> None:
    data = gzip.compress(orjson.dumps([HOTPOT]))
    assert detect_format(put(tmp_path, "h.json.gz", data)) == "hotpotqa"


def test_only_the_first_record_is_read(tmp_path: Path) -> None:
    data = orjson.dumps([HOTPOT])[:-1] + b", {broken"
    assert detect_format(put(tmp_path, "h.json", data)) == "hotpotqa"
    data = orjson.dumps(HALUEVAL) + b"\nnot json at all\n"
    assert detect_format(put(tmp_path, "q.jsonl", data)) == "halueval-qa"


def test_unknown_keys_error_names_file_keys_formats_and_flag(tmp_path: Path) -> None:
    data = orjson.dumps({"ID": "1", "user_query": "q", "chatgpt_response": "r"}) + b"\n"
    path = put(tmp_path, "general.json", data)
    with pytest.raises(InputError) as err:
        detect_format(path)
    message = str(err.value)
    assert path in message
    assert "JSON lines whose first object has keys ID, user_query, chatgpt_response" in message
    for name in FORMATS:
        assert name in message
    assert "--seed-format" in message
    assert "\n" not in message


def test_unknown_array_error(tmp_path: Path) -> None:
    path = put(tmp_path, "alpaca.json", orjson.dumps([{"instruction": "i", "output": "o"}]))
    with pytest.raises(
        InputError, match="a JSON array whose first object has keys instruction, output"
    ):
        detect_format(path)


def test_many_keys_are_cut_short(tmp_path: Path) -> None:
    record = {f"k{i:02d}": i for i in range(30)}
    path = put(tmp_path, "wide.json", orjson.dumps([record]))
    with pytest.raises(InputError, match=r"k11, … \(18 more\)") as err:
        detect_format(path)
    assert "k12" not in str(err.value)


@pytest.mark.parametrize(
    ("data", "seen"),
    [
        (b",id,article\r\n0,1,text\r\n", "text starting with ',id,article'"),
        (b"[[1, 2], [3]]", "a JSON array whose first element is a list"),
        (b'["a", "b"]', "a JSON array whose first element is a string"),
        (b'{\n  "question": "q"\n}\n', "a first line that is not a whole JSON object"),
    ],
)
def test_what_was_seen(tmp_path: Path, data: bytes, seen: str) -> None:
    with pytest.raises(InputError, match="cannot tell the seed format") as err:
        detect_format(put(tmp_path, "x.json", data))
    assert seen in str(err.value)


def test_empty_file_and_empty_array(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"e\.json is empty$"):
        detect_format(put(tmp_path, "e.json", b""))
    with pytest.raises(InputError, match="holds an empty JSON array"):
        detect_format(put(tmp_path, "a.json", b" [ ] "))


def test_broken_first_record(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="invalid JSON in its first record"):
        detect_format(put(tmp_path, "b.json", b'[{"_id": "x", '))


def test_every_format_is_detectable_and_registered() -> None:
    names = [name for name, _, _ in SIGNATURES]
    assert sorted(names) == sorted(set(FORMATS) - {"table"})  # a table has no signature
