"""UTF-16, UTF-32 and UTF-8 with a byte-order mark are read like UTF-8, by every seed format
and query reader; encodings that cannot be read are refused by name; pipes and devices get a
message saying what they are."""

from __future__ import annotations

import csv
import gzip
import io
import os
from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError
from halugen.preselect.queries import read_queries
from halugen.records import BadRecord, Seed
from halugen.seeds import read_seeds
from halugen.seeds.encoding import detect_encoding
from tests.conftest import hotpot_record

DIALOG = [
    {"type": "chat", "sender": "user", "message": "Kennst du Zoë Ångström – «Café»?"},
    {
        "type": "action",
        "sender": "assistant",
        "action_id": "kgwalk/choose_path",
        "metadata": {"path": [1, [["Café", "written_by", "Zoë"]], "Café was written by Zoë"]},
    },
    {"type": "chat", "sender": "assistant", "message": "Ja, «Café» ist von Zoë 😀."},
]


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


# (format, task, file name, UTF-8 text): one small file of each seed format, non-ASCII inside
SEEDS = [
    (
        "hotpotqa",
        "qa",
        "hotpot.json",
        orjson.dumps(
            [{**hotpot_record(i), "question": f"Wo liegt Zürich {i}? – 😀"} for i in range(3)]
        ).decode(),
    ),
    (
        "halueval-qa",
        "qa",
        "qa_data.json",
        "".join(
            orjson.dumps(
                {"knowledge": f" Zoë {i}.", "question": "Wer? ", "right_answer": "Zoë\n"}
            ).decode()
            + "\r\n"
            for i in range(3)
        ),
    ),
    (
        "opendialkg",
        "dialogue",
        "dialogs.csv",
        _csv(
            [["Messages", "User Rating", "Assistant Rating"]]
            + [[orjson.dumps(DIALOG).decode(), "{}", "{}"]] * 2
        ),
    ),
    (
        "cnndm",
        "summarization",
        "cnn.csv",
        _csv(
            [["", "id", "article", "highlights"]]
            + [[str(i), f"a{i}", f"Zürich  {i}\nstraße.", "Ein Satz .\nZwei"] for i in range(3)]
        ),
    ),
    ("cnndm-story", "summarization", "x.story", "Zürich straße.\n\n@highlight\n\nEin Satz\n"),
]

ENCODINGS = [
    ("utf-8-sig", b""),
    ("utf-16", b""),  # Python writes its native order with a mark
    ("utf-16-le", b"\xff\xfe"),
    ("utf-16-be", b"\xfe\xff"),
    ("utf-16-le", b""),  # no mark: told by the zero bytes of ASCII characters
    ("utf-16-be", b""),
    ("utf-32", b""),
    ("utf-32-be", b""),
]


def fields(items: list[Seed | BadRecord]) -> list[tuple[object, ...]]:
    return [
        (x.seed_id.split(":")[-1], x.source_line, dict(x.fields))
        if isinstance(x, Seed)
        else ("bad", x.source_line, x.reason)
        for x in items
    ]


@pytest.mark.parametrize(("fmt", "task", "name", "text"), SEEDS)
@pytest.mark.parametrize(("codec", "mark"), ENCODINGS)
def test_every_seed_format_reads_every_unicode_encoding(
    tmp_path: Path, fmt: str, task: str, name: str, text: str, codec: str, mark: bytes
) -> None:
    plain = tmp_path / "utf8" / name
    plain.parent.mkdir()
    plain.write_bytes(text.encode())
    other = tmp_path / "other" / name
    other.parent.mkdir()
    other.write_bytes(mark + text.encode(codec))
    expected = fields(list(read_seeds([str(plain)], task)))
    assert expected and all(x[0] != "bad" for x in expected)
    assert fields(list(read_seeds([str(other)], task))) == expected  # format detected too
    assert fields(list(read_seeds([str(other)], task, fmt=fmt))) == expected


def test_gzip_of_utf16(tmp_path: Path) -> None:
    _, task, _, text = SEEDS[1]
    path = tmp_path / "qa.jsonl.gz"
    path.write_bytes(gzip.compress(text.encode("utf-16")))
    out = list(read_seeds([str(path)], task))
    assert [s.fields["knowledge"] for s in out if isinstance(s, Seed)] == [
        " Zoë 0.",
        " Zoë 1.",
        " Zoë 2.",
    ]


