"""The line a command prints as its session opens its run: said from what the session opened."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from halugen.cli import common
from halugen.session import RunStart


@pytest.fixture
def said(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    text = io.StringIO()
    monkeypatch.setattr(common, "err", Console(file=text, width=200, highlight=False))
    return text


def test_the_start_line_names_the_sessions_tasks_model_budget_and_store(said: io.StringIO):
    on_run = common.announce("run", "{tasks} with {model}, budget {budget}")
    on_run(RunStart("r-1", False, "gpt-4o-mini", ("qa", "dialogue"), 2 * 10**12, Path("h.db")))
    assert said.getvalue().strip() == (
        "starting run r-1 (qa, dialogue with gpt-4o-mini, budget $2.0000) -> h.db"
    )


def test_a_resumed_run_without_a_budget_says_so(said: io.StringIO):
    on_run = common.announce("run", "{tasks} with {model}, budget {budget}")
    on_run(RunStart("r-2", True, "m", ("qa",), None, Path("h.db")))
    assert said.getvalue().strip() == "resuming run r-2 (qa with m, budget none) -> h.db"


def test_a_detail_without_the_runs_fields_keeps_its_own_words(said: io.StringIO):
    on_run = common.announce("eval run", "qa/plain with {model}")
    on_run(RunStart("r-3", False, "m", ("qa",), None, Path("e.db")))
    assert said.getvalue().strip() == "starting eval run r-3 (qa/plain with m) -> e.db"
