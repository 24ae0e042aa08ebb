"""A small store of a simulated generation run: some seeds sampled, some turned down by the
guards (their candidates hold the right answer, or leave its length class)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson

from halugen.engine import generate
from halugen.llm.transport import HandlerTransport
from halugen.simulate import SimConfig, Simulator
from tests.conftest import hotpot_record
from tests.e2e.test_generate import config

RIGHT = re.compile(r"^Right answer: (.*)$", re.MULTILINE)
SEEDS = 8
# the seeds whose candidates the guards turn down (their records' painters, Aldo Brun<i>)
ARTIFACT_SEEDS = (1, 4)
# a record whose question holds markup and a word longer than a phone's width: the page
# must show both as text, and wrap the word
TRICKY_SEED = 2
TRICKY_QUESTION = (
    "<img src=x onerror=alert(1)><b>Which</b> river flows through the town where the painter "
    "Aldo Brun2 was born? " + "Serin2" * 20
)


@dataclass
class SimStore:
    db: Path
    billed_usd: float  # what the simulator billed for the whole run
    seeds: list[dict[str, Any]]  # the records, in file order


def _artifacts_for_some(sim: Simulator) -> HandlerTransport:
    """The simulator, except that for the seeds of ARTIFACT_SEEDS the sampling replies are
    artifacts the guards stop (the right answer inside; five words for one)."""
    marks = tuple(f"Aldo Brun{i} was" for i in ARTIFACT_SEEDS)

    async def handle(path: str, headers: Any, body: bytes) -> Any:
        request = orjson.loads(body)
        last = request["messages"][-1]["content"]
        prompt = " ".join(str(m["content"]) for m in request["messages"])
        m = RIGHT.search(last)
        if not (m and "Pattern:" in last and any(mark in prompt for mark in marks)):
            return await sim.handle(path, headers, body)
        onepass = len(request["messages"]) <= 2
        answer = f"{m.group(1)} and the sea" if onepass else "a painter from the hills"
        response = await sim.handle(path, headers, body)
        payload = orjson.loads(response.body)
        payload["choices"][0]["message"]["content"] = f"Pattern: specificity\nAnswer: {answer}"
        return type(response)(response.status, response.headers, orjson.dumps(payload))

    return HandlerTransport(handle)


def make_sim_store(folder: Path, n: int = SEEDS) -> SimStore:
    records = [hotpot_record(i) for i in range(n)]
    if n > TRICKY_SEED:
        records[TRICKY_SEED]["question"] = TRICKY_QUESTION
    seeds = folder / "seeds.json"
    seeds.write_bytes(orjson.dumps(records))
    db = folder / "view.duckdb"
    sim = Simulator(SimConfig())
    cfg = config("http://sim/v1", seeds, db)
    outcome = anyio.run(lambda: generate(cfg, transport=_artifacts_for_some(sim)))
    assert outcome.exit_code == 0, outcome.message
    return SimStore(db, sim.stats()["billed_usd"], records)
