"""Every command README.md and docs/*.md show runs, page by page, against the simulator.

Each page plays in an empty folder of its own holding the files pages name (``PAGE_FILES``,
tests/docs/files/, tests/docs/tables/) and a checkout's data folders (``examples/``,
``prompts/``). A simulator stands in for OpenAI (``OPENAI_BASE_URL``; it serves gpt-4o-mini,
which halugen picks on OpenAI when no ``--model`` is given); a page that starts its own with
``halugen simulate`` gets that one (page_shell.py says how each kind of command is played).
A command a page cannot run here is marked there (``<!-- not run: why -->``, see
shown_commands.py) and is only parsed; a command neither run nor marked fails the test, so a
page cannot drift from the tool.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import orjson
import pytest

from halugen.simulate.config import BatchSimConfig
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
    "qa.jsonl": ROOT / "tests" / "audit" / "data" / "qa_data.json",
    "dialogue_data.json": ROOT / "tests" / "audit" / "data" / "dialogue_data.json",
    # a checkout's data folders, which pages name by their paths there
    "examples": ROOT / "examples",
    "halugen/examples/qa_seeds.json": ROOT / "halugen" / "examples" / "qa_seeds.json",
}

# tests/docs/tables/NAME.jsonl is written as NAME.parquet, or where this says
PARQUET_AT = {"my_rag_set": "my_rag_set/part-00000.parquet"}


def example_seeds(n: int) -> Callable[[Path], None]:
    """Writes the example file's first ``n`` seeds: for a run that waits on a slow or
    rate-limited simulator, where how many seeds it makes is not what its page shows."""

    def write(path: Path) -> None:
        example = PAGE_FILES["halugen/examples/qa_seeds.json"]
        path.write_bytes(orjson.dumps(orjson.loads(example.read_bytes())[:n]))

    return write


# a page's own file of a name: the audit page's hard split needs 100 hard items or more; the
# run against the simulator at 600 requests a minute (providers) and the one watched while
# it runs at 1.5 s an answer (view) take their time per call, so they get 3 seeds of 12
PAGE_OWN_FILES = {
    "audit.md": {"qa_data.json": lambda path: fixtures.write(path, fixtures.balanceable(220))},
    "providers.md": {"seeds.json": example_seeds(3)},
    "view.md": {"halugen/examples/qa_seeds.json": example_seeds(3)},
}


def lay_out_files(folder: Path, page: str) -> None:
    # the built-in task folders, linked: halugen knows them by where they are
    (folder / "prompts").symlink_to(ROOT / "prompts", target_is_directory=True)
    for name, source in PAGE_FILES.items():
        if source.is_dir():
            shutil.copytree(source, folder / name)
        else:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, folder / name)
    shutil.copytree(HERE / "files", folder, dirs_exist_ok=True)
    for name, write in PAGE_OWN_FILES.get(page, {}).items():
        write(folder / name)
    # tables the pages name as Parquet, written from JSON lines (tests/docs/tables/)
    for source in sorted((HERE / "tables").glob("*.jsonl")):
        target = PARQUET_AT.get(source.stem, f"{source.stem}.parquet")
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        duckdb.execute(f"COPY (FROM read_json('{source}')) TO '{folder / target}' (FORMAT parquet)")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_the_page_shows_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = shown_commands(page)
    lay_out_files(tmp_path, page.name)
    with page_shell(tmp_path, monkeypatch) as shell:
        # OpenAI's stand-in: without --model, halugen asks OpenAI for gpt-4o-mini. Its batches
        # are done when first looked at: a --batch command then collects them at once instead
        # of waiting out --batch-poll (30 s of a real clock) for a batch two seconds long
        openai = shell.start_simulator(
            served_models=("gpt-4o-mini",), batch=BatchSimConfig(duration_s=0.0)
        )
        monkeypatch.setenv("OPENAI_BASE_URL", openai)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        monkeypatch.delenv("HALUGEN_DB", raising=False)  # each page's store is its folder's
        for command in commands:
            shell.run(command)
    assert len(shell.ran) + len(shell.parsed) == len(commands)
