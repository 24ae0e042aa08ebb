"""The OpenDialKG reader: history layout, knowledge joining, one seed per grounded reply,
bad rows with their line numbers."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from halugen.errors import InputError
from halugen.records import BadRecord, Seed
from halugen.seeds.opendialkg import (
    NO_HISTORY,
    NO_PATH,
    NO_REPLY,
    dialogue_seeds,
    join_sentences,
    read_opendialkg,
)

HEADER = ["Messages", "User Rating", "Assistant Rating"]
RATING = '{"dialog_rating": "5", "other_agent_rating": "4"}'


def user(text: str) -> dict[str, str]:
    return {"message": text, "type": "chat", "sender": "user"}


def bot(text: str) -> dict[str, str]:
    return {"message": text, "type": "chat", "sender": "assistant"}


def path(text: str, sender: str = "assistant", score: float = 0.0) -> dict[str, Any]:
    triples = [["Sun Harbour", "written_by", "Ilse Varga"]]
    return {
        "metadata": {"path": [score, triples, text]},
        "type": "action",
        "sender": sender,
        "action_id": "kgwalk/choose_path",
    }


def meta(text: str, sender: str = "user") -> dict[str, Any]:
    return {
        "metadata": {"text": text},
        "type": "action",
        "sender": sender,
        "action_id": "meta_thread/send_meta_message",
    }


SIMPLE = [
    user("Do you know the novel Sun Harbour?"),
    path("Sun Harbour is written by Ilse Varga"),
    bot("Yes, Ilse Varga wrote it."),
    user("Thanks!"),
    bot("You're welcome."),
]
TWO_PATHS = [
    user("Who  wrote\nSun Harbour?"),
    path("Sun Harbour is written by Ilse Varga"),
    bot("Ilse Varga did."),
    path("Ilse Varga wrote Cold Lanterns", sender="user"),
    user("Did she write anything else?"),
    meta("are you there?", sender="assistant"),
    path("Cold Lanterns has genre Mystery."),
    bot("She also wrote Cold Lanterns, a mystery."),
    user("Great."),
]
NO_KNOWLEDGE = [user("Hi"), bot("Hello"), user("Bye"), bot("Bye")]
PATH_FIRST = [path("Ilse Varga wrote Cold Lanterns"), bot("Have you read Cold Lanterns?")]
PATH_LAST = [user("Hi"), bot("Hello"), path("Ilse Varga wrote Cold Lanterns")]


def write_csv(tmp_path: Path, cells: list[str], name: str = "dialogs.csv") -> str:
    file = tmp_path / name
    with file.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        for cell in cells:
            writer.writerow([cell, RATING, "{}"])
    return str(file)


def messages(turns: list[Any], *, pretty: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if pretty else 0
    return orjson.dumps(turns, option=option).decode()


def test_seeds_bad_rows_and_line_numbers(tmp_path: Path) -> None:
    pretty = messages(TWO_PATHS, pretty=True)  # a quoted cell spanning many lines
    span = pretty.count("\n") + 1
    file = write_csv(
        tmp_path,
        [
            messages(SIMPLE),  # line 2
            pretty,  # lines 3 .. 3 + span - 1
            "[{not json",  # malformed
            messages(NO_KNOWLEDGE),
            '{"type": "chat"}',  # JSON, but not a list
            messages(PATH_FIRST),
            messages(PATH_LAST),
        ],
    )
    out = list(read_opendialkg(file))
    after = 3 + span  # the line the row after the multi-line cell starts on
    seeds = [x for x in out if isinstance(x, Seed)]
    bad = [x for x in out if isinstance(x, BadRecord)]
    assert [(s.seed_id, s.source_line) for s in seeds] == [
        ("dialogs.csv:2:3", 2),
        ("dialogs.csv:3:3", 3),
        ("dialogs.csv:3:8", 3),
    ]
    assert all(s.task == "dialogue" and s.dataset == "opendialkg" for s in seeds)
    assert all(s.source_file == file for s in seeds)
    assert dict(seeds[0].fields) == {
        "knowledge": "Sun Harbour is written by Ilse Varga",
        "dialogue_history": "[Human]: Do you know the novel Sun Harbour?",
        "right_response": "Yes, Ilse Varga wrote it.",
    }
    assert dict(seeds[2].fields) == {
        # the user's path and the assistant's, joined by one space (a period added between)
        "knowledge": "Ilse Varga wrote Cold Lanterns. Cold Lanterns has genre Mystery.",
        # every chat turn before the reply, meta chatter left out, whitespace made single
        "dialogue_history": "[Human]: Who wrote Sun Harbour? [Assistant]: Ilse Varga did. "
        "[Human]: Did she write anything else?",
        "right_response": "She also wrote Cold Lanterns, a mystery.",
    }
    assert [(b.source_line, b.reason.split(" (")[0]) for b in bad] == [
        (after, "Messages is not valid JSON"),
        (after + 1, NO_PATH),
        (after + 2, "Messages is an object, not a list of turns"),
        (after + 3, NO_HISTORY),
        (after + 4, NO_REPLY),
    ]
    assert all(b.source_file == file for b in bad)
    assert all("\n" not in b.reason for b in bad)
    assert len({s.key for s in seeds}) == 3


def test_history_is_one_line_with_single_spaces() -> None:
    turns = [
        user("  First question?  "),
        bot("An answer.\n"),
        user("Second\n\nquestion?"),
        path("A fact"),
        bot("Reply"),
    ]
    [(turn, fields)] = dialogue_seeds(turns)  # type: ignore[misc]
    assert turn == 5
    history = fields["dialogue_history"]
    assert history == "[Human]: First question? [Assistant]: An answer. [Human]: Second question?"
    assert "  " not in history and "\n" not in history


def test_knowledge_is_joined_with_a_space_never_glued() -> None:
    assert join_sentences(["A wrote B", "B is a film"]) == "A wrote B. B is a film"
    assert join_sentences(["A wrote B.", "B is a film"]) == "A wrote B. B is a film"
    assert join_sentences(['He said "yes!"', "C"]) == 'He said "yes!" C'
    assert join_sentences(["only one"]) == "only one"


def test_the_same_path_twice_in_a_row_is_kept_once() -> None:
    turns = [user("Q"), path("A fact"), path("A fact"), bot("R")]
    [(_, fields)] = dialogue_seeds(turns)  # type: ignore[misc]
    assert fields["knowledge"] == "A fact"


def test_only_the_first_assistant_turn_after_knowledge_is_the_response() -> None:
    turns = [user("Q"), path("A fact"), bot("First"), bot("Second"), user("More?"), bot("Third")]
    seeds = dialogue_seeds(turns)
    assert isinstance(seeds, list)
    assert [(n, f["right_response"]) for n, f in seeds] == [(3, "First")]


def test_a_user_path_waits_for_the_next_assistant_reply() -> None:
    turns = [user("Q"), bot("A"), path("User fact", sender="user"), user("Is it so?"), bot("Yes")]
    seeds = dialogue_seeds(turns)
    assert isinstance(seeds, list)
    [(turn, fields)] = seeds
    assert turn == 5
    assert fields["knowledge"] == "User fact"
    assert fields["dialogue_history"].endswith("[Human]: Is it so?")


@pytest.mark.parametrize(
    ("turns", "reason"),
    [
        (NO_KNOWLEDGE, NO_PATH),
        ([], NO_PATH),
        (PATH_LAST, NO_REPLY),
        (PATH_FIRST, NO_HISTORY),
        ([user("Q"), path("   "), bot("R")], NO_PATH),  # an empty path text is no knowledge
        ([user("Q"), meta("hello?"), bot("R")], NO_PATH),
        ([path("fact"), user("Q"), {"type": "chat", "sender": "bot", "message": "R"}], NO_REPLY),
    ],
)
def test_dialogues_without_a_seed_say_why(turns: list[Any], reason: str) -> None:
    assert dialogue_seeds(turns) == reason


def test_odd_turns_are_passed_over() -> None:
    turns = [
        {"type": "chat", "sender": ["user"], "message": "unhashable sender"},
        {"type": "chat", "sender": "user", "message": 7},
        {"type": "chat", "sender": "user"},
        {"type": "action", "metadata": {"path": [0, [], None]}},
        {"type": "action", "metadata": "text"},
        {"type": "action", "metadata": {"path": "A fact"}},
        user("Q"),
        path("A fact"),
        bot("R"),
    ]
    seeds = dialogue_seeds(turns)
    assert isinstance(seeds, list)
    assert seeds == [
        (9, {"knowledge": "A fact", "dialogue_history": "[Human]: Q", "right_response": "R"})
    ]


def test_a_turn_that_is_not_an_object_makes_the_row_bad(tmp_path: Path) -> None:
    file = write_csv(tmp_path, [messages([user("Q"), "text", path("f"), bot("R")])])
    assert list(read_opendialkg(file)) == [
        BadRecord(file, 2, "Messages item 2 is a string, not an object")
    ]


def test_messages_are_never_evaluated(tmp_path: Path) -> None:
    # A Python literal that eval() would accept is not JSON and must stay a bad row.
    file = write_csv(tmp_path, ["[{'type': 'chat', 'sender': 'user', 'message': 'hi'}]"])
    [bad] = list(read_opendialkg(file))
    assert isinstance(bad, BadRecord)
    assert bad.reason.startswith("Messages is not valid JSON (")


def test_row_with_missing_cells(tmp_path: Path) -> None:
    file = tmp_path / "short.csv"
    file.write_text("Messages,User Rating,Assistant Rating\n" + '"[]"\n', encoding="utf-8")
    assert list(read_opendialkg(str(file))) == [
        BadRecord(str(file), 2, "row has 1 cells, the header has 3")
    ]


def test_bom_crlf_and_gzip(tmp_path: Path) -> None:
    cell = messages(SIMPLE).replace('"', '""')
    text = "Messages,User Rating,Assistant Rating\r\n" + f'"{cell}","{{}}","{{}}"\r\n'
    plain = tmp_path / "bom.csv"
    plain.write_bytes(b"\xef\xbb\xbf" + text.encode())
    packed = tmp_path / "bom.csv.gz"
    packed.write_bytes(gzip.compress(b"\xef\xbb\xbf" + text.encode()))
    for file in (plain, packed):
        [seed] = list(read_opendialkg(str(file)))
        assert isinstance(seed, Seed)
        assert seed.fields["right_response"] == "Yes, Ilse Varga wrote it."


def test_large_cell_over_the_default_csv_limit(tmp_path: Path) -> None:
    long_reply = "word " * 40_000  # ~200 kB, past csv's default 128 kB field limit
    file = write_csv(tmp_path, [messages([user("Q"), path("fact"), bot(long_reply)])])
    [seed] = list(read_opendialkg(file))
    assert isinstance(seed, Seed)
    assert len(seed.fields["right_response"]) > 150_000


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf", b"\n\n"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    file = tmp_path / "none.csv"
    file.write_bytes(content)
    with pytest.raises(InputError, match=r"none\.csv is empty$"):
        list(read_opendialkg(str(file)))


def test_header_without_messages_column(tmp_path: Path) -> None:
    file = tmp_path / "other.csv"
    file.write_text("Dialogue,User Rating\nx,y\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"no 'messages' column \(its columns: 'dialogue'"):
        list(read_opendialkg(str(file)))
