"""Every command README.md and docs/*.md show runs, page by page, against the simulator.

Each page plays in an empty folder of its own holding the files pages name (``PAGE_FILES``)
and a copy of ``examples/``, with a simulator standing in for the provider a page talks to
(``OPENAI_BASE_URL``; a page that starts its own with ``halugen simulate`` gets that one).
A command a page cannot run here is marked there (``<!-- not run: why -->``, see
shown_commands.py) and is only parsed; a command neither run nor marked fails the test, so a
page cannot drift from the tool.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from tests.audit import fixtures
from tests.docs.page_shell import page_shell
from tests.docs.shown_commands import shown_commands

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HERE = Path(__file__).resolve().parent

# file a page names -> the file of this repository that plays it (others: tests/docs/files/)
PAGE_FILES = {
    "qa_seeds.json": ROOT / "halugen" / "examples" / "qa_seeds.json",
    "hotpot.json": ROOT / "halugen" / "examples" / "qa_seeds.json",
    "hotpot_train_v1.1.json": ROOT / "halugen" / "examples" / "qa_seeds.json",
    "seeds.json": ROOT / "halugen" / "examples" / "qa_seeds.json",
    "qa_data.json": ROOT / "tests" / "audit" / "data" / "qa_data.json",
    "dialogue_data.json": ROOT / "tests" / "audit" / "data" / "dialogue_data.json",
    "examples": ROOT / "examples",
}

# a page's own file of a name: the audit page's hard split needs 100 hard items or more
PAGE_OWN_FILES = {
    "audit.md": {"qa_data.json": lambda path: fixtures.write(path, fixtures.balanceable(220))},
}


def lay_out_files(folder: Path, page: str) -> None:
    for name, source in PAGE_FILES.items():
        if source.is_dir():
            shutil.copytree(source, folder / name)
        else:
            shutil.copy(source, folder / name)
    shutil.copytree(HERE / "files", folder, dirs_exist_ok=True)
    for name, write in PAGE_OWN_FILES.get(page, {}).items():
        write(folder / name)
    # a HotpotQA split as Hugging Face serves it (Parquet), made from the JSON one
    hf = HERE / "files" / "hotpot_hf.jsonl"
    if hf.exists():
        duckdb.execute(
            f"COPY (FROM read_json('{hf}')) TO "
            f"'{folder / 'validation-00000-of-00001.parquet'}' (FORMAT parquet)"
        )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_the_page_shows_runs(page: Path, tmp_path: Path, monkeypatch) -> None:
    commands = shown_commands(page)
    lay_out_files(tmp_path, page.name)
    with page_shell(tmp_path, monkeypatch) as shell:
        monkeypatch.setenv("OPENAI_BASE_URL", shell.start_simulator())
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        for command in commands:
            shell.run(command)
    assert len(shell.ran) + len(shell.parsed) == len(commands)
