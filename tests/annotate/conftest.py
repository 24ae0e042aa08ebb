"""Fixtures of the annotation tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from halugen.store.db import Store, open_store
from tests.browser import browser, chromium  # noqa: F401  (fixtures of the browser tests)

from ._web import RESPONSE, TRICKY, add_items


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(tmp_path / "ann.duckdb")
    add_items(
        s,
        [
            ("i1", "When was the Eiffel Tower finished?", RESPONSE),
            ("i2", "Who designed it?", "Gustave Eiffel's company designed it."),
            ("i3", "Tricky <b>query</b>", TRICKY),
        ],
    )
    yield s
    s.close()
