"""Saying what was cut: how many records lost part of their long field to fit the context
window, and which window that was.

One wording for the live view, the run's closing line and the dataset card, e.g.
"10 of 18 records cut to fit a 2,048-token window (the server's per-slot context: -c 4096
over 2 slots)". llama.cpp's ``GET /props`` gives each slot's context
(``default_generation_settings.n_ctx``) and ``total_slots``: the server was started with
their product (``-c``) shared among the slots (``-np``), which a user may not expect.
"""

from __future__ import annotations

__all__ = ["cut_note", "window_origin", "window_phrase"]


def window_origin(*, source: str, window: int, slots: int | None) -> str:
    """Where the window came from, in words for the note ("" when nothing worth saying).

    ``source`` is ``effective_window``'s; ``slots`` the server's ``total_slots``, if said."""
    if source == "the server (props)":
        if slots and slots > 1:
            return f"the server's per-slot context: -c {window * slots} over {slots} slots"
        return "the server's context"
    if source.startswith("the server"):
        return "the server's context"
    if source == "--context-window":
        return "--context-window"
    if source == "learned":
        return "learned from the server's context-length reply"
    return ""


def window_phrase(window: int | None, origin: str = "") -> str:
    """'a 2,048-token window (origin)': what a run's records were fitted to, as the run
    records it (``runs.fitted_window``) for the card."""
    text = f"a {window:,}-token window" if window else "the context window"
    return f"{text} ({origin})" if origin else text


def cut_note(cut: int, records: int, phrase: str) -> str:
    """'10 of 18 records cut to fit PHRASE' (``window_phrase``), or "" if none was cut."""
    if cut <= 0:
        return ""
    noun = "record" if records == 1 else "records"
    return f"{cut:,} of {records:,} {noun} cut to fit {phrase}"
