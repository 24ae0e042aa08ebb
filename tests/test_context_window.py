"""Where a session's context window comes from (halugen/context_window.py)."""

from __future__ import annotations

from pathlib import Path

from halugen.context_window import effective_window
from halugen.store.db import open_store


def _window(db: Path, **given: object) -> tuple[int, str]:
    with open_store(db) as store:
        settings: dict[str, object] = {
            "flag": None,
            "announced": None,
            "announced_by": "",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "card_window": 128_000,
        }
        settings.update(given)
        return effective_window(store, **settings)  # type: ignore[arg-type]


def test_what_the_server_announces_wins_over_the_card(tmp_path: Path):
    assert _window(tmp_path / "h.duckdb", announced=8192, announced_by="props") == (
        8192,
        "the server (props)",
    )


def test_the_flag_wins_over_the_server(tmp_path: Path):
    window = _window(tmp_path / "h.duckdb", flag=4096, announced=8192, announced_by="props")
    assert window == (4096, "--context-window")


def test_without_a_word_from_the_server_the_card_is_used(tmp_path: Path):
    assert _window(tmp_path / "h.duckdb") == (128_000, "the price card")
