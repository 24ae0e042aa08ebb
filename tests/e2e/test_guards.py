"""Guards against artifacts, end to end: a model whose hallucinations hold the right answer
(or leave its length class) produces no data, and ``status`` counts every reason."""

from __future__ import annotations

import re
from dataclasses import replace

import anyio
import orjson
import pytest

from halugen.cli import main
from halugen.engine import generate
from halugen.llm.transport import HandlerTransport
from halugen.records import Seed
from halugen.simulate import SimConfig, Simulator
from halugen.stages.context import GenContext
from halugen.stages.follow_ups import load_follow_ups
from halugen.stages.sample import sample_seed
from halugen.store.rows import table_of
from halugen.tasks.loaded import LoadedTask
from tests.e2e.test_generate import config, query
from tests.task_specs import task_spec

RIGHT = re.compile(r"^Right answer: (.*)$", re.MULTILINE)


def _prompt_at(messages: list[dict]) -> int:
    """Where the sampling prompt (the record) is: the last user turn that names the right
    answer (a re-ask after a guard's rejection appends the rejected reply and a follow-up)."""
    found = [
        i for i, m in enumerate(messages) if m["role"] == "user" and RIGHT.search(m["content"])
    ]
    return found[-1] if found else len(messages) - 1


def artifact_model(sim: Simulator):  # type: ignore[no-untyped-def]
    """The simulator, except that sampling replies are the artifacts the guards must stop:
    the one-pass reply holds the right answer, the conversational one has five words where
    the right one has one."""

    async def handle(path: str, headers: dict, body: bytes):  # type: ignore[no-untyped-def]
        request = orjson.loads(body)
        at = _prompt_at(request["messages"])
        last = request["messages"][at]["content"]
        m = RIGHT.search(last)
        if m and "Pattern:" in last:
            onepass = at <= 1
            answer = (
                f"{m.group(1)} and George Frederick Ernest Albert"
                if onepass
                else "a painter from the hills"
            )
            response = await sim.handle(path, headers, body)
            payload = orjson.loads(response.body)
            payload["choices"][0]["message"]["content"] = f"Pattern: specificity\nAnswer: {answer}"
            return type(response)(response.status, response.headers, orjson.dumps(payload))
        return await sim.handle(path, headers, body)

    return HandlerTransport(handle)


def test_answers_holding_the_right_one_or_out_of_class_never_become_data(
    hotpot_file, tmp_path, capsys
):
    db = tmp_path / "h.duckdb"
    sim = Simulator(SimConfig())
    cfg = config("http://sim/v1", hotpot_file(6), db)
    outcome = anyio.run(lambda: generate(cfg, transport=artifact_model(sim)))
    assert outcome.exit_code == 0, outcome.message
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 0
    statuses = dict(query(db, "SELECT status, count(*) FROM candidates GROUP BY 1"))
    assert statuses == {"contains_right_answer": 6, "length_class": 6}
    reasons = dict(query(db, "SELECT reason, count(*) FROM seed_progress GROUP BY 1"))
    assert reasons == {"no_valid_candidate": 6}
    capsys.readouterr()
    assert main(["status", "--db", str(db)]) == 0
    printed = capsys.readouterr().out
    assert "Rejections" in printed
    for reason in ("contains_right_answer", "length_class", "no_valid_candidate"):
        assert reason in printed


class _Writer:
    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def put(self, rows: list[tuple]) -> None:
        self.rows.extend(rows)


def test_a_resumed_candidate_is_checked_again_under_todays_guards() -> None:
    spec = task_spec("qa")
    fields = {"knowledge": "K", "question": "When?", "right_answer": "1865"}
    seed = Seed(task="qa", fields=fields, seed_id="s1")
    # stored by an older session, before containment was a guard: status "ok"
    stored = [
        (0, "qa/sample_onepass", "h", "k0", "1865 and 1866", "specificity", "ok", "", "raw"),
        (1, "qa/sample_conversation", "h", "k1", "1872", "factualness", "ok", "", "raw"),
    ]
    writer = _Writer()
    ctx = GenContext.__new__(GenContext)
    ctx.tasks = {"qa": LoadedTask(spec=spec, sample_templates=(None, None), filter_template=None)}  # type: ignore[arg-type]
    ctx.resumed_candidates = {seed.key: stored}
    ctx.writer = writer  # type: ignore[assignment]
    ctx.run_id = "r"
    got = anyio.run(sample_seed, ctx, seed)
    assert [(c.text, c.status) for c in got] == [
        ("1865 and 1866", "contains_right_answer"),
        ("1872", "ok"),
    ]
    # the new status is stored, so status counts it; the unchanged one is not rewritten
    assert [(table_of(r), r.idx, r.status) for r in writer.rows] == [
        ("candidates", 0, "contains_right_answer")
    ]


