"""The context window a run fits its records to, and what happens when it changes.

Where the window comes from, first found wins:

1. ``--context-window`` (the user knows best);
2. what the server says about itself (vLLM's ``max_model_len``, llama.cpp's ``n_ctx``);
3. what an earlier context-length error from the same server and model taught us, kept in
   ``endpoint_facts``;
4. the window the run worked with before, where nothing above is known (a batch export for
   an offline engine asks no server): its records are then fitted as before, so its
   request keys, and the answers stored under them, stay the same;
5. the price card (OpenAI's published windows; a guess for anything else).

A context-length error during a run lowers the window for the records admitted after it and
is remembered. Seeds rejected for ``context_length`` were fitted to a window that turned out
wrong, so when a later session of the run works with another window, they are put back in
line (their latest outcome becomes ``pending``) and fitted again.
"""

from __future__ import annotations

from collections.abc import Callable

from .store import run_queries
from .store.db import Store
from .store.rows import EndpointFactRow, SeedOutcomeRow
from .store.writer import StoreWriter

__all__ = [
    "effective_window",
    "remember_window",
    "session_window",
    "window_learner",
]


def effective_window(
    store: Store,
    *,
    flag: int | None,
    announced: int | None,
    announced_by: str,
    base_url: str,
    model: str,
    card_window: int,
    run_id: str | None = None,
) -> tuple[int, str]:
    """(window, where it came from). ``announced``: the window the server says it serves
    ``model`` with (``llm.endpoint.EndpointInfo.window``), ``announced_by`` which of its
    answers said so; ``run_id``: the run whose earlier window may be used."""
    if flag:
        return flag, "--context-window"
    if announced:
        return announced, f"the server ({announced_by})"
    told = run_queries.endpoint_window(store, base_url.rstrip("/"), model)
    if told is not None:
        return told, "an earlier context-length reply of the server"
    if run_id is not None:
        earlier = run_queries.run_window(store, run_id)
        if earlier:
            return int(earlier), "the run's earlier sessions"
    return card_window, "the price card"


def remember_window(
    writer: StoreWriter, *, base_url: str, model: str, window: int, source: str
) -> None:
    writer.put([EndpointFactRow(base_url.rstrip("/"), model, window, source)])


def session_window(
    store: Store,
    run_id: str,
    *,
    flag: int | None,
    announced: int | None,
    announced_by: str,
    base_url: str,
    model: str,
    card_window: int,
) -> tuple[int, str, int]:
    """The window a session of the run works with: (window, where it came from, how many
    seeds rejected for context_length were put back in line because it changed).

    The window is recorded on the run either way.
    """
    window, source = effective_window(
        store,
        flag=flag,
        announced=announced,
        announced_by=announced_by,
        base_url=base_url,
        model=model,
        card_window=card_window,
        run_id=run_id,
    )
    previous = run_queries.run_window(store, run_id)
    store.update_run(run_id, context_window=window)
    if previous is None or previous == window:
        return window, source, 0
    rows = run_queries.context_length_rejections(store, run_id)
    if rows:
        detail = f"the context window is now {window:,} tokens (was {previous:,})"
        store.writer.put(
            [
                SeedOutcomeRow(
                    run_id, task, seed_key, "pending", None, "context_window_changed", detail
                )
                for task, seed_key in rows
            ]
        )
        store.writer.flush_blocking()
    return window, source, len(rows)


def window_learner(
    writer: StoreWriter, *, base_url: str, model: str, apply: Callable[[int], None]
) -> Callable[[int], None]:
    """What the call runner calls with the window a context-length error names."""
    seen: set[int] = set()

    def learned(window: int) -> None:
        apply(window)
        if window not in seen:
            seen.add(window)
            remember_window(writer, base_url=base_url, model=model, window=window, source="error")

    return learned
