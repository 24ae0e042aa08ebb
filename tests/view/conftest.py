"""Fixtures of the view's tests: one simulated run's store, shared (they only read it)."""

from __future__ import annotations

import pytest

from tests.browser import browser, chromium  # noqa: F401  (fixtures of the browser tests)

from .simstore import SimStore, make_sim_store


@pytest.fixture(scope="package")
def sim_store(tmp_path_factory: pytest.TempPathFactory) -> SimStore:
    return make_sim_store(tmp_path_factory.mktemp("view"))
