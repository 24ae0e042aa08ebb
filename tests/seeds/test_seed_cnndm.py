"""The CNN/DailyMail readers: CSV (with an index column and multi-line articles), JSON lines,
.story files one seed each, summaries made of sentences."""

from __future__ import annotations

import csv
from pathlib import Path

import orjson
import pytest

from halugen.errors import InputError
from halugen.records import BadRecord, Seed
from halugen.seeds import read_seeds
from halugen.seeds.cnndm import as_sentence, read_cnndm, read_cnndm_story, story_fields

ARTICLE = "(NEWS) -- The  harbour of Sollen\nreopened on Monday.\n\nShips queued   all day."
HIGHLIGHTS = (
    "Harbour of Sollen reopened on Monday .\nShips queued all day\nWho paid? Nobody knows ."
)


def write_csv(tmp_path: Path, rows: list[list[str]], name: str = "cnn.csv") -> str:
    file = tmp_path / name
    with file.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["", "id", "article", "highlights"])  # pandas' unnamed index column
        for i, row in enumerate(rows):
            writer.writerow([str(i), *row])
    return str(file)


def test_csv_with_index_column_and_multi_line_article(tmp_path: Path) -> None:
    file = write_csv(
        tmp_path,
        [
            ["a1", ARTICLE, HIGHLIGHTS],  # article spans lines 2-5, highlights 5-7
            ["a2", "  ", "x"],
            ["a3", "Short one.", "Done"],
        ],
    )
    out = list(read_cnndm(file))
    assert [type(x) for x in out] == [Seed, BadRecord, Seed]
    first, bad, last = out
    assert isinstance(first, Seed) and isinstance(last, Seed)
    assert dict(first.fields) == {
        "document": ARTICLE,  # as given, line breaks and double spaces included
        "right_summary": "Harbour of Sollen reopened on Monday. Ships queued all day. "
        "Who paid? Nobody knows.",
    }
    assert (first.seed_id, first.source_line, first.task, first.dataset) == (
        "a1",
        2,
        "summarization",
        "cnndm",
    )
    assert bad == BadRecord(file, 8, "field article is empty")
    assert (last.seed_id, last.source_line, last.fields["right_summary"]) == ("a3", 9, "Done.")


def test_csv_without_id_falls_back_to_file_and_line(tmp_path: Path) -> None:
    file = tmp_path / "noid.csv"
    file.write_text('article,highlights\n"Body text.","One\nTwo"\n', encoding="utf-8")
    [seed] = list(read_cnndm(str(file)))
    assert isinstance(seed, Seed)
    assert seed.seed_id == "noid.csv:2"
    assert seed.fields["right_summary"] == "One. Two."


def test_csv_with_empty_highlights(tmp_path: Path) -> None:
    file = write_csv(tmp_path, [["a1", "Body.", " \n \n"]])
    assert list(read_cnndm(file)) == [BadRecord(file, 2, "field highlights is empty")]


def test_json_lines_with_the_same_keys(tmp_path: Path) -> None:
    lines = [
        orjson.dumps({"id": "j1", "article": ARTICLE, "highlights": HIGHLIGHTS}),
        b'{"id": "broken',
        orjson.dumps({"id": 7, "article": "Body.", "highlights": ["First", "Second!"]}),
        orjson.dumps({"article": "Body."}),
        orjson.dumps({"id": "j5", "article": "Body.", "highlights": 3}),
        orjson.dumps({"article": "Body.", "highlights": "Only"}),
    ]
    file = tmp_path / "cnn.jsonl"
    file.write_bytes(b"\n".join(lines) + b"\n")
    out = list(read_cnndm(str(file)))
    assert isinstance(out[0], Seed) and out[0].seed_id == "j1"
    assert out[0].fields["document"] == ARTICLE
    assert isinstance(out[1], BadRecord) and out[1].reason.startswith("invalid JSON (")
    assert isinstance(out[2], Seed)
    assert (out[2].seed_id, out[2].fields["right_summary"]) == ("7", "First. Second!")
    assert out[3] == BadRecord(str(file), 4, "missing field highlights")
    assert out[4] == BadRecord(
        str(file), 5, "field highlights is a number, not a string or a list of strings"
    )
    assert isinstance(out[5], Seed) and out[5].seed_id == "cnn.jsonl:6"


@pytest.mark.parametrize("name", ["cnn.csv", "cnn.jsonl"])
@pytest.mark.parametrize("content", [b"", b"  \n", b"\xef\xbb\xbf"])
def test_empty_file(tmp_path: Path, name: str, content: bytes) -> None:
    file = tmp_path / name
    file.write_bytes(content)
    with pytest.raises(InputError, match=rf"{name.replace('.', '[.]')} is empty$"):
        list(read_cnndm(str(file)))


