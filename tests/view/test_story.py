"""A seed's story as the page gets it: the texts' fields by task, why each candidate was kept
or turned down."""

from __future__ import annotations

from typing import Any

import orjson

from halugen.view.story import seed_story, text_fields


def raw(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "seed": {
            "run_id": "r",
            "task": "qa",
            "seed_key": "k",
            "seed_id": "s1",
            "outcome": "sampled",
            "fields_json": orjson.dumps(
                {"knowledge": "K", "question": "Q?", "right_answer": "Paris"}
            ).decode(),
        },
        "sample": {
            "pattern": "factualness",
            "right_answer": "Paris",
            "hallucinated_answer": "Lyon in France",
            "extra_json": None,
        },
        "candidates": [
            {"idx": 0, "text": "Lyon in France", "pattern": "factualness", "status": "ok"},
            {"idx": 1, "text": "Marseille", "pattern": "comprehension", "status": "ok"},
            {"idx": 2, "text": "Paris!", "status": "contains_right_answer", "detail": "x"},
            {"idx": 3, "text": "", "status": "unparseable"},
            {"idx": 4, "text": "lyon in france", "status": "ok"},
        ],
        "decision": {"shown_order": "[1, 0]", "chosen": 0, "method": "judge", "raw": None},
        "calls": [{"cost_usd": 0.25}, {"cost_usd": 0.5}, {"cost_usd": None}],
        "verify": None,
    }
    base.update(kw)
    return base


def test_fields_of_known_and_unknown_tasks() -> None:
    assert text_fields("dialogue", {}) == ("right_response", "hallucinated_response")
    assert text_fields("no-such-task", {"passages": "p", "right_claim": "a"}) == (
        "right_claim",
        None,
    )


def test_the_pair_is_diffed_and_every_candidate_says_why() -> None:
    story = seed_story(raw())
    assert story["record"]["question"] == "Q?" and "fields_json" not in story["seed"]
    assert story["diff"]["right"] == [["Paris", True]]
    assert story["diff"]["hallucinated"] == [["Lyon in France", True]]
    why = {c["idx"]: (c["verdict"], c["why"]) for c in story["candidates"]}
    assert why[0] == ("kept", "chosen by the filter's judge")
    assert why[1] == ("filter", "the filter's judge chose candidate 1 instead")
    assert why[2] == ("guard", "turned down by the guard contains_right_answer: x")
    assert why[3][0] == "unusable" and "could not be read" in why[3][1]
    assert why[4][0] == "filter" and "same text" in why[4][1]
    assert story["cost_usd"] == 0.75


def test_a_rejected_seed_shows_its_right_text_alone() -> None:
    story = seed_story(raw(sample=None, decision=None))
    assert story["diff"] is None and story["right"] == "Paris"
    assert story["candidates"][0]["why"] == "not judged yet"


def test_a_task_folders_own_fields_come_from_extra_json() -> None:
    seed = dict(raw()["seed"], task="my-claims")
    seed["fields_json"] = orjson.dumps({"right_claim": "It is 330 m tall."}).decode()
    sample = {
        "pattern": "p",
        "extra_json": orjson.dumps(
            {"right_claim": "It is 330 m tall.", "hallucinated_claim": "It is 430 m tall."}
        ).decode(),
    }
    story = seed_story(raw(seed=seed, sample=sample))
    assert story["diff"]["right_field"] == "right_claim"
    assert [t for t, c in story["diff"]["hallucinated"] if c] == ["430"]
