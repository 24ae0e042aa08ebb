"""The real judge templates through the simulator: replies parse and follow the oracle."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from halugen.evaluate.judge import (
    JUDGE_TASKS,
    judge_template,
    judge_values,
    request_params,
    shown_texts,
    strategies_for,
)
from halugen.evaluate.logprob_verdicts import verdict_from_logprobs
from halugen.evaluate.metrics import Judged, compute
from halugen.evaluate.verdicts import parse_contrast, parse_verdict
from halugen.simulate import SimConfig, Simulator
from tests.task_specs import task_spec

from .test_judge import ITEMS

CASES = [(t, s) for t in JUDGE_TASKS for s in strategies_for(task_spec(t))]


def _ask(sim: Simulator, messages: tuple[dict[str, str], ...], params: dict) -> dict:
    data = orjson.dumps({"model": "sim-model", "messages": list(messages), **params})
    resp = asyncio.run(sim.handle("/v1/chat/completions", {}, data))
    assert resp.status == 200
    (choice,) = orjson.loads(resp.body)["choices"]
    return choice


def _oracle() -> dict[str, bool]:
    oracle: dict[str, bool] = {}
    for task, item in ITEMS.items():
        right, hallucinated = shown_texts(task_spec(item.task), item)
        if task == "general":
            oracle[right] = bool(item.human_label)
        else:
            oracle[right], oracle[hallucinated] = False, True
    return oracle


@pytest.mark.parametrize(("task", "strategy"), CASES)
def test_a_perfect_simulated_judge_scores_one(task: str, strategy: str) -> None:
    sim = Simulator(SimConfig(oracle=_oracle(), judge_accuracy=1.0))
    item = ITEMS[task]
    right, hallucinated = shown_texts(task_spec(item.task), item)
    template = judge_template(task_spec(task), strategy)
    judged = []
    if strategy == "contrast":
        for order, truth_pos in (((hallucinated, right), 1), ((right, hallucinated), 2)):
            values = judge_values(task_spec(task), strategy, item, "", order=order)
            choice = _ask(sim, template.render(values), request_params(strategy))
            pick = parse_contrast(choice["message"]["content"])
            judged.append(Judged(True, "yes" if pick == truth_pos else "no"))
    else:
        shown = (
            [(right, bool(item.human_label))]
            if task == "general"
            else [(right, False), (hallucinated, True)]
        )
        for text, truth in shown:
            values = judge_values(task_spec(task), strategy, item, text)
            params = request_params(strategy, logprobs=True)
            choice = _ask(sim, template.render(values), params)
            verdict = parse_verdict(choice["message"]["content"])
            scored, p_yes = verdict_from_logprobs(choice["logprobs"])
            assert scored == verdict and p_yes is not None
            judged.append(Judged(truth, verdict, len(text)))
    m = compute(judged)
    assert m.invalid == 0 and m.accuracy == 1.0


def test_a_coin_flipping_simulated_judge_is_near_half() -> None:
    # no oracle: the simulator's verdicts are fair coins, so accuracy should be about 0.5
    sim = Simulator(SimConfig())
    template = judge_template(task_spec("qa"), "plain")
    judged = []
    for i in range(300):
        item = ITEMS["qa"]
        text = f"answer number {i}"
        choice = _ask(
            sim,
            template.render(judge_values(task_spec("qa"), "plain", item, text)),
            request_params("plain"),
        )
        judged.append(Judged(i % 2 == 0, parse_verdict(choice["message"]["content"])))
    m = compute(judged)
    assert m.invalid == 0
    assert 0.4 < m.accuracy < 0.6
