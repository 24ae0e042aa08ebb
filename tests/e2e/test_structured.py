"""Structured outputs end to end, against each kind of server: one that honours
``response_format``, one that ignores it, one that refuses it with a 400 and one that refuses
it with a 500 (llama-cpp-python). The question is settled by one probe before the first
request that depends on it, stored, and reused; no request body depends on completion order;
an unreadable pick is asked again once, stricter, before the seed is rejected."""

from __future__ import annotations

from pathlib import Path

import anyio
import orjson
import pytest

from halugen.cli import main
from halugen.config import RateLimit, RetryPolicy
from halugen.engine import generate
from tests.e2e.test_eval import run_eval, write_qa
from tests.e2e.test_generate import config, query, run


def _formats(db: Path, stage: str) -> list[str]:
    rows = query(
        db,
        f"SELECT request_json, status FROM calls WHERE stage = '{stage}' "
        "AND request_json IS NOT NULL",  # a cached call sends nothing
    )
    out = []
    for request_json, status in rows:
        fmt = orjson.loads(request_json).get("response_format")
        out.append(f"{'json' if fmt else 'text'}:{status}")
    return out


def _probes(db: Path) -> list[tuple[str, str, int | None]]:
    """The probe calls: (json or text, status, HTTP status)."""
    rows = query(
        db,
        "SELECT request_json, status, http_status FROM calls WHERE stage = 'probe' "
        "ORDER BY call_id",
    )
    return [
        ("json" if orjson.loads(r).get("response_format") else "text", s, h) for r, s, h in rows
    ]


def test_filter_asks_for_json_where_supported(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(30), db))
    assert outcome.exit_code == 0, outcome.message
    formats = _formats(db, "filter")
    assert formats and set(formats) == {"json:ok"}
    assert _probes(db) == [("json", "ok", 200)]  # one probe, before the first filter request
    body = orjson.loads(query(db, "SELECT request_json FROM calls WHERE stage = 'filter'")[0][0])
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["choice"]["enum"] == [1, 2]
    assert body["max_tokens"] >= 32  # room for a short reply
    raws = [r[0] for r in query(db, "SELECT raw FROM filter_decisions WHERE method = 'judge'")]
    assert raws and all(orjson.loads(r)["choice"] in (1, 2) for r in raws)
    assert query(db, "SELECT supported, source, run_id FROM endpoint_capabilities") == [
        (True, "probe", outcome.run_id)
    ]
    assert any("JSON" in n for n in outcome.notes)


@pytest.mark.parametrize(
    ("mode", "probes"),
    [
        ("ignore", [("json", "ok", 200)]),  # answered in text: ignored
        ("400", [("json", "failed", 400)]),
        # the plain twin answered, and the feature got the same 500 again
        ("500", [("json", "failed", 500), ("text", "ok", 200), ("json", "failed", 500)]),
    ],
)
def test_every_filter_request_is_text_where_the_server_has_no_structured_outputs(
    simulator, hotpot_file, tmp_path, mode, probes
):
    sim = simulator(response_format=mode)
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(30), db))
    assert outcome.exit_code == 0, outcome.message
    assert set(_formats(db, "filter")) == {"text:ok"}  # none with a schema, none twice
    assert _probes(db) == probes  # one attempt at the feature, never eight
    assert query(db, "SELECT supported, source FROM endpoint_capabilities") == [(False, "probe")]
    assert any("text" in n for n in outcome.notes)


def test_an_unreadable_pick_is_asked_again_once_stricter(simulator, hotpot_file, tmp_path):
    sim = simulator(response_format="400", garbage_rate=0.5)
    db = tmp_path / "h.duckdb"
    # enough seeds that some filter picks are garbled: most pairs never reach the judge
    # (one candidate garbled too, or both the same), and which do is fixed by the keys
    outcome = run(config(sim.base_url, hotpot_file(160), db))
    assert outcome.exit_code == 0, outcome.message
    methods = dict(query(db, "SELECT method, count(*) FROM filter_decisions GROUP BY 1"))
    assert methods.get("judge_again", 0) > 0  # an unreadable pick asked again, then read
    again = query(
        db,
        "SELECT f.detail, f.raw, s.seed_key IS NOT NULL FROM filter_decisions f "
        "LEFT JOIN samples s USING (run_id, seed_key) WHERE f.method = 'judge_again'",
    )
    for first, second, sampled in again:
        assert first and "Choice:" not in first  # the first reply named nothing
        assert second.startswith("Choice:") and sampled
    # the follow-up is one more turn of the same conversation
    requests = [
        orjson.loads(r[0])["messages"]
        for r in query(db, "SELECT request_json FROM calls WHERE stage = 'filter'")
    ]
    again_asked = [m for m in requests if "did not name exactly one answer" in m[-1]["content"]]
    assert len(again_asked) >= methods["judge_again"]
    firsts = {orjson.dumps(m) for m in requests if m not in again_asked}
    for m in again_asked:  # the first request, the judge's reply, the stricter instruction
        assert m[-2]["role"] == "assistant" and orjson.dumps(m[:-2]) in firsts
    # seeds whose second reply was unreadable too are rejected, never data
    unreadable = query(
        db,
        "SELECT count(*) FROM seed_progress WHERE reason = 'judge_unparseable'",
    )[0][0]
    assert unreadable == methods.get("unparseable", 0)


