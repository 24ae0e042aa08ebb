"""One reader of HaluEval's files for eval and audit: the same records, ids and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halugen.audit.items import items_from_file
from halugen.errors import InputError
from halugen.evaluate.items import halueval_task, items_from_files, read_halueval
from tests.task_specs import task_spec


def _qa(path: Path) -> Path:
    lines = [
        {
            "knowledge": "The Serin flows through Vallona.",
            "question": "Which river?",
            "right_answer": "Serin\n",
            "hallucinated_answer": "the  Varnel",
        },
        {
            "ID": "q-2",
            "knowledge": "K.",
            "question": "Q?",
            "right_answer": "R",
            "hallucinated_answer": "H",
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + "\n")
    return path


def test_eval_and_audit_read_the_same_records(tmp_path: Path) -> None:
    path = _qa(tmp_path / "qa_data.json")
    records = list(read_halueval(str(path)))
    assert [(r.task, r.line_no, r.item_id) for r in records] == [
        ("qa", 1, "qa_data.json:1"),
        ("qa", 2, "q-2"),
    ]
    assert records[0].raw == path.read_bytes().splitlines()[0]  # the line, byte for byte
    audited = list(items_from_file(str(path)))
    judged = list(items_from_files([str(path)], task_spec("qa")))
    assert [i.item_id for i in audited] == [i.item_id for i in judged] == ["qa_data.json:1", "q-2"]
    # each side takes what it needs: the audit the texts as given, eval with spaces folded
    assert (audited[0].right, audited[0].hallucinated) == ("Serin\n", "the  Varnel")
    assert judged[0].fields["right_answer"] == "Serin"
    assert judged[0].fields["hallucinated_answer"] == "the Varnel"


def test_general_records_carry_their_label(tmp_path: Path) -> None:
    path = tmp_path / "general_data.json"
    rows = [
        {"ID": "7", "user_query": "q", "chatgpt_response": "r ", "hallucination": "Yes"},
        {"ID": "8", "user_query": "q2", "chatgpt_response": "r2", "hallucination": "no"},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    assert [r.label for r in read_halueval(str(path))] == [True, False]
    assert [i.human_label for i in items_from_files([str(path)], task_spec("general"))] == [
        True,
        False,
    ]
    assert [i.label for i in items_from_file(str(path))] == [True, False]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", r"x.json:1: not a JSON line"),
        ("[1]\n", r"x.json:1: a JSON line must be an object"),
        ('{"right_answer": "r"}\n', r"x.json:1: missing hallucinated_answer"),
        ("\n", r"x.json has no records"),
        (
            '{"user_query": "q", "chatgpt_response": "r", "hallucination": "maybe"}\n',
            r"x.json:1: hallucination must be yes or no",
        ),
    ],
)
def test_a_bad_file_gives_the_same_error_to_both(tmp_path: Path, content: str, message: str):
    path = tmp_path / "x.json"
    path.write_text(content)
    task = "general" if "user_query" in content else "qa"
    with pytest.raises(InputError, match=message):
        list(items_from_file(str(path), task_spec(task)))
    with pytest.raises(InputError, match=message):
        list(items_from_files([str(path)], task_spec(task)))


def test_the_task_is_told_by_the_fields() -> None:
    assert halueval_task({"right_response": "", "hallucinated_response": ""}) == "dialogue"
    assert halueval_task({"document": "", "right_summary": "", "x": 1}) == "summarization"
    assert halueval_task({"chatgpt_response": "", "user_query": "", "hallucination": ""}) == (
        "general"
    )
    assert halueval_task({"question": "q"}) is None


def test_cr_only_line_endings_are_lines(tmp_path) -> None:
    import orjson

    from halugen.evaluate.items import read_halueval

    path = tmp_path / "qa_data.json"
    records = [
        {"knowledge": f"k{i}", "question": f"q{i}", "right_answer": f"r{i}",
         "hallucinated_answer": f"h{i}"}
        for i in range(6)
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(r) + b"\r" for r in records))
    assert len(list(read_halueval(str(path), task_spec("qa")))) == 6
