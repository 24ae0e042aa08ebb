"""Query readers: Alpaca arrays, JSON lines and CSV with a field mapping; bad records; laziness."""

from __future__ import annotations

import gzip
import itertools
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from halugen.errors import InputError, UsageError
from halugen.preselect.queries import Query, detect_query_format, query_key, read_queries
from halugen.records import BadRecord


def put(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def alpaca(tmp_path: Path, records: list[Any], name: str = "alpaca.json") -> str:
    return put(tmp_path, name, orjson.dumps(records, option=orjson.OPT_INDENT_2))


def lines(tmp_path: Path, records: list[Any], name: str = "q.jsonl") -> str:
    return put(tmp_path, name, b"".join(orjson.dumps(r) + b"\n" for r in records))


def test_alpaca_instruction_and_input_are_joined_by_a_blank_line(tmp_path: Path) -> None:
    path = alpaca(
        tmp_path,
        [
            {"instruction": "Give three tips for staying healthy.", "input": "", "output": "..."},
            {
                "instruction": "  Rewrite in the passive voice.\r\n",
                "input": "The cat ate it.",
                "output": "It was eaten.",
            },
            {"instruction": "Sort these:", "input": "  b\n  a\n", "output": "a b"},
        ],
    )
    got = list(read_queries([path]))
    assert got == [
        Query(
            query_key("Give three tips for staying healthy."),
            "alpaca.json:1",
            "Give three tips for staying healthy.",
            path,
            1,
        ),
        Query(
            query_key("Rewrite in the passive voice.\n\nThe cat ate it."),
            "alpaca.json:2",
            "Rewrite in the passive voice.\n\nThe cat ate it.",
            path,
            2,
        ),
        # Inner line breaks and indentation of an input are kept; only the ends are trimmed.
        Query(
            query_key("Sort these:\n\nb\n  a"), "alpaca.json:3", "Sort these:\n\nb\n  a", path, 3
        ),
    ]


def test_empty_null_or_missing_input_leaves_the_instruction_alone(tmp_path: Path) -> None:
    path = alpaca(
        tmp_path,
        [
            {"instruction": "Name a colour.", "input": "   "},
            {"instruction": "Name a colour.", "input": None},
            {"instruction": "Name a colour."},
        ],
    )
    got = list(read_queries([path], fmt="alpaca"))
    assert [q.text for q in got] == ["Name a colour."] * 3
    # The key is the text's fingerprint: the same query has the same key wherever it is.
    assert len({q.key for q in got}) == 1
    assert got[0].key == query_key("Name a colour.")
    assert query_key("Name a colour.") != query_key("Name a color.")


def test_bad_alpaca_records_are_reported_with_their_index(tmp_path: Path) -> None:
    path = alpaca(
        tmp_path,
        [
            "just a string",
            {"input": "no instruction", "output": "x"},
            {"instruction": "   ", "input": "x"},
            {"instruction": 42},
            {"instruction": "Fine.", "input": ["not", "text"]},
            {"instruction": "Last one."},
        ],
    )
    got = list(read_queries([path]))
    assert got[:5] == [
        BadRecord(path, 1, "record is a string, not an object"),
        BadRecord(path, 2, "missing field instruction"),
        BadRecord(path, 3, "field instruction is empty"),
        BadRecord(path, 4, "field instruction is a number, not a string"),
        BadRecord(path, 5, "field input is a list, not a string"),
    ]
    assert isinstance(got[5], Query) and got[5].text == "Last one."
    assert got[5].source_line == 6


def test_a_broken_array_yields_what_came_before_then_fails(tmp_path: Path) -> None:
    path = put(tmp_path, "cut.json", b'[{"instruction": "One."}, {"instruction": "Tw')
    reader = read_queries([path])
    first = next(reader)
    assert isinstance(first, Query) and first.text == "One."
    with pytest.raises(InputError, match="after record 1"):
        next(reader)


def test_jsonl_with_default_and_mapped_fields(tmp_path: Path) -> None:
    plain = lines(
        tmp_path,
        [
            {"id": "q-1", "query": "What is the boiling point of water?"},
            {"ID": 7, "instruction": "Summarise:", "input": "A long text."},  # alpaca-like lines
            {"id": 3, "query": "Why is the sky blue?"},
        ],
    )
    got = list(read_queries([plain]))
    assert [(q.query_id, q.text, q.source_line) for q in got] == [
        ("q-1", "What is the boiling point of water?", 1),
        ("q.jsonl:2", "Summarise:\n\nA long text.", 2),
        ("3", "Why is the sky blue?", 3),
    ]
    mapped = lines(
        tmp_path,
        [
            {"ID": "u1", "user_query": "Who wrote Hamlet?", "ctx": "In one word."},
            {"ID": "u2", "user_query": "Who wrote Faust?"},
            {"user_query": "No id here."},
            {"ID": "u4", "user_query": "Fine", "ctx": 3},
        ],
        name="mapped.jsonl",
    )
    got = list(
        read_queries(
            [mapped], fmt="jsonl", query_field="user_query", input_field="ctx", id_field="ID"
        )
    )
    assert got[0] == Query(
        query_key("Who wrote Hamlet?\n\nIn one word."),
        "u1",
        "Who wrote Hamlet?\n\nIn one word.",
        mapped,
        1,
    )
    # A field named explicitly must be there; the default ones are optional.
    assert got[1] == BadRecord(mapped, 2, "missing field ctx")
    assert got[2] == BadRecord(mapped, 3, "missing field ctx")
    assert got[3] == BadRecord(mapped, 4, "field ctx is a number, not a string")
    got = list(read_queries([mapped], query_field="user_query", id_field="ID"))
    assert [r.query_id if isinstance(r, Query) else r.reason for r in got] == [
        "u1",
        "u2",
        "missing field ID",
        "u4",
    ]


def test_jsonl_bad_lines_do_not_end_the_file(tmp_path: Path) -> None:
    path = put(tmp_path, "q.jsonl", b'{"query": "A?"}\n{not json\n\n[1, 2]\n{"query": "B?"}\n')
    got = list(read_queries([path]))
    assert isinstance(got[0], Query) and got[0].text == "A?"
    assert isinstance(got[1], BadRecord) and got[1].source_line == 2
    assert got[1].reason.startswith("invalid JSON")
    assert got[2] == BadRecord(path, 4, "record is a list, not an object")
    assert isinstance(got[3], Query) and got[3].source_line == 5
    missing = lines(tmp_path, [{"question": "x"}], name="m.jsonl")
    assert list(read_queries([missing])) == [
        BadRecord(missing, 1, "missing field query or instruction")
    ]


def test_csv_with_default_and_mapped_columns(tmp_path: Path) -> None:
    path = put(
        tmp_path,
        "q.csv",
        (
            b"ID, Query ,Input,other\n"
            b'a1,"Write a haiku\nabout rain",,x\n'
            b"a2,Translate to French:,Good morning,y\n"
            b"a3,   ,,z\n"
            b"a4,too,many,cells,here\n"
        ),
    )
    got = list(read_queries([path]))
    assert got[0] == Query(
        query_key("Write a haiku\nabout rain"), "a1", "Write a haiku\nabout rain", path, 2
    )
    assert got[1] == Query(
        query_key("Translate to French:\n\nGood morning"),
        "a2",
        "Translate to French:\n\nGood morning",
        path,
        4,
    )
    assert got[2] == BadRecord(path, 5, "field query is empty")
    assert got[3] == BadRecord(path, 6, "row has 5 cells, the header has 4")
    assert len(got) == 4

    mapped = put(tmp_path, "m.csv", b"prompt,n\nHow far is the Moon?,1\nAnd the Sun?,2\n")
    got = list(read_queries([mapped], query_field="Prompt", id_field="n"))
    assert [(q.query_id, q.text) for q in got] == [
        ("1", "How far is the Moon?"),
        ("2", "And the Sun?"),
    ]
    # Without an id column the id is the file name and line.
    got = list(read_queries([mapped], query_field="prompt"))
    assert [q.query_id for q in got] == ["m.csv:2", "m.csv:3"]


def test_csv_header_problems_fail_at_once(tmp_path: Path) -> None:
    path = put(tmp_path, "q.csv", b"prompt,n\nHow far?,1\n")
    with pytest.raises(InputError, match=r"no 'query' or 'instruction' column.*'n', 'prompt'"):
        list(read_queries([path]))
    with pytest.raises(InputError, match=r"no 'ctx' column"):
        list(read_queries([path], query_field="prompt", input_field="ctx"))


def test_format_detection(tmp_path: Path) -> None:
    assert detect_query_format(alpaca(tmp_path, [{"instruction": "x"}])) == "alpaca"
    other_array = put(tmp_path, "o.json", orjson.dumps([{"query": "Is it?"}]))
    assert detect_query_format(other_array) == "jsonl"
    assert [q.text for q in read_queries([other_array])] == ["Is it?"]  # type: ignore[union-attr]
    assert detect_query_format(lines(tmp_path, [{"query": "x"}])) == "jsonl"
    assert detect_query_format(put(tmp_path, "x.txt", b"query\nx\n")) == "csv"
    # The name wins for CSV, even for a gzipped one.
    gz = put(tmp_path, "q.csv.gz", gzip.compress(b"query\nFrom a gzip file?\n"))
    assert detect_query_format(gz) == "csv"
    assert [q.text for q in read_queries([gz])] == ["From a gzip file?"]  # type: ignore[union-attr]
    with pytest.raises(InputError, match="is empty"):
        detect_query_format(put(tmp_path, "e.json", b"  \n"))


def test_paths_and_formats_are_checked_before_reading(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown query format 'tsv'"):
        read_queries([str(tmp_path / "x.json")], fmt="tsv")
    with pytest.raises(InputError, match="not found"):
        read_queries([str(tmp_path / "missing.json")])
    a = alpaca(tmp_path, [{"instruction": "First file."}], name="a.json")
    b = lines(tmp_path, [{"query": "Second file."}], name="b.jsonl")
    # Files are read in order; globs are expanded sorted; a lone string is one path.
    got = list(read_queries([a, str(tmp_path / "*.jsonl")]))
    assert [(q.text, q.source_file) for q in got] == [  # type: ignore[union-attr]
        ("First file.", a),
        ("Second file.", b),
    ]
    assert [q.text for q in read_queries(a)] == ["First file."]  # type: ignore[union-attr,arg-type]


def test_reading_is_lazy(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    filler = " ".join(["padding"] * 40)
    with path.open("wb") as f:
        f.write(b"[")
        for i in range(40_000):
            record = {"instruction": f"Query {i}.", "input": filler, "output": filler}
            f.write((b"," if i else b"") + orjson.dumps(record))
        f.write(b"]")
    assert path.stat().st_size > 15_000_000
    tracemalloc.start()
    try:
        got = list(itertools.islice(read_queries([str(path)]), 2))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [q.source_line for q in got] == [1, 2]  # type: ignore[union-attr]
    assert peak < 1_000_000, peak
