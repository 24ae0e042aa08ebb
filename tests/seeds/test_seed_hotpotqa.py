"""The HotpotQA reader: knowledge from supporting facts, bad records, broken arrays."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError
from halugen.records import BadRecord, Seed
from halugen.seeds.hotpotqa import hotpotqa_fields, read_hotpotqa


def record(_id: str = "q1", **changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "_id": _id,
        "answer": "Lisbon",
        "question": "Where was the writer of the poem born?",
        "supporting_facts": [["Poem", 1], ["Writer", 0]],
        "context": [
            ["Writer", ["The writer was born in Lisbon.", " She moved to Porto later."]],
            ["Poem", ["The Poem is short.", " It was written by the writer."]],
        ],
        "type": "bridge",
        "level": "easy",
    }
    base.update(changes)
    return base


def write_array(tmp_path: Path, records: list[object], name: str = "hotpot.json") -> str:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(records))
    return str(path)


def test_knowledge_is_supporting_sentences_in_fact_order(tmp_path: Path) -> None:
    path = write_array(tmp_path, [record()])
    [seed] = list(read_hotpotqa(path))
    assert isinstance(seed, Seed)
    assert seed.task == "qa"
    assert seed.dataset == "hotpotqa"
    assert seed.seed_id == "q1"
    assert seed.source_file == path
    assert seed.source_line == 1
    assert dict(seed.fields) == {
        "knowledge": "It was written by the writer. The writer was born in Lisbon.",
        "question": "Where was the writer of the poem born?",
        "right_answer": "Lisbon",
    }


def test_sentences_without_spaces_are_never_glued() -> None:
    rec = record(
        supporting_facts=[["A", 0], ["A", 1], ["B", 0]],
        context=[["A", ["First one.", "Second one."]], ["B", ["  Third\n\tone.  "]]],
    )
    # joined on one space; each sentence as written inside
    assert hotpotqa_fields(rec)["knowledge"] == "First one. Second one. Third\n\tone."


def test_question_and_answer_are_kept_as_written() -> None:
    rec = record(question="  Where  was\nthe writer\tborn? ", answer=" Lisbon\n")
    fields = hotpotqa_fields(rec)
    assert fields["question"] == "  Where  was\nthe writer\tborn? "
    assert fields["right_answer"] == " Lisbon\n"


def test_missing_supporting_sentences_are_skipped() -> None:
    rec = record(
        supporting_facts=[
            ["Writer", 5],  # index past the paragraph
            ["Nowhere", 0],  # title not in context
            ["Writer", -1],  # must not wrap around to the last sentence
            ["Writer", 0],
            ["Writer", 0],  # repeated fact, sentence used once
            ["Poem"],  # malformed pair
            ["Poem", "1"],  # index is not a number
        ]
    )
    assert hotpotqa_fields(rec)["knowledge"] == "The writer was born in Lisbon."


def test_hugging_face_shape_is_read() -> None:
    rec = {
        "id": "hf1",
        "question": "Q?",
        "answer": "no",
        "supporting_facts": {"title": ["B", "A"], "sent_id": [0, 1]},
        "context": {"title": ["A", "B"], "sentences": [["a0.", " a1."], ["b0."]]},
    }
    assert hotpotqa_fields(rec) == {"knowledge": "b0. a1.", "question": "Q?", "right_answer": "no"}


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        (record(supporting_facts=[["Nowhere", 0]]), "no supporting-fact sentences in context"),
        (record(supporting_facts=[]), "no supporting-fact sentences in context"),
        (
            record(context=[["Writer", ["   "]]], supporting_facts=[["Writer", 0]]),
            "no supporting-fact sentences in context",
        ),
        ({k: v for k, v in record().items() if k != "question"}, "missing field question"),
        (record(answer="   "), "field answer is empty"),
        (record(answer=7), "field answer is a number, not a string"),
        (record(question=None), "field question is null, not a string"),
        ({k: v for k, v in record().items() if k != "context"}, "missing field context"),
        (record(supporting_facts="Writer"), "field supporting_facts is a string, not a list"),
        (["not", "an", "object"], "record is a list, not an object"),
        ("text", "record is a string, not an object"),
    ],
)
def test_bad_records_carry_reason_and_reading_goes_on(
    tmp_path: Path, item: object, reason: str
) -> None:
    path = write_array(tmp_path, [record("a"), item, record("c")])
    out = list(read_hotpotqa(path))
    assert [type(x) for x in out] == [Seed, BadRecord, Seed]
    assert out[1] == BadRecord(path, 2, reason)
    assert [x.source_line for x in out if isinstance(x, Seed)] == [1, 3]


def test_yes_no_answers_are_fine() -> None:
    assert hotpotqa_fields(record(answer="yes"))["right_answer"] == "yes"


def test_seed_id_falls_back_to_file_and_position(tmp_path: Path) -> None:
    rec = {k: v for k, v in record().items() if k != "_id"}
    path = write_array(tmp_path, [record("x"), rec])
    assert [s.seed_id for s in read_hotpotqa(path)] == ["x", "hotpot.json:2"]


def test_truncated_array_yields_earlier_records_then_fails(tmp_path: Path) -> None:
    whole = orjson.dumps([record("a"), record("b"), record("c")])
    cut = whole[: whole.index(b'"_id":"c"') + 12]  # inside the third record
    path = tmp_path / "cut.json"
    path.write_bytes(cut)
    seen: list[str] = []
    with pytest.raises(InputError) as err:
        for seed in read_hotpotqa(str(path)):
            assert isinstance(seed, Seed)
            seen.append(seed.seed_id)
    assert seen == ["a", "b"]
    message = str(err.value)
    assert message.startswith(f"{path}: the JSON array is cut short: the file ends (after ")
    assert f"after {len(cut)} bytes) before the array closes, after record 2" in message
    assert message.endswith("the 2 record(s) before it were read")
    assert "\n" not in message


def test_garbage_after_array_fails_after_all_records(tmp_path: Path) -> None:
    path = tmp_path / "tail.json"
    path.write_bytes(orjson.dumps([record("a")]) + b" oops")
    gen = read_hotpotqa(str(path))
    assert next(gen).seed_id == "a"
    with pytest.raises(InputError) as err:
        next(gen)
    message = str(err.value)
    assert message.startswith(f"{path}: bytes after the end of the JSON array near '")
    assert "oops" in message and "its 1 record(s) were read" in message


@pytest.mark.parametrize("content", [b"", b"  \n\r\n ", b"\xef\xbb\xbf"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"empty\.json is empty$"):
        list(read_hotpotqa(str(path)))


def test_json_lines_of_hotpotqa_records_are_read(tmp_path: Path) -> None:
    path = tmp_path / "hotpot.jsonl"
    path.write_bytes(orjson.dumps(record("a")) + b"\n" + orjson.dumps(record("b")) + b"\n")
    assert [(s.seed_id, s.source_line) for s in read_hotpotqa(str(path))] == [("a", 1), ("b", 2)]


def test_bom_and_gzip(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + orjson.dumps([record("a"), record("b")])
    plain = tmp_path / "bom.json"
    plain.write_bytes(data)
    packed = tmp_path / "bom.json.gz"
    packed.write_bytes(gzip.compress(data))
    for path in (plain, packed):
        seeds = list(read_hotpotqa(str(path)))
        assert [s.seed_id for s in seeds] == ["a", "b"]


def test_file_that_is_not_gzip_despite_its_name(tmp_path: Path) -> None:
    path = tmp_path / "fake.json.gz"
    path.write_bytes(orjson.dumps([record()]))
    with pytest.raises(InputError, match=r"fake\.json\.gz"):
        list(read_hotpotqa(str(path)))
