"""Structured outputs end to end: the judge and the filter ask for JSON where the endpoint
has it and for text where it answers 400; each run records which; an unreadable pick is
asked again once, stricter, before the seed is rejected."""

from __future__ import annotations

import orjson

from tests.e2e.test_eval import run_eval, write_qa
from tests.e2e.test_generate import config, query, run


def _formats(db, stage: str) -> list[str]:  # type: ignore[no-untyped-def]
    rows = query(db, f"SELECT request_json, status FROM calls WHERE stage = '{stage}'")
    out = []
    for request_json, status in rows:
        fmt = orjson.loads(request_json).get("response_format")
        out.append(f"{'json' if fmt else 'text'}:{status}")
    return out


def test_filter_asks_for_json_where_supported(simulator, hotpot_file, tmp_path):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(30), db))
    assert outcome.exit_code == 0, outcome.message
    formats = _formats(db, "filter")
    assert formats and set(formats) == {"json:ok"}
    body = orjson.loads(query(db, "SELECT request_json FROM calls WHERE stage = 'filter'")[0][0])
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["choice"]["enum"] == [1, 2]
    assert body["max_tokens"] >= 32  # room for a short reply
    raws = [r[0] for r in query(db, "SELECT raw FROM filter_decisions WHERE method = 'judge'")]
    assert raws and all(orjson.loads(r)["choice"] in (1, 2) for r in raws)
    assert query(db, "SELECT supported, run_id FROM endpoint_capabilities") == [
        (True, outcome.run_id)
    ]


def test_filter_falls_back_to_text_and_asks_an_unreadable_pick_again(
    simulator, hotpot_file, tmp_path
):
    sim = simulator(response_format="400", garbage_rate=0.5)
    db = tmp_path / "h.duckdb"
    outcome = run(config(sim.base_url, hotpot_file(80), db))
    assert outcome.exit_code == 0, outcome.message
    formats = _formats(db, "filter")
    assert formats.count("json:failed") == 1  # the one probe, answered 400
    assert set(formats) - {"json:failed"} == {"text:ok"}
    assert query(db, "SELECT supported FROM endpoint_capabilities") == [(False,)]
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


def test_eval_judges_in_json_or_text_and_the_run_records_which(simulator, tmp_path, capsys):
    data, oracle = write_qa(tmp_path / "qa_data.json", 20)
    for supported in (True, False):
        sim = simulator(oracle=oracle, judge_accuracy=1.0, structured_outputs=supported)
        db = tmp_path / f"{supported}.duckdb"
        outcome = run_eval(sim.base_url, data, db)
        assert outcome.exit_code == 0, outcome.message
        verdicts = dict(
            query(db, "SELECT (verdict = 'yes') = truth, count(*) FROM judgements GROUP BY 1")
        )
        assert verdicts == {True: 20}  # read right either way
        raw = query(db, "SELECT raw FROM judgements LIMIT 1")[0][0]
        assert raw.startswith("{") == supported
        assert query(db, "SELECT supported FROM endpoint_capabilities") == [(supported,)]
        assert any(("JSON" if supported else "text") in n for n in outcome.notes)
