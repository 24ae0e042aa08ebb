"""The one way the house tests parse Python source: with the garbage collector held off.

CPython 3.11's AST converter keeps one depth counter per process (gh-106905). When a collection
runs inside ``ast.parse`` and a finalizer fails (a leaked event loop's ``__del__``, say), the
unraisable hook formats a traceback, and 3.11's traceback carets parse source again: the outer
parse then fails with "AST constructor recursion depth mismatch". Holding the collector off for
the length of one parse keeps finalizers out of it.
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path

__all__ = ["parse_file", "parse_source"]


def parse_source(text: str) -> ast.Module:
    """``ast.parse(text)`` with no collection (and so no finalizer) running inside it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(text)
    finally:
        if was_enabled:
            gc.enable()


def parse_file(path: Path) -> ast.Module:
    """The parsed module at ``path`` (UTF-8)."""
    return parse_source(path.read_text(encoding="utf-8"))
