"""The wording of what was cut to fit the context window (halugen/cut_note.py)."""

from __future__ import annotations

from halugen.cut_note import cut_note, window_origin, window_phrase


def test_a_llama_cpp_window_names_the_context_and_the_slots() -> None:
    origin = window_origin(source="the server (props)", window=2048, slots=2)
    note = cut_note(10, 18, window_phrase(2048, origin))
    assert note == (
        "10 of 18 records cut to fit a 2,048-token window "
        "(the server's per-slot context: -c 4096 over 2 slots)"
    )


def test_other_windows_say_where_they_came_from() -> None:
    assert window_origin(source="the server (props)", window=4096, slots=1) == (
        "the server's context"
    )
    assert window_origin(source="the server (models)", window=8192, slots=None) == (
        "the server's context"
    )
    assert window_origin(source="--context-window", window=1500, slots=None) == ("--context-window")
    assert window_origin(source="the price card", window=128_000, slots=None) == ""
    assert window_phrase(128_000) == "a 128,000-token window"
    assert window_phrase(None) == "the context window"


def test_nothing_cut_is_no_note() -> None:
    assert cut_note(0, 18, window_phrase(2048)) == ""
    assert cut_note(1, 1, window_phrase(2048)) == "1 of 1 record cut to fit a 2,048-token window"
