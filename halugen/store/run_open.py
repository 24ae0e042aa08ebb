"""Named state changes at the start of a session: find, resume or create the run whose
settings have a given fingerprint, and count the reservations a dead session left open as
spent; and the seeds a resumed run still owes, as records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ..errors import UsageError
from ..records import Seed, fingerprint
from ..version import __version__
from .db import Store
from .rows import LedgerRow

__all__ = ["OnOpen", "mark_lost_reservations", "open_run", "pending_seeds"]

# What a caller does with its run once it has it, before anything is sent: (store, run id,
# resumed). A generation run records the stamps of the files it reads, or checks them on
# resume (``seeds.stamps``).
OnOpen = Callable[[Store, str, bool], None]


def open_run(
    store: Store,
    *,
    run_id: str | None,
    fresh: bool,
    kind: str,
    identity: dict[str, Any],
    tasks: str,
    model: str,
    endpoint: str,
    price: dict[str, Any],
    budget: int | None,
    on_open: OnOpen | None = None,
) -> tuple[str, bool]:
    """(run id, resumed): the run ``run_id`` names (its settings must be ``identity``), else
    the latest run of ``kind`` with these settings unless ``fresh``, else a new one. A
    resumed run is marked running again with today's ``price`` and ``budget``."""
    config_hash = fingerprint(identity)
    run = None
    if run_id:
        run = store.get_run(run_id)
        if run is None:
            raise UsageError(f"no run {run_id!r} in {store.path} (see 'halugen status')")
        if run["config_hash"] != config_hash or run["kind"] != kind:
            raise UsageError(
                f"run {run_id} was made with other settings (task, inputs, model, prompts "
                f"or sampling); repeat its settings, or start a new run with --fresh"
            )
    elif not fresh:
        run = store.find_run(config_hash=config_hash, kind=kind)
    if run is None:
        new_id = store.create_run(
            kind=kind,
            config_hash=config_hash,
            config=identity,
            tasks=tasks,
            model=model,
            base_url=endpoint,
            price=price,
            budget_pusd=budget,
            version=__version__,
        )
        if on_open is not None:
            on_open(store, new_id, False)
        return new_id, False
    found_id: str = run["run_id"]
    if on_open is not None:
        on_open(store, found_id, True)
    updates: dict[str, Any] = {
        "status": "running",
        "status_detail": None,
        "price_json": orjson.dumps(price).decode(),
    }
    if budget is not None:
        updates["budget_pusd"] = budget
    store.update_run(found_id, **updates)
    return found_id, True


def mark_lost_reservations(store: Store, run_id: str) -> int:
    """Reservations never closed (a crash): count them as spent. Returns how many.

    A reservation is durable only once its request is about to leave, so these are the
    requests that were at the provider when the session died (at most its concurrency).
    """
    rows = store.open_reservations(run_id)
    if rows:
        store.writer.put(
            [
                LedgerRow(call_id, res_no, run_id, "lost", pusd, None, None, None, None, None)
                for call_id, res_no, pusd in rows
            ]
        )
        store.writer.flush_blocking()
    return len(rows)


def pending_seeds(store: Store, run_id: str, task: str) -> list[Seed]:
    """The seeds of ``task`` the run admitted and has not finished (``Store.pending_seeds``),
    oldest first: a resumed session finishes them first."""
    return [
        Seed(
            task=task,
            fields=orjson.loads(fields_json),
            seed_id=seed_id or "",
            source_file=source_file or "",
            source_line=source_line or 0,
            dataset=dataset or "",
            key=seed_key,
            truncated_tokens=truncated or 0,
        )
        for seed_key, seed_id, dataset, source_file, source_line, fields_json, truncated in (
            store.pending_seeds(run_id, task)
        )
    ]
