"""Batch files: export a run's pending requests, run them elsewhere (vLLM-style), import."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from pathlib import Path

import anyio
import duckdb
import orjson
import pytest

from halugen.cli import main
from halugen.simulate import SimConfig, Simulator


def query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def counts(db: Path) -> tuple:
    """What an import may change."""
    return (
        query(db, "SELECT count(*) FROM call_log")[0][0],
        query(db, "SELECT count(*) FROM ledger")[0][0],
    )


def run_like_vllm(
    requests: Path,
    results: Path,
    *,
    fail: Collection[int] = frozenset(),
    response_format: str = "honour",
) -> None:
    """What ``python -m vllm.entrypoints.openai.run_batch -i requests -o results`` writes,
    answered by the simulator: one file, successes and errors, pydantic's full dumps.
    ``response_format``: what the engine does with a JSON schema (SimConfig's)."""
    sim = Simulator(SimConfig(response_format=response_format))
    out = []

    async def answer(body: dict) -> dict:
        resp = await sim.handle("/v1/chat/completions", {}, orjson.dumps(body))
        return orjson.loads(resp.body)

    for n, raw in enumerate(requests.read_bytes().splitlines()):
        line = orjson.loads(raw)
        rid = f"vllm-{uuid.uuid4().hex}"
        if n in fail:
            out.append(
                {
                    "id": rid,
                    "custom_id": line["custom_id"],
                    "response": {"status_code": 400, "request_id": rid, "body": None},
                    "error": {
                        "error": {"message": "prompt too long for this engine", "type": "Bad"}
                    },
                }
            )
            continue
        body = anyio.run(answer, line["body"])
        for choice in body["choices"]:  # the fields vLLM's models add
            choice["message"].update(reasoning_content=None, tool_calls=[])
            choice["stop_reason"] = None
        body["usage"]["prompt_tokens_details"] = None
        body.update(prompt_logprobs=None, kv_transfer_params=None)
        out.append(
            {
                "id": rid,
                "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": f"vllm-batch-{rid}", "body": body},
                "error": None,
            }
        )
    results.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in out))


def run_args(seeds: Path, db: Path) -> list[str]:
    return ["--seeds", str(seeds), "--db", str(db), "--model", "gpt-4o-mini", "--no-progress"]


def export(
    seeds: Path, db: Path, out: Path, stage: str | None = None, flags: tuple[str, ...] = ()
) -> int:
    stage_args = ["--stage", stage] if stage else []
    return main(["batch", "export", "--out", str(out), *stage_args, *flags, *run_args(seeds, db)])


