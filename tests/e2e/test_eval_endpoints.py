"""Eval against endpoints that cannot do what was asked, and with nothing to judge."""

from __future__ import annotations

from pathlib import Path

import anyio
import duckdb
import orjson

from halugen.cli import main
from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.evaluate.config import EvalConfig
from halugen.evaluate.run import evaluate
from halugen.llm.transport import HandlerTransport, HttpResponse
from halugen.simulate import SimConfig, Simulator
from tests.e2e.test_eval import write_qa


def _no_logprobs_server(mode: str) -> tuple[HandlerTransport, dict[str, int]]:
    """The simulator behind a front that refuses (HTTP 500) or ignores ``logprobs``."""
    sim = Simulator(SimConfig())
    seen = {"with_logprobs": 0}

    async def handle(path: str, headers, body: bytes) -> HttpResponse:
        data = orjson.loads(body)
        if data.get("logprobs"):
            seen["with_logprobs"] += 1
            if mode == "refuse":
                return HttpResponse(500, {}, b'{"error": {"message": "internal error"}}')
            data.pop("logprobs")
            data.pop("top_logprobs", None)
            body = orjson.dumps(data)
        return await sim.handle(path, headers, body)

    async def get(path: str, headers) -> HttpResponse:
        return HttpResponse(200, {}, orjson.dumps(sim.models()))

    return HandlerTransport(handle, get), seen


def _cfg(db: Path, data: Path) -> EvalConfig:
    run = RunConfig(
        model="gpt-4o-mini",
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        db=db,
        rate=RateLimit(concurrency=8),
        retry=RetryPolicy(max_attempts=8, base_delay=0.001, max_delay=0.002),
        timeouts=Timeouts(total=5, read=5),
        progress=False,
    )
    return EvalConfig(run=run, task="qa", data=(str(data),), scoring="logprobs")


def test_a_server_that_refuses_logprobs_stops_before_the_first_item(tmp_path):
    data, _ = write_qa(tmp_path / "qa.jsonl", 30)
    for mode in ("refuse", "ignore"):
        transport, seen = _no_logprobs_server(mode)
        cfg = _cfg(tmp_path / f"{mode}.duckdb", data)
        outcome = anyio.run(lambda cfg=cfg, t=transport: evaluate(cfg, transport=t))
        assert outcome.exit_code != 0, outcome.message
        assert "gives no logprobs" in outcome.message and "--scoring parse" in outcome.message
        assert "done" not in outcome.message
        # found out by the probe before any item: one request with logprobs where they are
        # ignored; where they get a 500, that 500 once more after the plain probe was
        # answered (a passing fault is not taken for a refusal); never retried 8 times
        assert seen["with_logprobs"] == (2 if mode == "refuse" else 1)
        db = tmp_path / f"{mode}.duckdb"
        with duckdb.connect(str(db), read_only=True) as conn:
            stages = conn.execute("SELECT DISTINCT stage FROM calls").fetchall()
        assert stages == [("probe",)]  # no item was asked


def test_eval_with_nothing_to_judge_says_so(tmp_path, capsys, simulator):
    sim = simulator()
    code = main(["eval", "-t", "qa", "--db", str(tmp_path / "empty.duckdb"), "--base-url",
                 sim.base_url, "-m", "gpt-4o-mini", "--api-key", "k", "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert "nothing to judge" in err
    assert sim.stats(keys=False)["requests"] == 0
