"""Small stores written row by row: runs, samples, judgements and ledger events, no LLM."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from halugen.records import fingerprint
from halugen.store.db import Store, open_store
from halugen.store.rows import TABLE_COLUMNS

T0 = datetime(2025, 1, 2, 3, 4, 5)

# text that Rich would read as markup or emoji codes, and non-ASCII
TRICKY = "[/] [bold]x[/bold] :ID: café ünïcode"

_PAIR = {
    "qa": ("right_answer", "hallucinated_answer"),
    "dialogue": ("right_response", "hallucinated_response"),
    "summarization": ("right_summary", "hallucinated_summary"),
}
_ITEM_FIELDS = {
    "qa": ("knowledge", "question", "right_answer", "hallucinated_answer"),
    "dialogue": ("knowledge", "dialogue_history", "right_response", "hallucinated_response"),
    "summarization": ("document", "right_summary", "hallucinated_summary"),
}


def insert(store: Store, table: str, values: dict[str, Any]) -> None:
    columns = TABLE_COLUMNS[table]
    values = {"created_at": T0, **values}
    row = [values.get(c) for c in columns]
    store.conn.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
        row,
    )


def add_run(
    store: Store,
    run_id: str,
    *,
    kind: str = "generate",
    model: str = "gpt-4o-mini",
    tasks: str = "qa",
    started: datetime = T0,
    seeds: tuple[str, ...] = ("/home/someone/data/hotpot.json",),
) -> None:
    store.conn.execute(
        "INSERT INTO runs (run_id, kind, config_hash, config_json, tasks, model, base_url, "
        "status, halugen_version, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 'done', '0.1.0', ?, ?)",
        [
            run_id,
            kind,
            fingerprint(run_id),
            orjson.dumps(
                {
                    "seeds": list(seeds),
                    "sampling": [1.0, 256, None],
                    "judge": [0.0, 256, None],
                    "run_seed": 0,
                    "templates": {"qa/filter": "abc123"},
                    "long_documents": "truncate",
                }
            ).decode(),
            tasks,
            model,
            "http://127.0.0.1:1/v1",
            started,
            started,
        ],
    )


def sample_fields(task: str, i: int, text: str = "") -> dict[str, str]:
    if task == "qa":
        return {
            "knowledge": f"Vallona{i} lies on the river Serin{i}. {text}",
            "question": f"Which river flows through Vallona{i}? {text}".strip(),
            "right_answer": f"Serin{i}",
            "hallucinated_answer": f"the Varnel river near Ostra {i}",
        }
    if task == "dialogue":
        return {
            "knowledge": f"Cold Lanterns {i} was written by Ilse Varga {i}",
            "dialogue_history": f"[Human]: Do you know Cold Lanterns {i}? {text}".strip(),
            "right_response": f"Yes, it is a novel by Ilse Varga {i}.",
            "hallucinated_response": f"Yes, it is a film by Marta Olsen {i} from 1984.",
        }
    return {
        "document": f"The council of Brennick{i} voted to rebuild the bridge. {text}",
        "right_summary": f"Brennick{i} will rebuild its bridge.",
        "hallucinated_summary": f"Brennick{i} will demolish its old bridge next year.",
    }


def add_sample(
    store: Store,
    run_id: str,
    task: str,
    i: int,
    *,
    text: str = "",
    dataset: str = "hotpotqa",
    at: datetime = T0,
) -> dict[str, str]:
    fields = sample_fields(task, i, text)
    right, hallucinated = _PAIR[task]
    insert(
        store,
        "sample_rows",
        {
            "run_id": run_id,
            "task": task,
            "seed_key": fingerprint([task, i]),
            "seed_id": f"{task}{i:03d}",
            "dataset": dataset,
            "source_file": "data/hotpot.json",
            "source_line": i + 1,
            "pattern": "factualness",
            "template": "qa/sample_onepass",
            "template_hash": "deadbeef0001",
            "filter_template_hash": "abc123",
            "selected_by": "judge",
            "model": "gpt-4o-mini",
            "length_ratio": len(fields[hallucinated]) / len(fields[right]),
            "created_at": at,
            **fields,
        },
    )
    return fields


def item_key(task: str, fields: dict[str, str]) -> str:
    names = _ITEM_FIELDS[task]
    return fingerprint({"task": task, "fields": {n: fields[n] for n in names}})


def add_judgement(
    store: Store,
    run_id: str,
    task: str,
    fields: dict[str, str],
    *,
    shown: str,
    verdict: str,
    strategy: str = "plain",
    model: str = "gpt-4o-mini",
    raw: str = "Verdict: Yes",
    p_yes: float | None = None,
    at: datetime = T0,
) -> None:
    insert(
        store,
        "judgements",
        {
            "run_id": run_id,
            "task": task,
            "item_key": item_key(task, fields),
            "item_id": "x",
            "strategy": strategy,
            "model": model,
            "shown": shown,
            "truth": shown == "hallucinated",
            "verdict": verdict,
            "p_yes": p_yes,
            "shown_length": 10,
            "raw": raw,
            "call_key": "k",
            "template_hash": "t",
            "created_at": at,
        },
    )


def two_runs_store(path: Path, n: int = 4) -> Store:
    """qa samples of the same seeds from two runs (an edited filter prompt), and one
    dialogue run; ``new`` is the newer qa run."""
    store = open_store(path)
    add_run(store, "old", started=T0)
    add_run(store, "new", started=T0 + timedelta(hours=1), tasks="qa,dialogue")
    for i in range(n):
        add_sample(store, "old", "qa", i)
        add_sample(store, "new", "qa", i, text=TRICKY if i == 0 else "")
    for i in range(n - 1):
        add_sample(store, "new", "dialogue", i, dataset="opendialkg")
    return store
