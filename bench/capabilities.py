"""Servers without structured outputs, from the simulator's own bill and counters.

Three figures, each against a simulator playing one kind of server:

1. batch / interactive price: the same seeds with interactive calls and with ``--batch``,
   against a server that ignores ``response_format`` (and one that honours it, for
   comparison); also what the batch bill is without the one interactive probe;
2. the batch-file round trip: ``batch export`` / ``batch import`` once per stage (the engine
   ignores ``response_format``), then ``halugen run``: the requests that run still sends;
3. ``eval`` with default settings against a server that answers a JSON schema with HTTP 500
   (llama-cpp-python): items judged, and the attempts that carried a schema.

    python bench/capabilities.py [--seeds 60]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import write_hotpot
from batch_cost import one

from halugen.cli import main as cli
from halugen.config import RetryPolicy, RunConfig
from halugen.engine import generate
from halugen.evaluate.config import EvalConfig
from halugen.evaluate.run import evaluate
from halugen.llm.transport import HandlerTransport, HttpResponse
from halugen.simulate import SimConfig, Simulator
from halugen.simulate.batch import in_process_handlers


def price_ratio(tmp: Path, n: int) -> None:
    seeds = write_hotpot(tmp / "hotpot.json", n)
    for mode in ("ignore", "honour"):
        runs = {
            batch: one("qa", seeds, tmp / f"{mode}-{batch}.duckdb", batch=batch, budget=50.0,
                       response_format=mode)
            for batch in (False, True)
        }  # fmt: skip
        inter, batch = runs[False], runs[True]
        probe = batch["interactive_billed"]
        print(
            f"response_format {mode}: interactive ${inter['billed']:.6f} "
            f"({inter['billed_requests']} requests), batch ${batch['billed']:.6f} "
            f"({batch['billed_requests'] - batch['interactive_requests']} batch lines + "
            f"{batch['interactive_requests']} probe); batch / interactive "
            f"{batch['billed'] / inter['billed']:.4f}, without the probe "
            f"{(batch['billed'] - probe) / (inter['billed'] - probe):.4f}"
        )


def run_like_vllm(requests: Path, results: Path, response_format: str) -> None:
    sim = Simulator(SimConfig(response_format=response_format))
    out = []
    for raw in requests.read_bytes().splitlines():
        line = orjson.loads(raw)
        resp = anyio.run(sim.handle, "/v1/chat/completions", {}, orjson.dumps(line["body"]))
        rid = uuid.uuid4().hex
        response = {"status_code": 200, "request_id": rid, "body": orjson.loads(resp.body)}
        out.append({"id": rid, "custom_id": line["custom_id"], "response": response})
    results.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in out))


def round_trip(tmp: Path, n: int) -> None:
    seeds = write_hotpot(tmp / "rt.json", n)
    db = tmp / "rt.duckdb"
    args = ["--seeds", str(seeds), "--db", str(db), "--model", "gpt-4o-mini", "--no-progress"]
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    lines = {}
    with quiet[0], quiet[1]:
        for stage in ("sample", "filter"):
            req, res = tmp / f"{stage}.jsonl", tmp / f"{stage}-out.jsonl"
            assert cli(["batch", "export", "--out", str(req), "--stage", stage, *args]) == 0
            lines[stage] = len(req.read_bytes().splitlines())
            run_like_vllm(req, res, "ignore")
            assert cli(["batch", "import", str(res), "--db", str(db), "--price-card", "local"]) == 0
    sim = Simulator(SimConfig(response_format="ignore"))
    post, get = in_process_handlers(sim)
    cfg = RunConfig(seeds=(str(seeds),), model="gpt-4o-mini", base_url="http://sim/v1",
                    api_key="k", db=db, progress=False, price_card="local")  # fmt: skip
    with contextlib.redirect_stderr(io.StringIO()):
        outcome = anyio.run(lambda: generate(cfg, transport=HandlerTransport(post, get)))
    print(
        f"batch files (engine ignores response_format): one export and one import per stage "
        f"({lines['sample']} sample, {lines['filter']} filter lines); then 'run': "
        f"{outcome.status}, {sim.stats(keys=False)['requests']} request(s) sent"
    )


def eval_500(tmp: Path) -> None:
    from tests.e2e.test_eval import write_qa

    data, oracle = write_qa(tmp / "qa.json", 40)
    sim = Simulator(SimConfig(oracle=oracle, judge_accuracy=1.0, response_format="500"))
    with_schema = 0

    async def post(path: str, headers: Mapping[str, str], body: bytes) -> HttpResponse:
        nonlocal with_schema
        with_schema += b'"response_format"' in body
        return await sim.handle(path, headers, body)

    # default settings, except a short backoff so that a retrying client finishes quickly
    run = RunConfig(model="gpt-4o-mini", base_url="http://sim/v1", api_key="k",
                    db=tmp / "e.duckdb", progress=False,
                    retry=RetryPolicy(base_delay=0.001, max_delay=0.002))  # fmt: skip
    ecfg = EvalConfig(run=run, task="qa", data=(str(data),))
    with contextlib.redirect_stderr(io.StringIO()):
        outcome = anyio.run(lambda: evaluate(ecfg, transport=HandlerTransport(post)))
    print(
        f"eval against a server answering a JSON schema with HTTP 500: {outcome.judged} of "
        f"40 items judged; {with_schema} request(s) carried a schema, "
        f"{sim.stats(keys=False)['requests']} requests in all"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        price_ratio(Path(tmp), args.seeds)
        round_trip(Path(tmp), min(args.seeds, 30))
        eval_500(Path(tmp))


if __name__ == "__main__":
    main()