@pytest.mark.parametrize(
    ("engine", "flags", "asked"),
    [
        ("honour", (), "text"),  # no server asked, nothing stored: text, which any engine takes
        ("ignore", (), "text"),  # an engine that ignores response_format
        ("honour", ("--structured", "on"), "JSON"),
    ],
)
def test_a_run_made_entirely_by_another_engine_through_batch_files(
    hotpot_file, tmp_path, simulator, capsys, engine, flags, asked
):
    """One export and one import per stage, then 'halugen run' sends nothing: the filter
    requests never depend on which answers came back first."""
    seeds = hotpot_file(12)
    db = tmp_path / "h.duckdb"
    sample_req, sample_out = tmp_path / "sample.jsonl", tmp_path / "sample-out.jsonl"

    assert export(seeds, db, sample_req, "sample") == 0
    lines = [orjson.loads(x) for x in sample_req.read_bytes().splitlines()]
    assert len(lines) == 24  # two candidates per seed
    assert {x["method"] for x in lines} == {"POST"}
    assert {x["url"] for x in lines} == {"/v1/chat/completions"}
    assert all(len(x["custom_id"]) == 64 for x in lines)  # the request key
    assert query(db, "SELECT count(*) FROM call_log") == [(0,)]  # nothing was sent

    run_like_vllm(sample_req, sample_out, response_format=engine)
    assert main(["batch", "import", str(sample_out), "--db", str(db), "--price-card", "local"]) == 0
    assert "imported 24 answer(s)" in capsys.readouterr().out
    assert query(db, "SELECT status, count(*), sum(cost_pusd) FROM call_log GROUP BY 1") == [
        ("ok", 24, 0)
    ]

    # the next stage: sampling is done, so a sample export says where the work is
    assert export(seeds, db, tmp_path / "x.jsonl", "sample") == 2
    assert "filter" in capsys.readouterr().err
    filter_req, filter_out = tmp_path / "filter.jsonl", tmp_path / "filter-out.jsonl"
    assert export(seeds, db, filter_req, "filter", flags) == 0
    assert f"replies asked for as {asked}" in capsys.readouterr().err  # the export says which
    filter_lines = [orjson.loads(x) for x in filter_req.read_bytes().splitlines()]
    assert 0 < len(filter_lines) <= 12
    formats = {"response_format" in x["body"] for x in filter_lines}
    assert formats == {asked == "JSON"}
    run_like_vllm(filter_req, filter_out, response_format=engine)
    assert main(["batch", "import", str(filter_out), "--db", str(db), "--price-card", "local"]) == 0

    # the same 'halugen run' then finishes from the store: the endpoint sees no request
    sim = simulator()
    code = main(["run", "--base-url", sim.base_url, "--api-key", "k", *run_args(seeds, db)])
    assert code == 0, capsys.readouterr().err
    assert sim.stats(keys=False)["requests"] == 0
    assert query(db, "SELECT count(*) FROM samples") == [(12,)]
    assert export(seeds, db, tmp_path / "y.jsonl") == 0
    assert "nothing to export" in capsys.readouterr().out
    assert query(db, "SELECT count(*) FROM runs") == [(1,)]
    assert query(db, "SELECT count(*) FROM batches WHERE kind = 'export'") == [(2,)]


def test_export_without_a_model_asks_the_server_which_it_serves(
    hotpot_file, tmp_path, simulator, capsys
):
    sim = simulator()  # serves one model, halugen-sim
    seeds, db, out = hotpot_file(3), tmp_path / "h.duckdb", tmp_path / "r.jsonl"
    args = ["batch", "export", "--out", str(out), "--seeds", str(seeds), "--db", str(db)]
    assert main([*args, "--base-url", sim.base_url, "--no-progress"]) == 0
    assert {orjson.loads(x)["body"]["model"] for x in out.read_bytes().splitlines()} == {
        "halugen-sim"
    }
    assert sim.stats(keys=False)["requests"] == 0  # asked GET /models, sent no request


def test_imported_answers_are_priced_from_their_usage(hotpot_file, tmp_path, capsys):
    seeds = hotpot_file(3)
    db = tmp_path / "h.duckdb"
    req, res = tmp_path / "r.jsonl", tmp_path / "o.jsonl"
    assert export(seeds, db, req) == 0
    run_like_vllm(req, res, fail={1})
    args = ["batch", "import", str(res), "--db", str(db), "--price-in", "1", "--price-out", "2"]
    assert main(args) == 0
    rows = query(
        db,
        "SELECT status, prompt_tokens, completion_tokens, cost_pusd FROM call_log ORDER BY status",
    )
    failed = [r for r in rows if r[0] == "failed"]
    ok = [r for r in rows if r[0] == "ok"]
    assert len(failed) == 1 and len(ok) == 5
    for _, p, c, cost in ok:  # $1 / $2 per million tokens
        assert cost == p * 10**6 + c * 2 * 10**6
    spent = query(db, "SELECT sum(pusd) FROM ledger WHERE event = 'settle'")[0][0]
    assert spent == sum(r[3] for r in ok)
    # importing the same file again changes nothing
    before = counts(db)
    assert main(args) == 0
    assert "0 answer(s)" in capsys.readouterr().out
    assert counts(db) == before


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def _write(path: Path, lines: list) -> None:
    path.write_bytes(
        b"".join((x if isinstance(x, bytes) else orjson.dumps(x)) + b"\n" for x in lines)
    )


