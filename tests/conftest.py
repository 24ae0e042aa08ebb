"""Shared fixtures: a simulator on loopback (in a thread), small seed files, and new stores
made from a copy of one store migrated per test process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from xdist.scheduler import LoadFileScheduling

STORE_TESTS = Path(__file__).parent / "store"

# The test files that take longest (measured with --durations on this suite), slowest first.
# The workers take whole files in collection order (pyproject's addopts), so these go first
# and the short files fill in around them: no worker is left running one of them alone at
# the end while the others idle. mypy (a cold cache: a minute or more) leads. Measured
# again for issue 26 (one file at a time, wall time): files of 10 s or more.
SLOWEST_FILES = (
    "test_types.py",
    "docs/test_docs_commands.py",
    "batch/test_batch_mode.py",
    "test_cli.py",
    "annotate/test_server.py",
    "store/test_live.py",
    "e2e/test_general_track.py",
    "llm/test_limits_against_simulator.py",
    "annotate/test_browser.py",
    "cli/test_preselect_output.py",
    "view/test_browser.py",
    "batch/test_kill_resume.py",
    "batch/test_exchange.py",
    "e2e/test_kill_resume.py",
    "llm/test_capabilities.py",
    "e2e/test_generate.py",
    "preselect/test_scoring.py",
    "llm/test_fleet_against_simulators.py",
    "llm/test_limiter.py",
    "analysis/test_topics.py",
    "store/test_journal.py",
    "e2e/test_task_folder.py",
    "e2e/test_structured.py",
    "e2e/test_stopping.py",
    "store/test_store_errors.py",
)


# The files whose tests import torch and bert-score (preselection's BERTScore; 6-7 s of CPU
# to import, before the model loads): one unit of work, so that one worker imports them
# instead of each (tests/conftest.py's scheduler, below). The unit starts where its first
# file stands in SLOWEST_FILES.
TORCH_FILES = (
    "batch/test_batch_mode.py",
    "e2e/test_general_track.py",
    "cli/test_preselect_output.py",
    "preselect/test_scoring.py",
    "preselect/test_capped_servers.py",
    "preselect/test_hub.py",
    "preselect/test_unusable_responses.py",
)


class _TorchFilesTogether(LoadFileScheduling):
    """xdist's ``--dist loadfile`` (a file's tests go to one worker), except that the files
    of ``TORCH_FILES`` go to one worker together."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path.removeprefix("tests/") in TORCH_FILES:
            return "tests: the files that import torch"
        return super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadFileScheduling | None:
    """The controller's scheduler under ``--dist loadfile`` (pyproject's addopts)."""
    if config.getvalue("dist") != "loadfile":
        return None
    return _TorchFilesTogether(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """Compile halugen's modules once, before any worker starts (the controller only).

    Many tests start ``python -m halugen`` in a process of its own. Where
    PYTHONDONTWRITEBYTECODE is set (it is on these machines) and the checkout is fresh,
    no interpreter writes bytecode, so each of those processes compiled every module it
    imports from source again: about 0.5-1 s of CPU a start. Bytecode written here is read
    by all of them (the variable stops writing, not reading)."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    import compileall

    compileall.compile_dir(str(Path(__file__).parent.parent / "halugen"), quiet=1)


@pytest.hookimpl(wrapper=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> Generator[None, int, int]:
    """``-n auto`` (pyproject's addopts): one worker more than xdist would start, one per
    core. Much of this suite waits rather than computes (simulators' latencies and rate
    limits, processes starting, browsers, a run polling its batches): with one worker per
    core the cores idled 28% of the time (11.3 min of CPU in a 7:52 run on 2 cores), and
    one worker more fills them. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still sets the number."""
    cores = yield
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return cores
    return cores + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest files first (``SLOWEST_FILES``), the rest in their usual order."""
    tests = Path(__file__).parent
    rank = {tests / name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(Path(item.path), len(rank)))


class _DuckdbFromTemplate:
    """``duckdb`` as ``halugen.store.db`` sees it, except that a read-write connect to a file
    that does not exist yet first copies ``template`` there: a store halugen created and
    migrated itself, empty. Creating a store (27 migrations and the views) costs a few tenths
    of a second of CPU and hundreds of tests create one; a copy plus a reopen that finds
    every migration and view current costs a few hundredths. Other users of ``duckdb`` (the
    tests' own connections) are untouched."""

    def __init__(self, real: Any, template: Path) -> None:
        self._real = real
        self._template = template

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def connect(self, database: Any = ":memory:", read_only: bool = False, **kwargs: Any) -> Any:
        path = os.fspath(database)
        if not read_only and path != ":memory:" and not os.path.exists(path):
            # where the copy fails (no such folder, no write access) the real connect says so
            with contextlib.suppress(OSError):
                shutil.copyfile(self._template, path)
        return self._real.connect(database, read_only=read_only, **kwargs)


@pytest.fixture(scope="session")
def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store ``open_store`` created and migrated in this test process, empty and closed."""
    from halugen.store.db import open_store

    template = tmp_path_factory.mktemp("store-template") / "template.duckdb"
    open_store(template, serve_reads=False).close()
    assert not Path(f"{template}.wal").exists()
    return template


@pytest.fixture(autouse=True)
def stores_from_a_template(
    request: pytest.FixtureRequest, store_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New stores of a test start as a copy of ``store_template``, except in ``tests/store``,
    whose tests create and migrate every store from scratch."""
    if STORE_TESTS in Path(request.path).parents:
        return
    from halugen.store import db

    monkeypatch.setattr(db, "duckdb", _DuckdbFromTemplate(db.duckdb, store_template))


@dataclass
class SimHandle:
    base_url: str
    port: int
    sim: Any  # halugen.simulate.Simulator, touched only through its thread-safe reads
    loop: asyncio.AbstractEventLoop

    def stats(self, *, keys: bool = True) -> dict[str, Any]:
        """The simulator's counters, read on its own loop (its state is not thread-safe)."""

        async def read() -> dict[str, Any]:
            return self.sim.stats(keys=keys)

        return asyncio.run_coroutine_threadsafe(read(), self.loop).result(10)


def serve_simulator(**kwargs: Any) -> tuple[SimHandle, Callable[[], None]]:
    """A simulator (``SimConfig`` kwargs) on 127.0.0.1 in a thread of its own, and its stop."""
    from halugen.simulate import SIMULATOR, SimConfig, serve

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def main() -> None:
            runner, port = await serve(SimConfig(**kwargs), "127.0.0.1", 0)
            box["runner"], box["port"] = runner, port
            ready.set()

        loop.run_until_complete(main())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "simulator did not start"
    runner = box["runner"]

    def stop() -> None:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        if not loop.is_running():
            loop.close()  # a loop left open fails in its finalizer, in whichever test collects it

    port = box["port"]
    return SimHandle(f"http://127.0.0.1:{port}/v1", port, runner.app[SIMULATOR], loop), stop


@pytest.fixture
def simulator() -> Iterator[Callable[..., SimHandle]]:
    """Factory: ``simulator(**SimConfig kwargs)`` serves a simulator on 127.0.0.1."""
    stops: list[Callable[[], None]] = []

    def start(**kwargs: Any) -> SimHandle:
        handle, stop = serve_simulator(**kwargs)
        stops.append(stop)
        return handle

    yield start
    for stop in stops:
        stop()


def hotpot_record(i: int) -> dict[str, Any]:
    """A small HotpotQA-format record with invented facts, distinct per ``i``."""
    city = f"Vallona{i}"
    river = f"Serin{i}"
    return {
        "_id": f"rec{i:05d}",
        "question": f"Which river flows through the town where the painter Aldo Brun{i} was born?",
        "answer": river,
        "supporting_facts": [[f"Aldo Brun{i}", 0], [city, 1]],
        "context": [
            [
                f"Aldo Brun{i}",
                [
                    f"Aldo Brun{i} was a painter born in {city} in {1800 + i}.",
                    " He worked mostly in Lisbon.",
                ],
            ],
            [
                city,
                [
                    f"{city} is a small town in the hills.",
                    f" The {river} flows through {city} before reaching the sea.",
                ],
            ],
        ],
        "type": "bridge",
        "level": "easy",
    }


def hotpot_record_with_more_names(i: int) -> dict[str, Any]:
    """``hotpot_record`` whose knowledge also holds "He worked mostly in Lisbon": two names a
    wrong answer in the right one's form can take, so the two candidates of a seed differ
    and the filter judge is asked (with one, the form guards leave them identical)."""
    record = hotpot_record(i)
    record["supporting_facts"] = [*record["supporting_facts"], [f"Aldo Brun{i}", 1]]
    return record


@pytest.fixture
def hotpot_file(tmp_path: Path) -> Callable[..., Path]:
    def write(n: int, name: str = "seeds.json", *, more_names: bool = False) -> Path:
        path = tmp_path / name
        make = hotpot_record_with_more_names if more_names else hotpot_record
        path.write_bytes(orjson.dumps([make(i) for i in range(n)]))
        return path

    return write
