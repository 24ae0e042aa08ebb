"""Bad input costs only itself: records nested too deep or holding too long a text are
refused before a parser builds them, every line ending is one, an empty table is refused."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import orjson
import pytest

from halugen.cli import main
from halugen.errors import InputError
from halugen.records import BadRecord, Seed
from halugen.seeds import csvfile, jsonl, limits, read_seeds
from halugen.seeds.limits import MAX_DEPTH, split_lines


def _qa(i: int, **over: object) -> dict[str, object]:
    record: dict[str, object] = {
        "knowledge": f"The Serin{i} flows through Vallona{i}.",
        "question": f"Which river flows through Vallona{i}?",
        "right_answer": f"Serin{i}",
        "hallucinated_answer": f"Varnel{i}",
    }
    record.update(over)
    return record


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _array(path: Path, *records: bytes) -> Path:
    path.write_bytes(b"[" + b",\n".join(records) + b"]")
    return path


def test_a_record_nested_thousands_deep_is_refused_by_name_in_flat_memory(
    tmp_path: Path,
) -> None:
    deep = b'{"knowledge": ' + _deep(5_000) + b', "question": "q", "right_answer": "r"}'
    path = _array(tmp_path / "qa.json", orjson.dumps(_qa(1)), deep, orjson.dumps(_qa(3)))
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as info:
            list(read_seeds([str(path)], "qa"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert f"record 2 is nested deeper than {MAX_DEPTH}" in message, message
    assert "the 1 record(s) before it were read" in message and "\n" not in message
    assert peak < 32 * 2**20  # ijson's paths of 5,000 levels would take hundreds of MB


def test_a_first_record_too_deep_is_refused_while_the_format_is_told(tmp_path: Path) -> None:
    deep = b'{"knowledge": ' + _deep(5_000) + b', "question": "q", "right_answer": "r"}'
    path = _array(tmp_path / "qa.json", deep)
    with pytest.raises(InputError, match="record 1 is nested deeper"):
        list(read_seeds([str(path)], "qa"))


def test_records_within_the_limit_are_read_however_they_nest(tmp_path: Path) -> None:
    nested = orjson.dumps(_qa(2, extra=orjson.loads(_deep(MAX_DEPTH - 2))))
    tricky = orjson.dumps(_qa(3, knowledge='brackets in text: [[[{{{ "\\" ]]'))
    path = _array(tmp_path / "qa.json", orjson.dumps(_qa(1)), nested, tricky)
    seeds = list(read_seeds([str(path)], "qa"))
    assert [type(s) for s in seeds] == [Seed, Seed, Seed]


def test_a_text_over_the_limit_ends_an_array_at_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_TEXT_BYTES", 1_000)
    long = orjson.dumps(_qa(2, knowledge="x" * 5_000))
    path = _array(tmp_path / "qa.json", orjson.dumps(_qa(1)), long)
    with pytest.raises(InputError, match="record 2 holds a text longer than halugen reads"):
        list(read_seeds([str(path)], "qa"))


def test_escapes_cut_by_the_guards_chunks_are_read_right() -> None:
    import io

    records = [{"a": 'x\\"y['}, {"b": "c\\\\"}, {"k": ["]", "\\u005b", "{{"]}, {"e": "}"}]
    text = b"[" + b",".join(orjson.dumps(r) for r in records) + b"]"
    for size in (1, 2, 3, 5, 64):  # every chunk boundary, escapes cut in two included
        guard = limits.NestingGuard(io.BytesIO(text))
        got = b""
        while piece := guard.read(size):
            got += piece
        assert got == text and guard.problem is None, size
    deeper = b'[{"a": "[[["}, {"b": ' + _deep(MAX_DEPTH + 5) + b"}]"
    for size in (1, 7, 64):
        guard = limits.NestingGuard(io.BytesIO(deeper))
        got = b""
        while piece := guard.read(size):
            got += piece
        assert guard.problem is not None  # the record itself and 63 arrays are all it may hold
        assert got == deeper[: deeper.index(b"[" * (MAX_DEPTH + 1)) + MAX_DEPTH - 1]


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"], ids=["cr", "crlf", "lf"])
def test_every_line_ending_ends_a_json_line(tmp_path: Path, ending: bytes) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_bytes(b"".join(orjson.dumps(_qa(i)) + ending for i in range(6)))
    seeds = list(read_seeds([str(path)], "qa"))
    assert [s.seed_id for s in seeds if isinstance(s, Seed)] == [
        f"qa.jsonl:{i}" for i in range(1, 7)
    ]


def test_mixed_endings_keep_their_line_numbers() -> None:
    import io

    lines = list(split_lines(io.BytesIO(b"a\r\nb\rc\n\rd")))
    assert lines == [(1, b"a"), (2, b"b"), (3, b"c"), (4, b""), (5, b"d")]


def test_a_line_over_the_limit_costs_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", 2_000)
    monkeypatch.setattr(limits, "_CHUNK", 256)  # the long line spans many reads
    path = tmp_path / "qa.jsonl"
    lines = [
        orjson.dumps(_qa(1)),
        orjson.dumps(_qa(2, knowledge="x" * 10_000)),
        orjson.dumps(_qa(3)),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    got = list(jsonl.iter_lines(str(path)))
    assert [n for n, _ in got] == [1, 2, 3]
    assert isinstance(got[1][1], BadRecord) and "longer than" in got[1][1].reason
    assert got[0][1]["question"] == "Which river flows through Vallona1?"


def test_a_field_over_the_text_limit_is_a_bad_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_TEXT_BYTES", 1_000)
    path = tmp_path / "qa.jsonl"
    path.write_bytes(orjson.dumps(_qa(1)) + b"\n" + orjson.dumps(_qa(2, knowledge="y" * 5_000)))
    seeds = list(read_seeds([str(path)], "qa"))
    assert isinstance(seeds[0], Seed) and isinstance(seeds[1], BadRecord)
    assert "field knowledge is longer than halugen reads" in seeds[1].reason


def test_a_csv_cell_over_the_text_limit_is_a_bad_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"question,answer\nq1,a1\nq2,{'z' * 5_000}\n")
    monkeypatch.setattr(csvfile, "FIELD_LIMIT", 1_000)
    try:
        rows = list(csvfile.iter_csv(str(path), required=("question", "answer")))
    finally:
        monkeypatch.undo()
        list(csvfile.iter_csv(str(path), required=("question",)))  # the limit back
    assert rows[0] == (2, {"question": "q1", "answer": "a1"})
    assert isinstance(rows[1][1], BadRecord) and "field limit" in rows[1][1].reason


def _empty_parquet(path: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    columns = ("knowledge", "question", "right_answer", "hallucinated_answer")
    pq.write_table(pa.table({c: pa.array([], type=pa.string()) for c in columns}), path)
    return path


def test_an_empty_parquet_file_is_refused(tmp_path: Path) -> None:
    path = _empty_parquet(tmp_path / "qa.parquet")
    with pytest.raises(InputError, match="holds no rows"):
        list(read_seeds([str(path)], "qa"))


def test_an_empty_table_file_exits_2_as_an_empty_json_file_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty_json = tmp_path / "qa.json"
    empty_json.write_bytes(b"[]")
    codes = []
    for path in (empty_json, _empty_parquet(tmp_path / "qa.parquet")):
        db = str(tmp_path / f"{path.suffix}.duckdb")
        args = ["run", "--seeds", str(path), "--base-url", "http://127.0.0.1:9/v1",
                "--api-key", "k", "--model", "m", "--db", db, "--no-progress"]  # fmt: skip
        codes.append(main(args))
    err = capsys.readouterr().err
    assert codes == [2, 2], err
    assert "holds no rows" in err


def test_a_json_line_nested_too_deep_costs_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    deep = b'{"knowledge": ' + _deep(500) + b', "question": "q", "right_answer": "r"}'
    path.write_bytes(orjson.dumps(_qa(1)) + b"\n" + deep + b"\n" + orjson.dumps(_qa(3)) + b"\n")
    got = list(jsonl.iter_lines(str(path)))
    assert [n for n, _ in got] == [1, 2, 3]
    assert isinstance(got[1][1], BadRecord)
    assert f"nested deeper than {MAX_DEPTH}" in got[1][1].reason
    assert not isinstance(got[2][1], BadRecord)