@pytest.mark.parametrize(
    ("spoil", "words"),
    [
        (lambda ls: ls.__setitem__(2, b"{not json"), "line 3: not a JSON object"),
        (
            lambda ls: ls[1].__setitem__("custom_id", "f" * 64),
            "line 2: custom_id 'ffffffffffffffffffffffff' is not a request",
        ),
        (lambda ls: ls[3]["response"]["body"].__setitem__("model", "llama-3-8b"), "line 4"),
        (
            lambda ls: ls[0].__setitem__("body", {"model": "gpt-4o-mini", "messages": []}),
            "line 1: the request in the line is not the one exported",
        ),
        (lambda ls: ls.append(dict(ls[0])), "line 7: custom_id"),
        (lambda ls: ls[4]["response"].__setitem__("body", {"choices": []}), "line 5: status 200"),
    ],
)
def test_import_refuses_a_bad_file_naming_the_line_and_changes_nothing(
    spoil, words, hotpot_file, tmp_path, capsys
):
    seeds = hotpot_file(3)
    db = tmp_path / "h.duckdb"
    req, res = tmp_path / "r.jsonl", tmp_path / "o.jsonl"
    assert export(seeds, db, req) == 0
    run_like_vllm(req, res)
    lines: list = _lines(res)
    assert len(lines) == 6
    spoil(lines)
    _write(res, lines)
    before = counts(db)
    assert main(["batch", "import", str(res), "--db", str(db), "--price-card", "local"]) == 2
    message = capsys.readouterr().err
    assert words in message and str(res) in message
    assert len(message.strip().splitlines()) == 1  # one line, no traceback
    assert counts(db) == before  # nothing stored changed


def test_export_without_seeds_and_import_of_a_missing_file_are_usage_errors(tmp_path, capsys):
    assert main(["batch", "export", "--out", str(tmp_path / "x"), "--db", str(tmp_path / "d")]) == 2
    assert "--seeds" in capsys.readouterr().err
    code = main(["batch", "import", str(tmp_path / "none.jsonl"), "--db", str(tmp_path / "d")])
    assert code == 2
    assert "cannot read" in capsys.readouterr().err


def test_an_export_fits_records_to_the_window_the_run_worked_with(simulator, tmp_path, capsys):
    """An export whose server is not running (the engine runs offline) fits the records as
    the run did before, so its requests are the ones the run sends against that server."""
    from tests.e2e.test_tasks import write_articles

    sim = simulator(context_window=2048, announce_window="models")
    articles = write_articles(tmp_path / "a.csv", 4, repeat=20)  # ~2,400 tokens each
    db, ref, out = tmp_path / "h.duckdb", tmp_path / "ref.duckdb", tmp_path / "r.jsonl"
    common = ["--task", "summarization", "--seeds", str(articles), "--model", "halugen-sim",
              "--price-card", "local", "--no-progress"]  # fmt: skip
    server = ["--base-url", sim.base_url, "--api-key", "k"]
    assert main(["run", *common, *server, "--db", str(db), "--limit", "1"]) == 0
    offline = ["--base-url", "http://127.0.0.1:9/v1"]  # the same kind of server, not running
    assert main(["batch", "export", "--out", str(out), "--stage", "sample", *common, *offline,
                 "--db", str(db)]) == 0  # fmt: skip
    exported = {orjson.loads(x)["custom_id"] for x in out.read_bytes().splitlines()}
    assert len(exported) == 6  # the three seeds left, two candidates each
    # the same seeds run against the server from the start make the same requests
    assert main(["run", *common, *server, "--db", str(ref)]) == 0
    sent = {r[0] for r in query(ref, "SELECT key FROM calls WHERE stage = 'sample'")}
    assert exported <= sent
    assert query(db, "SELECT count(*) FROM seeds WHERE truncated_tokens > 0") == [(4,)]