def once_out_of_form_model(sim: Simulator, seen: dict[str, int]):  # type: ignore[no-untyped-def]
    """The simulator, except that the first ask for each candidate is answered in lower
    case where the right answer is capitalised (out of form), every later ask in form."""

    async def handle(path: str, headers: dict, body: bytes):  # type: ignore[no-untyped-def]
        request = orjson.loads(body)
        last = request["messages"][_prompt_at(request["messages"])]["content"]
        m = RIGHT.search(last)
        if m and "Pattern:" in last:
            key = last  # a re-ask carries the same prompt, then the rejected reply
            seen[key] = seen.get(key, 0) + 1
            wrong = m.group(1).replace("Serin", "Vallona")  # another name of the knowledge
            answer = wrong.lower() if seen[key] == 1 else wrong
            response = await sim.handle(path, headers, body)
            payload = orjson.loads(response.body)
            payload["choices"][0]["message"]["content"] = f"Pattern: factualness\nAnswer: {answer}"
            return type(response)(response.status, response.headers, orjson.dumps(payload))
        return await sim.handle(path, headers, body)

    return HandlerTransport(handle)


@pytest.mark.parametrize("reask", ["resample", "explain"])
def test_a_candidate_out_of_form_is_asked_for_again_and_kept_when_in_form(
    hotpot_file, tmp_path, reask
):
    db = tmp_path / "h.duckdb"
    sim = Simulator(SimConfig())
    seen: dict[str, int] = {}
    cfg = config("http://sim/v1", hotpot_file(4), db)
    cfg = replace(cfg, sampling=replace(cfg.sampling, reask=reask))
    outcome = anyio.run(lambda: generate(cfg, transport=once_out_of_form_model(sim, seen)))
    assert outcome.exit_code == 0, outcome.message
    assert query(db, "SELECT count(*) FROM samples")[0][0] == 4
    rows = query(db, "SELECT status, text, detail FROM candidates")
    assert len(rows) == 8 and {r[0] for r in rows} == {"ok"}
    assert {r[2] for r in rows} == {"asked again after: casing"}
    assert all(r[1].startswith("Vallona") for r in rows)
    # two asks per candidate, each a call of its own within the run's budget
    assert query(db, "SELECT count(*) FROM call_log WHERE stage = 'sample'")[0][0] == 16
    # with --reask explain, the second ask carries the rejected reply, then a line naming
    # the guard that failed; by default it is the first ask again, with another seed
    bodies = [orjson.loads(r[0]) for r in query(db, "SELECT request_json FROM call_requests")]
    reasks = [
        b["messages"][-2:]
        for b in bodies
        if b["messages"][-1]["role"] == "user"
        and b["messages"][-2]["role"] == "assistant"
        and "Right answer" not in b["messages"][-1]["content"]
    ]
    assert len(reasks) == (8 if reask == "explain" else 0)
    line = load_follow_ups().text("casing")
    for reply, follow_up in reasks:
        assert reply["content"].startswith("Pattern: factualness\nAnswer: vallona")
        assert follow_up["content"] == line and "Capitalise" in line
    assert sorted(seen.values()) == [2] * 8


def test_explaining_re_asks_stay_within_the_budget_the_provider_bills(hotpot_file, tmp_path):
    """A re-ask that carries the rejected reply is longer than the first ask: its reservation
    counts both extra turns, so a tight budget is never exceeded on the provider's own bill."""
    sim = Simulator(SimConfig())
    free = tmp_path / "free.duckdb"
    cfg = config("http://sim/v1", hotpot_file(8), free)
    cfg = replace(cfg, sampling=replace(cfg.sampling, reask="explain"))
    outcome = anyio.run(lambda: generate(cfg, transport=once_out_of_form_model(sim, {})))
    assert outcome.exit_code == 0, outcome.message
    whole = sim.stats(keys=False)["billed_usd"]
    assert whole > 0

    sim = Simulator(SimConfig())
    db = tmp_path / "tight.duckdb"
    budget = whole / 2
    tight = replace(cfg, db=db, budget_usd=budget)
    outcome = anyio.run(lambda: generate(tight, transport=once_out_of_form_model(sim, {})))
    assert outcome.status == "budget_exhausted", outcome.message
    billed = sim.stats(keys=False)["billed_usd"]
    (spent,) = query(db, "SELECT spent_usd FROM run_spend")[0]
    assert billed <= budget + 1e-12
    assert abs(spent - billed) <= 1e-9  # halugen's figure is the provider's bill