STORY = """(NEWS) -- The harbour of Sollen reopened on Monday.

Ships queued all day.

@highlight

Harbour of Sollen reopened on Monday

@highlight

Ships queued all day
"""


def test_story_file(tmp_path: Path) -> None:
    file = tmp_path / "0a1b2c.story"
    file.write_text(STORY, encoding="utf-8")
    [seed] = list(read_cnndm_story(str(file)))
    assert isinstance(seed, Seed)
    assert (seed.seed_id, seed.source_line, seed.dataset) == ("0a1b2c", 1, "cnndm-story")
    assert dict(seed.fields) == {
        # the text before the first @highlight as written, its paragraph break kept
        "document": "(NEWS) -- The harbour of Sollen reopened on Monday.\n\nShips queued all day.",
        "right_summary": "Harbour of Sollen reopened on Monday. Ships queued all day.",
    }


def test_glob_over_story_files_gives_one_seed_per_file(tmp_path: Path) -> None:
    stories = tmp_path / "stories"
    stories.mkdir()
    (stories / "b2.story").write_text(STORY, encoding="utf-8")
    (stories / "a1.story").write_text(STORY.replace("Monday", "Friday"), encoding="utf-8")
    (stories / "notes.txt").write_text("not a story", encoding="utf-8")
    seeds = list(read_seeds([str(stories / "*.story")], "summarization"))
    assert [(s.seed_id, s.dataset) for s in seeds] == [("a1", "cnndm-story"), ("b2", "cnndm-story")]
    assert "Friday" in seeds[0].fields["document"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Article only, no highlights.\n", "no highlights"),
        ("Article.\n\n@highlight\n\n   \n", "no highlights"),
        ("@highlight\n\nA highlight\n", "no article text before the first @highlight"),
    ],
)
def test_story_without_article_or_highlights(tmp_path: Path, text: str, reason: str) -> None:
    file = tmp_path / "bad.story"
    file.write_text(text, encoding="utf-8")
    [bad] = list(read_cnndm_story(str(file)))
    assert isinstance(bad, BadRecord)
    assert (bad.source_file, bad.source_line) == (str(file), 1)
    assert bad.reason.startswith(reason)


def test_empty_story_file_is_a_bad_record(tmp_path: Path) -> None:
    file = tmp_path / "empty.story"
    file.write_text("\n  \n", encoding="utf-8")
    assert list(read_cnndm_story(str(file))) == [
        BadRecord(str(file), 1, "empty file (no article, no highlights)")
    ]


def test_empty_story_file_in_a_glob_costs_only_itself(tmp_path: Path) -> None:
    stories = tmp_path / "stories"
    stories.mkdir()
    (stories / "a.story").write_text(STORY, encoding="utf-8")
    (stories / "b.story").write_bytes(b"")
    (stories / "c.story").write_text(STORY.replace("Monday", "Friday"), encoding="utf-8")
    out = list(read_seeds([str(stories / "*.story")], "summarization"))
    assert [type(x) for x in out] == [Seed, BadRecord, Seed]
    assert out[1] == BadRecord(
        str(stories / "b.story"), 1, "empty file (no article, no highlights)"
    )


def test_story_that_is_not_utf8(tmp_path: Path) -> None:
    file = tmp_path / "latin.story"
    file.write_bytes("Caf\u00e9 story.\n\n@highlight\n\nA line\n".encode("latin-1"))
    [bad] = list(read_cnndm_story(str(file)))
    assert isinstance(bad, BadRecord) and bad.reason.startswith("not UTF-8 text")


def test_wrapped_highlight_lines_are_one_highlight() -> None:
    fields = story_fields("Body.\n@highlight\nFirst part\nsecond part\n@highlight\nNext\n")
    assert fields["right_summary"] == "First part second part. Next."


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("He left .", "He left."),
        ("He left", "He left."),
        ("  He  left!  ", "He left!"),
        ("Why ?", "Why?"),
        ("She said: 'It was fine'", "She said: 'It was fine'."),
        ('He said "no."', 'He said "no."'),
        ("It costs (a lot.)", "It costs (a lot.)"),
        ("In the U.S", "In the U.S."),
        ("Wait …", "Wait…"),
        ("   ", ""),
        (".", "."),
    ],
)
def test_as_sentence(text: str, sentence: str) -> None:
    assert as_sentence(text) == sentence