def test_eval_judges_in_json_or_text_and_the_run_records_which(simulator, tmp_path):
    data, oracle = write_qa(tmp_path / "qa_data.json", 20)
    for mode, supported in (("honour", True), ("400", False), ("ignore", False)):
        sim = simulator(oracle=oracle, judge_accuracy=1.0, response_format=mode)
        db = tmp_path / f"{mode}.duckdb"
        outcome = run_eval(sim.base_url, data, db)
        assert outcome.exit_code == 0, outcome.message
        verdicts = dict(
            query(db, "SELECT (verdict = 'yes') = truth, count(*) FROM judgements GROUP BY 1")
        )
        assert verdicts == {True: 20}  # read right either way
        raws = [r[0] for r in query(db, "SELECT raw FROM judgements")]
        assert all(raw.startswith("{") == supported for raw in raws)
        assert query(db, "SELECT supported FROM endpoint_capabilities") == [(supported,)]
        assert any(("JSON" if supported else "text") in n for n in outcome.notes)


def test_eval_with_default_settings_judges_every_item_on_a_server_that_answers_500(
    simulator, tmp_path, capsys
):
    """llama-cpp-python answers a JSON schema with HTTP 500: one probe finds it out (its plain
    twin and one more try tell it from a failing server); every item is then judged in text."""
    data, oracle = write_qa(tmp_path / "qa_data.json", 20)
    sim = simulator(oracle=oracle, judge_accuracy=1.0, response_format="500")
    db = tmp_path / "h.duckdb"
    args = ["eval", "--task", "qa", "--data", str(data), "--db", str(db), "--no-progress"]
    code = main([*args, "--base-url", sim.base_url, "--api-key", "k"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "with halugen-sim)" in err.splitlines()[0]  # the model the server lists, named
    assert query(db, "SELECT count(*) FROM judgements") == [(20,)]
    stats = sim.stats(keys=False)
    assert stats["by_status"] == {500: 2, 200: 21}  # the probe's 3, 20 items: no retry at all
    assert _probes(db) == [("json", "failed", 500), ("text", "ok", 200), ("json", "failed", 500)]


def test_the_probe_is_sent_once_per_endpoint_and_model_across_sessions_and_commands(
    simulator, hotpot_file, tmp_path
):
    sim = simulator(response_format="ignore")
    db = tmp_path / "h.duckdb"
    seeds = hotpot_file(40)  # some seeds get two different candidates: the filter runs, and probes
    first = run(config(sim.base_url, seeds, db))
    assert first.exit_code == 0, first.message
    second = run(config(sim.base_url, seeds, db, fresh=True))  # another run, same endpoint
    assert second.exit_code == 0 and second.run_id != first.run_id
    data, _ = write_qa(tmp_path / "qa_data.json", 5)
    assert run_eval(sim.base_url, data, db).exit_code == 0
    assert len(_probes(db)) == 1
    sources = query(
        db, "SELECT run_id, source, supported FROM endpoint_capabilities ORDER BY created_at"
    )
    assert [s for _, s, _ in sources] == ["probe", "stored", "stored"]
    assert {sup for _, _, sup in sources} == {False}
    assert set(_formats(db, "filter")) == {"text:ok"}


def _bodies(db: Path) -> set[bytes]:
    """The request bodies that were answered, of the stages that make the samples."""
    return {
        orjson.dumps(orjson.loads(r[0]), option=orjson.OPT_SORT_KEYS)
        for r in query(
            db,
            "SELECT request_json FROM calls WHERE stage IN ('sample', 'filter') AND status = 'ok'",
        )
    }


def _samples(db: Path) -> list[tuple]:
    return query(
        db,
        "SELECT seed_id, pattern, hallucinated_answer, selected_by FROM samples ORDER BY seed_id",
    )


def test_a_storm_then_a_rerun_makes_the_fault_free_samples_with_the_same_bodies(
    simulator, hotpot_file, tmp_path
):
    """Against a server that ignores response_format, faults reorder the replies; what is
    asked must not depend on that order."""
    seeds = hotpot_file(40)
    clean_db, storm_db = tmp_path / "clean.duckdb", tmp_path / "storm.duckdb"
    clean = simulator(response_format="ignore")
    done = anyio.run(lambda: generate(config(clean.base_url, seeds, clean_db)))
    assert done.status == "done", done.message

    stormy = simulator(
        response_format="ignore",
        fail_rate=0.4,
        faults=("503", "429", "malformed", "drop"),
        jitter_ms=5,
    )
    storm = config(
        stormy.base_url,
        seeds,
        storm_db,
        retry=RetryPolicy(max_attempts=2, base_delay=0.001, max_delay=0.002),
        rate=RateLimit(concurrency=8),
    )
    first = anyio.run(lambda: generate(storm))
    assert first.status == "incomplete", first.message  # some seeds failed on call errors
    assert stormy.stats()["faults"]
    healthy = simulator(response_format="ignore")
    second = anyio.run(lambda: generate(config(healthy.base_url, seeds, storm_db)))
    assert second.status == "done" and second.run_id == first.run_id, second.message

    assert _samples(storm_db) == _samples(clean_db)
    assert _bodies(storm_db) == _bodies(clean_db)
    assert set(_formats(storm_db, "filter")) <= {"text:ok", "text:failed"}
