"""What the batch tests share: a batch clock the test moves, an in-process simulator."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from halugen.llm.transport import HandlerTransport
from halugen.simulate import SimConfig, Simulator
from halugen.simulate.batch import in_process_handlers, with_batch_stats
from halugen.simulate.config import BatchSimConfig
from tests.conftest import hotpot_record


class BatchClock:
    """The simulator's batch clock: each reading moves it ``step`` seconds, unless frozen.

    Frozen, every batch stays where it is (a test can kill or interrupt a run meanwhile);
    running, a batch of ``duration_s`` ends after a few looks at it, without waiting.
    """

    def __init__(self, step: float = 1.0, *, frozen: bool = False) -> None:
        self.t = 0.0
        self.step = step
        self.frozen = frozen
        self.readings = 0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.readings += 1
            if not self.frozen:
                self.t += self.step
            return self.t


@dataclass
class InProcess:
    sim: Simulator
    transport: HandlerTransport
    clock: BatchClock

    def stats(self) -> dict[str, Any]:
        return with_batch_stats(self.sim, self.sim.stats())


def in_process(clock: BatchClock | None = None, **batch: Any) -> InProcess:
    """A simulator with a Batch API, reached without sockets; SimConfig fields in ``sim``."""
    clock = clock or BatchClock()
    sim_kw = batch.pop("sim", {})
    batch.setdefault("duration_s", 3.0)
    sim = Simulator(SimConfig(batch=BatchSimConfig(clock=clock, **batch), **sim_kw))
    post, get = in_process_handlers(sim)
    return InProcess(sim, HandlerTransport(post, get), clock)


def seeds_file(tmp_path: Path, n: int, name: str = "seeds.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps([hotpot_record(i) for i in range(n)]))
    return path
