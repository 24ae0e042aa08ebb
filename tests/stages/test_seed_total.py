"""The live view knows how many seeds a run has before the first one goes out."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, ClassVar, cast

import anyio
import orjson
from rich.console import Console

from halugen import progress
from halugen.config import RateLimit, RetryPolicy, RunConfig
from halugen.engine import generate
from halugen.llm.transport import HandlerTransport
from halugen.records import Seed
from halugen.seeds import read_seeds
from halugen.simulate import SimConfig, Simulator
from halugen.stages.seeds import SeedSource, count_seeds
from tests.conftest import hotpot_record


def _source(path: Path, limit: int | None = None) -> SeedSource:
    return SeedSource(
        task="qa",
        read=lambda: read_seeds([str(path)], "qa"),
        pending=[],
        admitted=cast(Any, set()),  # only read by the stage, never by count_seeds
        bad_seen=set(),
        limit=limit,
    )


def test_count_seeds_counts_what_the_reader_gives(tmp_path: Path) -> None:
    path = tmp_path / "seeds.json"
    records: list[Any] = [hotpot_record(i) for i in range(9)]
    records.insert(4, {"question": "no answer, no context"})  # a bad record is no seed
    path.write_bytes(orjson.dumps(records))
    assert sum(isinstance(s, Seed) for s in read_seeds([str(path)], "qa")) == 9
    assert count_seeds(_source(path)) == 9
    assert count_seeds(_source(path, limit=4)) == 4
    assert count_seeds(_source(path), stop=lambda: True) is None
    # cut short: the records before the break, as the reader gives them
    path.write_bytes(orjson.dumps([hotpot_record(i) for i in range(3)])[:-40])
    assert count_seeds(_source(path)) == 2


class _Watched(progress.ProgressView):
    """The run's view; the test reads it while the first request is at the provider."""

    made: ClassVar[list[progress.ProgressView]] = []

    def __init__(self, **kw: Any) -> None:
        kw["console"] = Console(file=io.StringIO(), width=200)
        super().__init__(**kw)
        _Watched.made.append(self)


def test_the_view_knows_the_total_when_the_first_seed_goes_out(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # More records than the reader takes at once (32) plus what one worker and the seed
    # stream (16) hold: when the first call is made, the reader cannot have reached the end.
    seeds = tmp_path / "seeds.json"
    seeds.write_bytes(orjson.dumps([hotpot_record(i) for i in range(200)]))
    monkeypatch.setattr(progress, "ProgressView", _Watched)
    _Watched.made.clear()
    sim = Simulator(SimConfig())
    seen: list[str] = []

    async def handler(path: str, headers: Any, body: Any) -> Any:
        if not seen:  # the first call of the run: a seed has just been sent on
            seen.append(_Watched.made[0].plain_line())
        return await sim.handle(path, headers, body)

    cfg = RunConfig(
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url="http://sim/v1",
        api_key="k",
        db=tmp_path / "h.duckdb",
        budget_usd=0.002,  # a few calls, then the run stops: the test needs only the first
        progress=False,
        rate=RateLimit(concurrency=1),
        limit=None,
        retry=RetryPolicy(max_attempts=2, base_delay=0.001, max_delay=0.002),
    )
    outcome = anyio.run(lambda: generate(cfg, transport=HandlerTransport(handler)))
    assert outcome.status == "budget_exhausted"
    assert "qa: 0/200 seeds" in seen[0], seen
    assert "/?" not in seen[0]