def test_broken_utf16_costs_only_its_record(tmp_path: Path) -> None:
    # A lone surrogate code unit in line 2 of a UTF-16 file: that line is a bad record.
    lines = [
        orjson.dumps({"knowledge": "k", "question": f"q{i}", "right_answer": "a"}) for i in range(3)
    ]
    data = b"\xff\xfe" + b"".join(
        line.decode().encode("utf-16-le") + "\n".encode("utf-16-le") for line in lines
    )
    broken = lines[1].decode().encode("utf-16-le").replace("q1".encode("utf-16-le"), b"\x00\xdc")
    data = data.replace(lines[1].decode().encode("utf-16-le"), broken)
    path = tmp_path / "qa.jsonl"
    path.write_bytes(data)
    out = list(read_seeds([str(path)], "qa"))
    assert [type(x) for x in out] == [Seed, BadRecord, Seed]
    assert out[1].source_line == 2


def test_utf16_json_array_with_a_cut_final_character(tmp_path: Path) -> None:
    text = orjson.dumps([hotpot_record(0), hotpot_record(1)]).decode()
    path = tmp_path / "hotpot.json"
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le") + b"\x00")  # one odd byte at the end
    out: list[object] = []
    with pytest.raises(InputError, match=r"bytes after the end of the JSON array near '.*\ufffd"):
        out.extend(read_seeds([str(path)], "qa"))
    assert len(out) == 2  # the records before the damage are read


@pytest.mark.parametrize(
    ("mark", "name"),
    [(b"+/v8", "UTF-7"), (b"\xdd\x73\x66\x73", "UTF-EBCDIC"), (b"\x0e\xfe\xff", "SCSU")],
)
def test_unreadable_encodings_are_refused_by_name(tmp_path: Path, mark: bytes, name: str) -> None:
    path = tmp_path / "seeds.json"
    path.write_bytes(mark + b"[{}]")
    with pytest.raises(InputError) as err:
        list(read_seeds([str(path)], "qa"))
    message = str(err.value)
    assert f"seeds.json is {name} text (by its byte-order mark)" in message
    assert "save it as UTF-8" in message and "\n" not in message


def test_detect_encoding_leaves_plain_files_alone() -> None:
    assert detect_encoding(b'[{"a') == ("utf-8", "UTF-8", 0)
    assert detect_encoding(b"ab") == ("utf-8", "UTF-8", 0)
    assert detect_encoding(b"\xef\xbb\xbf[") == ("utf-8", "UTF-8 with a byte-order mark", 3)
    assert detect_encoding(b"\xff\xfe\x00\x00")[0] == "utf-32-le"
    assert detect_encoding(b"\xff\xfe[\x00")[0] == "utf-16-le"


# -- the pre-selection query readers --------------------------------------------------------
QUERIES = [
    (
        "alpaca.json",
        orjson.dumps(
            [{"instruction": "Erkläre «Café» 😀", "input": "", "output": ""}] * 2
        ).decode(),
    ),
    ("q.jsonl", '{"query": "Erkläre «Café» 😀"}\n{"query": "Zweite – Frage"}\n'),
    ("q.csv", "query,id\r\nErkläre «Café» 😀,1\r\nZweite – Frage,2\r\n"),
]


@pytest.mark.parametrize(("name", "text"), QUERIES)
@pytest.mark.parametrize(("codec", "mark"), ENCODINGS)
def test_query_readers_read_every_unicode_encoding(
    tmp_path: Path, name: str, text: str, codec: str, mark: bytes
) -> None:
    plain = tmp_path / "a" / name
    plain.parent.mkdir()
    plain.write_bytes(text.encode())
    other = tmp_path / "b" / name
    other.parent.mkdir()
    other.write_bytes(mark + text.encode(codec))
    expected = [(q.text, q.source_line) for q in read_queries([str(plain)])]
    assert expected and "Erkläre «Café» 😀" in expected[0][0]
    assert [(q.text, q.source_line) for q in read_queries([str(other)])] == expected


# -- pipes and devices ----------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_named_as_such(tmp_path: Path) -> None:
    fifo = tmp_path / "seeds.json"
    os.mkfifo(fifo)
    for read in (lambda: read_seeds([str(fifo)], "qa"), lambda: list(read_queries([str(fifo)]))):
        with pytest.raises(InputError) as err:
            read()  # must not block waiting for a writer, nor say "not found"
        message = str(err.value)
        assert "is a named pipe (FIFO), not a regular file" in message
        assert "not found" not in message and "save the data to a file first" in message


def test_a_device_is_named_as_such() -> None:
    with pytest.raises(InputError, match="/dev/null is a character device, not a regular file"):
        read_seeds(["/dev/null"], "qa")
