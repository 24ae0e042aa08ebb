"""The house tests' parser stays whole when a failing finalizer runs during a collection."""

from __future__ import annotations

import gc
import sys
import traceback
from pathlib import Path
from typing import Any

from tests.python_source import parse_file

LONG_MODULE = Path(__file__).resolve().parents[1] / "halugen" / "store" / "rows.py"


class _FailsWhenCollected:
    """Garbage in a cycle whose finalizer raises, as a leaked event loop's can."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        raise ValueError("finalizer failed")


def test_a_parse_is_not_broken_by_a_finalizer_that_formats_its_traceback() -> None:
    formatted: list[str] = []

    def format_it(unraisable: Any) -> None:  # what pytest's hook does: format the traceback
        formatted.append(
            "".join(
                traceback.format_exception(
                    unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback
                )
            )
        )

    old_hook, old_threshold = sys.unraisablehook, gc.get_threshold()
    sys.unraisablehook = format_it
    gc.set_threshold(50)  # collections every few allocations, so one would fall inside a parse
    try:
        for _ in range(2000):
            _FailsWhenCollected()
        for _ in range(5):
            assert parse_file(LONG_MODULE).body
        gc.collect()
    finally:
        sys.unraisablehook = old_hook
        gc.set_threshold(*old_threshold)
    assert (
        formatted and "finalizer failed" in formatted[-1]
    )  # the finalizers did run, after the parse
