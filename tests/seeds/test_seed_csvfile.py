"""The shared CSV row reader: line numbers of multi-line rows, bad rows, header problems."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from halugen.errors import InputError
from halugen.records import BadRecord
from halugen.seeds.csvfile import FIELD_LIMIT, header_columns, iter_csv


def put(tmp_path: Path, data: bytes, name: str = "t.csv") -> str:
    file = tmp_path / name
    file.write_bytes(data)
    return str(file)


def test_rows_are_numbered_by_the_line_they_start_on(tmp_path: Path) -> None:
    data = b'id,text\n1,"one\ntwo\nthree"\n\n2,plain\n3,"a ""quoted"" word"\n'
    file = put(tmp_path, data)
    assert list(iter_csv(file, required=("text",), optional=("id",))) == [
        (2, {"id": "1", "text": "one\ntwo\nthree"}),
        (6, {"id": "2", "text": "plain"}),  # the blank line 5 is skipped, but counted
        (7, {"id": "3", "text": 'a "quoted" word'}),
    ]


def test_columns_match_trimmed_and_case_blind_and_extra_columns_are_left_out(
    tmp_path: Path,
) -> None:
    file = put(tmp_path, b",  ID ,Text,other\n0,a,b,c\n")
    assert list(iter_csv(file, required=("text",), optional=("id", "missing"))) == [
        (2, {"text": "b", "id": "a"})
    ]


def test_bad_rows_do_not_end_the_file(tmp_path: Path) -> None:
    data = b'id,text\n1,ok\n2,"bad"quote\n3,fine\n4\n5,"\xff\xfe"\n6,last\n'
    file = put(tmp_path, data)
    out = list(iter_csv(file, required=("id", "text")))
    assert [line for line, _ in out] == [2, 3, 4, 5, 6, 7]
    assert out[0][1] == {"id": "1", "text": "ok"}
    bad = out[1][1]
    assert isinstance(bad, BadRecord) and bad.source_line == 3
    assert bad.reason.startswith("invalid CSV (") and bad.reason.endswith("; line 3)")
    assert out[2][1] == {"id": "3", "text": "fine"}
    assert out[3][1] == BadRecord(file, 5, "row has 1 cells, the header has 2")
    assert out[4][1] == BadRecord(file, 6, "row holds bytes that are not UTF-8")
    assert out[5][1] == {"id": "6", "text": "last"}


def test_unclosed_quote_says_so(tmp_path: Path) -> None:
    file = put(tmp_path, b'id,text\n1,ok\n2,"never closed\n3,x\n4,y\n')
    out = list(iter_csv(file, required=("text",)))
    assert out[0] == (2, {"text": "ok"})
    line, bad = out[1]
    assert line == 3 and isinstance(bad, BadRecord)
    assert "a quoted cell never closes" in bad.reason
    assert bad.reason.endswith("lines 3-5)")
    assert len(out) == 2


def test_missing_required_column(tmp_path: Path) -> None:
    file = put(tmp_path, b",id,article\n0,1,x\n")
    with pytest.raises(
        InputError,
        match=r"t\.csv: its CSV header has no 'highlights' column "
        r"\(its columns: '', 'id', 'article'\)",
    ):
        list(iter_csv(file, required=("article", "highlights")))


def test_empty_and_header_only(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"e\.csv is empty$"):
        list(iter_csv(put(tmp_path, b"", "e.csv"), required=("a",)))
    with pytest.raises(InputError, match=r"h\.csv holds a CSV header but no rows"):
        list(iter_csv(put(tmp_path, b"a,b\r\n\r\n", "h.csv"), required=("a",)))


def test_field_limit_is_raised_and_never_lowered(tmp_path: Path) -> None:
    file = put(tmp_path, b"a\n" + b"x" * 300_000 + b"\n")
    [(_, row)] = list(iter_csv(file, required=("a",)))
    assert isinstance(row, dict) and len(row["a"]) == 300_000
    assert csv.field_size_limit() >= FIELD_LIMIT


def test_header_columns() -> None:
    assert header_columns("Messages,User Rating,Assistant Rating") == [
        "messages",
        "user rating",
        "assistant rating",
    ]
    assert header_columns(',id,"article",highlights') == ["", "id", "article", "highlights"]
    assert header_columns("") == []


def test_cut_gzip_reads_the_rows_before_the_cut_then_fails(tmp_path: Path) -> None:
    data = gzip.compress(b"a\n" + b"".join(b"row%d\n" % i for i in range(200_000)))
    file = put(tmp_path, data[: len(data) // 2], "cut.csv.gz")
    seen = 0
    with pytest.raises(InputError, match=r"cut\.csv\.gz: cannot read past line \d+ .*were read"):
        for _, row in iter_csv(file, required=("a",)):
            assert isinstance(row, dict)
            seen += 1
    assert seen > 1000
