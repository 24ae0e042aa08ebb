"""A real headless browser for the pages' tests: Debian's chromium driven by Playwright
(which never downloads a browser of its own here).

Where the ``playwright`` package or a ``chromium`` binary is missing the browser tests are
skipped, except in CI (``$CI`` or ``$HALUGEN_REQUIRE_BROWSER`` set), where they fail: CI
installs both (``apt-get install -y chromium``, ``pip install playwright``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ARGS", "CHROMIUM", "browser", "chromium", "require_browser", "sync_api"]

try:
    from playwright import sync_api
except ImportError:  # pragma: no cover - CI has it
    sync_api = None  # type: ignore[assignment]

CHROMIUM = (
    os.environ.get("HALUGEN_CHROMIUM")
    or shutil.which("chromium")
    or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
)

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_browser() -> None:
    """Skip (fail, in CI) the test when there is no browser to drive."""
    missing = None
    if sync_api is None:
        missing = "the playwright package is not installed (pip install playwright)"
    elif CHROMIUM is None:
        missing = "no chromium binary (apt-get install -y chromium, or set HALUGEN_CHROMIUM)"
    if missing is None:
        return
    if os.environ.get("CI") or os.environ.get("HALUGEN_REQUIRE_BROWSER"):
        pytest.fail(f"browser tests must run in CI: {missing}")
    pytest.skip(missing)


@pytest.fixture(scope="module")
def chromium() -> Iterator[tuple[Any, Any]]:
    """(playwright, a launched chromium) shared by one test file: a launch costs seconds, a
    fresh context per test (``browser``) keeps the tests apart. Module scope, not session:
    while Playwright's sync API is started the main thread shows a running event loop, so
    ``asyncio.run`` in a later test file of the same worker would refuse to start."""
    require_browser()
    assert sync_api is not None
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield p, launched
        finally:
            launched.close()


@pytest.fixture
def browser(chromium: tuple[Any, Any]) -> Iterator[Any]:
    """(playwright, a fresh browser context: its own cookies and storage) for one test."""
    p, launched = chromium
    context = launched.new_context()
    context.set_default_timeout(15_000)
    try:
        yield p, context
    finally:
        context.close()
