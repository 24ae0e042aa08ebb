"""The built-in tasks send the requests they always sent: same messages, same request keys.

``request_keys.json`` was captured from the code before tasks became folders (the qa,
summarization and general entries are still those; the dialogue entries were captured again
when its patterns took HaluEval's meaning, and the contrast judge entries of every task when
contrast took the one reply contract, "Choice: 1|2", for "Hallucinated: 1|2": changes of
templates made on purpose; and when the knowledge_span guard came and the simulator took
its wrong answers from the record: every first ask is unchanged; qa's seeds "1911" and
"2,310 metres", whose knowledge gives no other figure, are asked again and end with no
sample, and "Pecsvar" gets the same candidate from both templates, so no qa filter request
is sent; one dialogue filter request shows the simulator's new candidates): every
request a small run of each built-in task makes (sampling, filtering) and every judge
request of each recognition strategy, as (stage, task, strategy, key, parameters, a hash of
each message), with the template names and hashes that name a run. A store made before
keeps resuming without paying again as long as these match.

Regenerate it only when a template changes on purpose (and say so in the README):
``HALUGEN_WRITE_REQUEST_FIXTURE=1 pytest tests/tasks/test_request_keys.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import anyio
import duckdb
import orjson

from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.engine import generate, load_tasks, template_hashes
from halugen.evaluate.config import EvalConfig
from halugen.evaluate.judge import judge_template, strategies_for
from halugen.evaluate.run import evaluate
from halugen.stages.filter import AGAIN_TEMPLATE
from halugen.tasks.templates import task_template
from tests.task_specs import task_spec

FIXTURE = Path(__file__).with_name("request_keys.json")
WRITE = os.environ.get("HALUGEN_WRITE_REQUEST_FIXTURE") == "1"

# Seeds of our own writing, in HaluEval's layouts (read the same by every version).
SEEDS: dict[str, list[dict[str, str]]] = {
    "qa": [
        {
            "knowledge": "The Orlen Bridge spans the river Tave at Marrow. It opened in 1911.",
            "question": "In which year did the bridge over the Tave at Marrow open?",
            "right_answer": "1911",
        },
        {
            "knowledge": "Ilse Varga wrote the novel Cold Lanterns. Varga was born in Pecsvar.",
            "question": "Where was the author of Cold Lanterns born?",
            "right_answer": "Pecsvar",
        },
        {
            "knowledge": "The Hollin Observatory stands on Mount Ketter, 2,310 metres high.",
            "question": "How high is the mountain the Hollin Observatory stands on?",
            "right_answer": "2,310 metres",
        },
    ],
    "dialogue": [
        {
            "knowledge": "Cold Lanterns written_by Ilse Varga; Ilse Varga wrote The Salt Road",
            "dialogue_history": "[Human]: Do you know the novel Cold Lanterns? [Assistant]: "
            "Yes, it is a mystery. [Human]: Who wrote it?",
            "right_response": "It was written by Ilse Varga, who also wrote The Salt Road.",
        },
        {
            "knowledge": "Marrow Rovers play_in Tave Park; Tave Park capacity 12,000",
            "dialogue_history": "[Human]: I like Marrow Rovers. Where do they play?",
            "right_response": "They play at Tave Park, which holds about 12,000 people.",
        },
        {
            "knowledge": "The Glass Orchard directed_by Peter Lunn; The Glass Orchard genre drama",
            "dialogue_history": "[Human]: Any drama film you would recommend?",
            "right_response": "The Glass Orchard is a fine drama directed by Peter Lunn.",
        },
    ],
    "summarization": [
        {
            "document": "The council of Brennick voted on Tuesday to rebuild the old stone "
            "bridge over the river Olm. The bridge, built in 1821, was closed in March after "
            "inspectors found cracks in two arches. The repair will cost 4.2 million euros.",
            "right_summary": "Brennick will rebuild its 1821 bridge for 4.2 million euros.",
        },
        {
            "document": "A storm cut power to 30,000 homes in the Kessel valley on Sunday. "
            "Crews restored most lines by Monday evening, the utility Norvolt said.",
            "right_summary": "A storm cut power to 30,000 Kessel valley homes; most is back.",
        },
        {
            "document": "The museum of Alder opened a wing for maritime maps on Friday. The "
            "wing holds 400 charts donated by the Hale family.",
            "right_summary": "Alder's museum opened a wing with 400 donated sea charts.",
        },
    ],
}

# Items for the recognition judge, in HaluEval's released layouts.
HALLUCINATED = {
    "qa": ("hallucinated_answer", ["1908", "Tarnow", "1,870 metres"]),
    "dialogue": (
        "hallucinated_response",
        [
            "It was written by Peter Lunn, who also wrote The Salt Road.",
            "They play at Ketter Arena, which holds about 12,000 people.",
            "The Glass Orchard is a fine comedy directed by Peter Lunn.",
        ],
    ),
    "summarization": (
        "hallucinated_summary",
        [
            "Brennick will rebuild its 1851 bridge for 6 million euros.",
            "A flood cut power to 30,000 Kessel valley homes; none is back.",
            "Alder's museum opened a wing with 40 bought sea charts.",
        ],
    ),
}
GENERAL = [
    {
        "ID": "g1",
        "user_query": "Name a moon of Mars.",
        "chatgpt_response": "Phobos is a moon of Mars.",
        "hallucination": "no",
    },
    {
        "ID": "g2",
        "user_query": "Who wrote Hamlet?",
        "chatgpt_response": "Hamlet was written by Christopher Marlowe.",
        "hallucination": "yes",
    },
]


def _config(base_url: str, db: Path, **kw: Any) -> RunConfig:
    return RunConfig(
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="k",
        db=db,
        rate=RateLimit(concurrency=4),
        retry=RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.02),
        timeouts=Timeouts(total=10, read=10),
        progress=False,
        **kw,
    )


def _write_jsonl(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _requests(db: Path, strategy: str = "") -> list[dict[str, Any]]:
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT stage, task, key, request_json FROM calls "
            "WHERE stage IN ('sample', 'filter', 'judge') AND request_json IS NOT NULL"
        ).fetchall()
    out = []
    for stage, task, key, request_json in rows:
        body = orjson.loads(request_json)
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        out.append(
            {
                "stage": stage,
                "task": task,
                "strategy": strategy,
                "key": key,
                "params": params,
                "messages": [[m["role"], _digest(m["content"])] for m in body["messages"]],
            }
        )
    return out


def capture(simulator: Any, tmp_path: Path) -> dict[str, Any]:
    """Every request of a small run of each built-in task and of each judge strategy."""
    sim = simulator()
    requests: list[dict[str, Any]] = []
    templates: dict[str, str] = {}
    for task, seeds in SEEDS.items():
        seed_file = _write_jsonl(tmp_path / f"{task}-seeds.json", seeds)
        db = tmp_path / f"{task}-gen.duckdb"
        outcome = anyio.run(
            lambda task=task, seed_file=seed_file, db=db: generate(
                _config(sim.base_url, db, tasks=(task,), seeds=(str(seed_file),))
            )
        )
        assert outcome.status == "done", outcome.message
        requests += _requests(db)
        templates.update(template_hashes(load_tasks([task_spec(task)])))
        again = task_template(task_spec(task), AGAIN_TEMPLATE)
        templates[again.name] = again.hash
    for task, seeds in SEEDS.items():
        field, wrong = HALLUCINATED[task]
        items = [{**s, field: w} for s, w in zip(seeds, wrong, strict=True)]
        data = _write_jsonl(tmp_path / f"{task}-items.json", items)
        for strategy in strategies_for(task_spec(task)):
            db = tmp_path / f"{task}-{strategy}.duckdb"
            run = _config(sim.base_url, db, tasks=(task,))
            cfg = EvalConfig(run=run, task=task, strategy=strategy, data=(str(data),))
            outcome = anyio.run(lambda cfg=cfg: evaluate(cfg))
            assert outcome.status == "done", outcome.message
            requests += _requests(db, strategy)
            t = judge_template(task_spec(task), strategy)
            templates[t.name] = t.hash
    data = _write_jsonl(tmp_path / "general-items.json", GENERAL)
    for strategy in strategies_for(task_spec("general")):
        db = tmp_path / f"general-{strategy}.duckdb"
        run = _config(sim.base_url, db, tasks=("general",))
        cfg = EvalConfig(run=run, task="general", strategy=strategy, data=(str(data),))
        outcome = anyio.run(lambda cfg=cfg: evaluate(cfg))
        assert outcome.status == "done", outcome.message
        requests += _requests(db, strategy)
        t = judge_template(task_spec("general"), strategy)
        templates[t.name] = t.hash
    requests.sort(key=lambda r: (r["task"], r["stage"], r["strategy"], r["key"]))
    return {"templates": dict(sorted(templates.items())), "requests": requests}


def test_builtin_tasks_send_the_requests_they_always_sent(simulator, tmp_path):
    got = capture(simulator, tmp_path)
    if WRITE:
        FIXTURE.write_text(json.dumps(got, indent=1) + "\n", encoding="utf-8")
    want = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert got["templates"] == want["templates"]
    by_key = {r["key"]: r for r in want["requests"]}
    for r in got["requests"]:
        assert r["key"] in by_key, f"a request that was not sent before: {r}"
        assert r == by_key[r["key"]]
    assert len(got["requests"]) == len(want["requests"])
    assert {r["key"] for r in got["requests"]} == set(by_key)
