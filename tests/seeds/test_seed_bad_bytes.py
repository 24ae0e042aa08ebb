"""A record of a JSON array with bytes no parser takes costs only itself; the array reads on."""

from __future__ import annotations

import io
import itertools
import random
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError
from halugen.records import BadRecord, Seed
from halugen.seeds import read_seeds
from halugen.seeds.badbytes import MarkedBytes, find_mark
from halugen.seeds.hotpotqa import read_hotpotqa
from halugen.seeds.jsonl import IJSON
from tests.conftest import hotpot_record
from tests.seeds.test_seed_laziness import peak_while

NOT_UTF8 = "holds bytes that are not UTF-8 (or an escaped lone surrogate)"
CONTROL = "holds a NUL byte or another raw control character (invalid in JSON)"


class Chunked(io.BytesIO):
    """Bytes handed out in chunks of the given sizes, whatever size is asked for."""

    def __init__(self, data: bytes, sizes: Iterator[int]) -> None:
        super().__init__(data)
        self._sizes = sizes

    def read(self, size: int | None = -1) -> bytes:
        return super().read(next(self._sizes))


def array(records: list[bytes]) -> bytes:
    return b"[" + b",\n".join(records) + b"]"


def good(i: int) -> bytes:
    return orjson.dumps(hotpot_record(i))


def with_question(i: int, raw: bytes) -> bytes:
    """Record ``i`` whose question's JSON text is ``raw`` (bytes put in as they are)."""
    rec = good(i)
    marker = orjson.dumps(hotpot_record(i)["question"])
    assert rec.count(marker) == 1
    return rec.replace(marker, b'"' + raw + b'"')


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"Where was Caf\xe9 born?", NOT_UTF8),  # Latin-1 byte
        (b"Where\xc3 was it?", NOT_UTF8),  # a cut two-byte sequence
        (b"Where \xed\xa0\x80 was it?", NOT_UTF8),  # an encoded surrogate (CESU-8)
        (b"Where was it\x00?", CONTROL),
        (b"\x00\x00\x00\x00", CONTROL),  # a zeroed block inside a string
        (b"Where\x07 was it?", CONTROL),
        (b"Where \\udc80 was it?", NOT_UTF8),  # an escaped lone low surrogate
        (b"Where \\uD83D was it?", NOT_UTF8),  # an escaped lone high surrogate
    ],
)
def test_a_bad_record_is_skipped_and_the_rest_read(tmp_path: Path, raw: bytes, reason: str) -> None:
    path = tmp_path / "hotpot.json"
    path.write_bytes(array([good(0), with_question(1, raw), good(2), good(3)]))
    out = list(read_hotpotqa(str(path)))
    assert [type(x) for x in out] == [Seed, BadRecord, Seed, Seed]
    assert out[1] == BadRecord(str(path), 2, reason)
    assert [s.seed_id for s in out if isinstance(s, Seed)] == ["rec00000", "rec00002", "rec00003"]


def test_several_bad_records_and_the_engine_facing_reader(tmp_path: Path) -> None:
    path = tmp_path / "hotpot.json"
    records = [good(i) for i in range(10)]
    records[0] = with_question(0, b"\xff first")  # the first record too: detection still works
    records[4] = with_question(4, b"nul\x00")
    records[9] = with_question(9, b"last \xfe")
    path.write_bytes(array(records))
    out = list(read_seeds([str(path)], "qa"))
    assert [x.source_line for x in out if isinstance(x, BadRecord)] == [1, 5, 10]
    assert len([x for x in out if isinstance(x, Seed)]) == 7


def test_valid_text_is_untouched(tmp_path: Path) -> None:
    # Emoji as a surrogate pair escape, an escaped backslash before "udc80", \u0001, non-ASCII.
    texts = ["a 😀 b", "\\udc80 is text here", "tab\tand\x01escaped", "Café – Zoë"]
    records = [{**hotpot_record(i), "question": t} for i, t in enumerate(texts)]
    raw = array([orjson.dumps(r) for r in records]).replace("😀".encode(), b"\\ud83d\\ude00")
    path = tmp_path / "ok.json"
    path.write_bytes(raw)
    out = list(read_hotpotqa(str(path)))
    assert [s.fields["question"] for s in out if isinstance(s, Seed)] == texts


@pytest.mark.parametrize("split", range(1, 14))
def test_escapes_split_across_chunks(split: int) -> None:
    # A surrogate pair (valid) and a lone surrogate (marked) cut at every position.
    for text, marked in ((b'"x\\ud83d\\ude00y"', 0), (b'"x\\udc80y"', 1), (b'"x\\\\udc80y"', 0)):
        data = b"[" + text + b"]"

        stream = MarkedBytes(Chunked(data, itertools.repeat(split)))  # type: ignore[arg-type]
        items = list(IJSON.items(stream, "item"))
        assert stream.marked == marked, (text, split)
        assert (find_mark(items[0]) is not None) == bool(marked)


def test_valid_json_through_random_chunks_is_read_unchanged() -> None:
    # Strings of escapes, backslashes, pairs and multi-byte text, cut into random chunk sizes.
    rng = random.Random(7)
    pieces = ["\\\\", "\\ud83d\\ude00", "\\u00e9", "\\n", "é", "😀", "a", "udc80", '\\"', "\\u005c"]
    for _ in range(300):
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        data = ('["' + body + '", "' + body + 'x"]').encode()
        expected = orjson.loads(data)
        sizes = itertools.cycle([rng.randint(1, 20) for _ in range(8)])
        stream = MarkedBytes(Chunked(data, sizes))  # type: ignore[arg-type]
        assert list(IJSON.items(stream, "item")) == expected, data
        assert stream.marked == 0, data


def test_a_multibyte_character_cut_by_a_chunk_is_not_marked() -> None:
    data = b'["' + "é€😀".encode() * 30_000 + b'"]'
    stream = MarkedBytes(io.BytesIO(data))
    [value] = list(IJSON.items(stream, "item"))
    assert stream.marked == 0 and value == "é€😀" * 30_000


def test_broken_structure_still_ends_the_array_after_the_records_before(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes(array([good(0), good(1)])[:-40])
    out: list[object] = []
    with pytest.raises(InputError, match=r"cut short: .* after record 1; the 1 record\(s\) befo"):
        out.extend(read_hotpotqa(str(path)))
    assert len(out) == 1


def test_memory_stays_flat_with_bad_records(tmp_path: Path) -> None:
    # Bad bytes every 50 records: the reader marks them chunk by chunk, never the whole file.
    path = tmp_path / "big.json"
    with path.open("wb") as f:
        f.write(b"[")
        for i in range(20_000):
            rec = with_question(i, b"bad \xff byte") if i % 50 == 7 else good(i)
            f.write((b"," if i else b"") + rec)
        f.write(b"]")
    assert path.stat().st_size > 9_000_000

    def count() -> tuple[int, int]:
        seeds = bad = 0
        for item in read_seeds([str(path)], "qa"):
            if isinstance(item, BadRecord):
                bad += 1
            else:
                seeds += 1
        return seeds, bad

    (seeds, bad), peak = peak_while(count)
    assert (seeds, bad) == (19_600, 400)
    assert peak < 2_000_000, peak
    got = list(itertools.islice(read_seeds([str(path)], "qa"), 1))
    assert isinstance(got[0], Seed)
