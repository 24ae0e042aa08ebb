"""The view's named queries on a simulated run's store: the seed list, every filter, a
seed's story, the money each seed cost (against the simulator's bill), the verify hook."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from halugen.store.db import Store, open_store
from halugen.store.view_queries import (
    SeedFilter,
    verify_available,
    view_facets,
    view_seed,
    view_seeds,
)
from tests.view.simstore import ARTIFACT_SEEDS, SEEDS, SimStore, make_sim_store


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimStore:
    return make_sim_store(tmp_path_factory.mktemp("viewq"))


@pytest.fixture
def store(sim: SimStore) -> Iterator[Store]:
    with open_store(sim.db, read_only=True) as s:
        yield s


def ids(rows: list[dict]) -> set[str]:
    return {r["seed_id"] for r in rows}


REJECTED = {f"rec{i:05d}" for i in ARTIFACT_SEEDS}
ALL = {f"rec{i:05d}" for i in range(SEEDS)}


def test_every_seed_is_listed_with_its_outcome_guards_and_pattern(store: Store) -> None:
    total, rows = view_seeds(store, SeedFilter())
    assert total == SEEDS and ids(rows) == ALL
    for r in rows:
        if r["seed_id"] in REJECTED:
            assert (r["outcome"], r["reason"]) == ("rejected", "no_valid_candidate")
            assert r["guards"] == ["contains_right_answer", "length_class"]
            assert r["pattern"] is None
        else:
            assert r["outcome"] == "sampled" and r["guards"] == []
            assert r["pattern"] in ("comprehension", "factualness", "inference", "specificity")
        assert r["calls"] >= 2 and r["cost_usd"] > 0
        assert "Aldo Brun" in r["preview"]
    # in the order of the seed file
    assert [r["seed_id"] for r in rows] == sorted(ALL)


def test_seed_costs_add_up_to_the_simulators_bill(store: Store, sim: SimStore) -> None:
    _, rows = view_seeds(store, SeedFilter())
    # the probe of the endpoint belongs to no seed
    (unseeded,) = store.query("SELECT COALESCE(sum(cost_usd), 0) FROM calls WHERE seed_key = ''")[0]
    assert sum(r["cost_usd"] for r in rows) + unseeded == pytest.approx(sim.billed_usd, rel=1e-9)
    assert unseeded < sim.billed_usd / 20
    for r in rows:
        story = view_seed(store, r["run_id"], r["task"], r["seed_key"])
        assert story is not None
        assert sum(c["cost_usd"] for c in story["calls"]) == pytest.approx(r["cost_usd"])
        assert len(story["calls"]) == r["calls"]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (SeedFilter(task="qa"), ALL),
        (SeedFilter(task="dialogue"), set()),
        (SeedFilter(outcome="rejected"), REJECTED),
        (SeedFilter(outcome="sampled"), ALL - REJECTED),
        (SeedFilter(guard="contains_right_answer"), REJECTED),  # a candidate's guard
        (SeedFilter(guard="no_valid_candidate"), REJECTED),  # the seed's own reason
        (SeedFilter(guard="length_ratio"), set()),
        (SeedFilter(text="aldo brun3 was"), {"rec00003"}),  # any case, inside the record
        (SeedFilter(text="100%"), set()),  # LIKE's wildcards match themselves
        (SeedFilter(text="Brun_"), set()),
        (SeedFilter(verify="unchecked"), ALL),  # no verify stage ran: nothing is checked
        (SeedFilter(verify="flagged"), set()),
    ],
)
def test_each_filter(store: Store, where: SeedFilter, expected: set[str]) -> None:
    total, rows = view_seeds(store, where)
    assert ids(rows) == expected and total == len(expected)


def test_pattern_run_and_cost_filters(store: Store) -> None:
    _, rows = view_seeds(store, SeedFilter())
    sampled = [r for r in rows if r["pattern"]]
    pattern = sampled[0]["pattern"]
    _, same = view_seeds(store, SeedFilter(pattern=pattern))
    assert ids(same) == {r["seed_id"] for r in sampled if r["pattern"] == pattern}
    run = rows[0]["run_id"]
    assert view_seeds(store, SeedFilter(run_id=run))[0] == SEEDS
    assert view_seeds(store, SeedFilter(run_id="no-such-run"))[0] == 0
    costs = sorted(r["cost_usd"] for r in rows)
    low, high = costs[2], costs[-3]
    _, inside = view_seeds(store, SeedFilter(cost_min=low, cost_max=high))
    assert ids(inside) == {r["seed_id"] for r in rows if low <= r["cost_usd"] <= high}
    assert 0 < len(inside) < SEEDS
    _, dearest = view_seeds(store, SeedFilter(cost_min=costs[-1]))
    assert [r["cost_usd"] for r in dearest] == [costs[-1]] * len(dearest)


def test_pages(store: Store) -> None:
    _, first = view_seeds(store, SeedFilter(), limit=3)
    total, rest = view_seeds(store, SeedFilter(), limit=100, offset=3)
    assert total == SEEDS and len(first) == 3 and len(rest) == SEEDS - 3
    assert ids(first) | ids(rest) == ALL


def test_facets(store: Store) -> None:
    f = view_facets(store)
    assert len(f["runs"]) == 1 and f["runs"][0]["status"] == "done"
    assert f["tasks"] == [{"name": "qa", "n": SEEDS}]
    assert sum(p["n"] for p in f["patterns"]) == SEEDS - len(REJECTED)
    assert {o["name"]: o["n"] for o in f["outcomes"]} == {
        "sampled": SEEDS - len(REJECTED),
        "rejected": len(REJECTED),
    }
    assert {g["name"]: g["n"] for g in f["guards"]} == {
        "contains_right_answer": 2,
        "length_class": 2,
        "no_valid_candidate": 2,
    }
    assert f["verify"] is None
    assert 0 < f["cost"]["min"] < f["cost"]["max"]


def test_a_seeds_story(store: Store) -> None:
    _, rows = view_seeds(store, SeedFilter(outcome="rejected"))
    r = rows[0]
    story = view_seed(store, r["run_id"], r["task"], r["seed_key"])
    assert story is not None
    assert story["sample"] is None and story["decision"] is None
    assert story["seed"]["reason"] == "no_valid_candidate"
    assert '"right_answer"' in story["seed"]["fields_json"]
    assert [c["status"] for c in story["candidates"]] == ["contains_right_answer", "length_class"]
    _, rows = view_seeds(store, SeedFilter(outcome="sampled"))
    r = rows[0]
    story = view_seed(store, r["run_id"], r["task"], r["seed_key"])
    assert story is not None and story["sample"]["pattern"] == r["pattern"]
    assert story["decision"]["chosen"] in [c["idx"] for c in story["candidates"]]
    assert {c["stage"] for c in story["calls"]} >= {"sample"}
    assert view_seed(store, r["run_id"], r["task"], "no-such-key") is None


def test_the_verify_flag_once_a_verify_stage_wrote_its_verdicts(
    sim: SimStore, tmp_path: Path
) -> None:
    db = tmp_path / "verified.duckdb"
    shutil.copy(sim.db, db)
    with duckdb.connect(str(db)) as conn:
        run, task, key = conn.execute(
            "SELECT run_id, task, seed_key FROM sample_rows ORDER BY seed_key LIMIT 1"
        ).fetchone()
        other = conn.execute(
            "SELECT seed_key FROM sample_rows ORDER BY seed_key LIMIT 1 OFFSET 1"
        ).fetchone()[0]
        # what the verify stage writes: a row per check, the label_checks view the latest
        conn.execute(
            "INSERT INTO label_check_rows (run_id, task, seed_key, model, outcome, reason, "
            "created_at) VALUES (?, ?, ?, 'judge', 'flagged', 'right_unsupported', now()), "
            "(?, ?, ?, 'judge', 'passed', NULL, now()), "
            "(?, ?, ?, 'judge', 'call_failed', NULL, now() - INTERVAL 1 HOUR)",
            [run, task, key, run, task, other, run, task, key],
        )
    with open_store(db, read_only=True) as store:
        assert verify_available(store)
        assert view_facets(store)["verify"] == ["flagged", "passed", "unchecked"]
        _, flagged = view_seeds(store, SeedFilter(verify="flagged"))
        assert [(r["seed_key"], r["verify_reason"]) for r in flagged] == [
            (key, "right_unsupported")
        ]
        assert [r["seed_key"] for r in view_seeds(store, SeedFilter(verify="passed"))[1]] == [other]
        assert view_seeds(store, SeedFilter(verify="unchecked"))[0] == SEEDS - 2
        story = view_seed(store, run, task, key)
        assert story is not None
        assert story["verify"] == {"state": "flagged", "reason": "right_unsupported"}
