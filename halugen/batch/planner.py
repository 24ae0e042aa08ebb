"""A planning pass: the normal pipeline, with a call runner that sends nothing.

Batch mode runs a kind's ordinary pipeline (generation, eval, pre-selection) as it is, with
two substitutions made when its session opens (``adapt_session``):

- the call runner answers a request from the store when its key has an answer there, and
  otherwise records it in the pass's plan and returns a "deferred" failure; a request whose
  batch may still complete is not planned again;
- the writer drops what the stages write for a seed because one of its calls was deferred
  (a candidate or outcome that says "call failed"), so the seed simply stays pending and
  the store holds only real results. Everything a seed with all its answers produces is
  written as usual, so the pass that defers nothing is the last one and has written it all.

Without batch mode, ``adapt_session`` only refuses to start while batches of the run are
still at the provider: an interactive session would pay again for requests those batches
may still answer, and would not count their reserved money.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..llm.calls import CallFailure
from ..records import ChatRequest, ChatResult
from ..stats import RunStats
from ..store.db import KeyIndex, key_prefix
from .book import live_batch_summary, live_keys
from .files import result_from_stored

if TYPE_CHECKING:
    from ..config import BatchOptions
    from ..session import CallSession
    from ..store.writer import Row, StoreWriter

__all__ = ["DEFERRED", "PassPlan", "Planned", "PlanningRunner", "adapt_session"]

DEFERRED = "Deferred"  # error class of the failure a deferred call returns
# tables whose rows name a seed as (run_id, task, seed_key, ...): what a stage writes about it
_SEED_TABLES = frozenset({"candidates", "filter_decisions", "seed_outcomes"})


@dataclass(frozen=True, slots=True)
class Planned:
    """A request to send in a batch: its key, its body and what it may cost at most."""

    key: str
    stage: str
    task: str
    seed_key: str
    model: str
    body: bytes
    est_prompt_tokens: int
    max_output_tokens: int


@dataclass
class PassPlan:
    """What one planning pass found. ``failures`` come from the driver (known for good)."""

    failures: dict[str, CallFailure] = field(default_factory=dict)
    reported: set[str] = field(default_factory=set)  # failures a pass has already written
    returned: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (task, seed)
    requests: dict[str, Planned] = field(default_factory=dict)
    deferred_seeds: set[tuple[str, str]] = field(default_factory=set)
    answered: int = 0  # calls answered from the store
    waiting: int = 0  # calls whose batch may still complete
    run_id: str = ""
    # the counters of every pass of the session, so the last one reports the session's work
    stats: RunStats | None = None


class PlanningRunner:
    """Stands in for ``CallRunner`` during a planning pass (same ``call``, same counter)."""

    def __init__(self, real: Any, session: CallSession, plan: PassPlan) -> None:
        self._real = real
        self.counter = real.counter
        self.count_tokens = real.count_tokens
        self.pool = real.pool  # what the endpoint probes (llm/capabilities.py) read
        self._store = session.store
        self._writer: StoreWriter = session.store.writer
        self.store, self.writer = self._store, self._writer
        self.run_id = session.run_id
        self.on_context_window: Any = None  # a batch line's context error names no window
        self.plan = plan
        self._answered = self._store.response_index()
        run = [session.run_id]
        self._mine = KeyIndex(
            r[0]
            for r in self._store.query(
                "SELECT key_prefix FROM call_log WHERE run_id = ? AND status IN "
                "('ok', 'cached', 'content_filter')",
                run,
            )
        )
        # content_filter answers are outcomes too; interactive runs hand them over at once
        self._filtered = {
            r[0]: r[1:]
            for r in self._store.query(
                "SELECT key, response_json, prompt_tokens, completion_tokens, cached_tokens, "
                "usage_estimated FROM call_log WHERE run_id = ? AND status = 'content_filter'",
                run,
            )
        }
        self._live = live_keys(self._store, session.run_id)
        self._next_call_id = self._store.next_call_id()

    async def call(
        self,
        request: ChatRequest,
        *,
        stage: str,
        task: str,
        seed_key: str = "",
        est_prompt_tokens: int | None = None,
    ) -> ChatResult | CallFailure:
        key = request.key
        if key in self._answered:
            row = self._store.cached_response(key)
            result = result_from_stored(row, request.model) if row is not None else None
            if result is not None:
                self.plan.answered += 1
                if key not in self._mine:  # another run's answer: this run uses it once
                    self._mine.add(key)
                    self._log_cached(key, stage, task, request.model, seed_key, row)
                return result
        filtered = self._filtered.get(key)
        if filtered is not None:
            result = result_from_stored(filtered, request.model)
            if result is not None:
                self.plan.answered += 1
                return result
        known = self.plan.failures.get(key)
        if known is not None:
            # failed for good this session: the seed fails as in an interactive session, and
            # the passes after the one that wrote so leave it alone
            if key in self.plan.reported:
                self.plan.deferred_seeds.add((task, seed_key))
            else:
                self.plan.returned[key] = (task, seed_key)
            return known
        self.plan.deferred_seeds.add((task, seed_key))
        if key in self._live:
            self.plan.waiting += 1
        elif key not in self.plan.requests:
            est = (
                est_prompt_tokens
                if est_prompt_tokens is not None
                else self._real.estimate_prompt_tokens(request)
            )
            self.plan.requests[key] = Planned(
                key=key,
                stage=stage,
                task=task,
                seed_key=seed_key,
                model=request.model,
                body=self._real.pool.body(request),
                est_prompt_tokens=est,
                max_output_tokens=request.n * request.max_tokens,
            )
        return CallFailure(key, DEFERRED, "waiting for a batch", 0)

    def _log_cached(
        self, key: str, stage: str, task: str, model: str, seed_key: str, row: tuple[Any, ...]
    ) -> None:
        _, prompt, completion, cached_tokens, estimated = row
        call_id = self._next_call_id
        self._next_call_id += 1
        values = (
            call_id, key, key_prefix(key), self.run_id, stage, task, model, seed_key, "cached",
            prompt, completion, cached_tokens, estimated, None, 0, 0, 0.0, 0, None, None, None,
            None, None, None,
        )  # fmt: skip
        self._writer.put([("call_log", values)])


class PlanWriter:
    """The store writer, minus the rows that only say a seed's call was deferred."""

    def __init__(self, writer: StoreWriter, plan: PassPlan, stats: RunStats) -> None:
        self._writer = writer
        self._plan = plan
        self._stats = stats

    def _keep(self, rows: Sequence[Row]) -> list[Row]:
        deferred = self._plan.deferred_seeds
        if not deferred:
            return list(rows)
        kept = []
        for r in rows:
            if r[0] in _SEED_TABLES and (r[1][1], r[1][2]) in deferred:
                if r[0] == "seed_outcomes" and r[1][3] == "failed":
                    self._stats.bump(self._stats.failed, r[1][1], -1)  # pending, not failed
                continue
            kept.append(r)
        return kept

    def put(self, rows: Sequence[Row]) -> None:
        kept = self._keep(rows)
        if kept:
            self._writer.put(kept)

    async def put_durable(self, rows: Sequence[Row]) -> None:
        kept = self._keep(rows)
        if kept:
            await self._writer.put_durable(kept)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


class _PlanStore:
    """The session's store, whose writer is the ``PlanWriter``."""

    def __init__(self, store: Any, writer: PlanWriter) -> None:
        self._store = store
        self.writer = writer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def adapt_session(session: CallSession, batch: BatchOptions | None) -> None:
    """Batch mode: make ``session`` a planning pass. Otherwise: no batch may be running."""
    if batch is None or batch.plan is None:
        summary = live_batch_summary(session.store, session.run_id)
        if summary:
            them = "it" if summary.startswith("1 ") else "them"
            raise UsageError(
                f"run {session.run_id} has {summary} at the provider that may still complete; "
                f"run the same command with --batch to wait for {them} and use the answers "
                f"('halugen batch cancel' stops {them} early)"
            )
        return
    plan: PassPlan = batch.plan
    plan.run_id = session.run_id
    if plan.stats is not None:
        plan.stats.run_id = session.run_id
        session.stats = plan.stats
    writer = PlanWriter(session.store.writer, plan, session.stats)
    session.runner = PlanningRunner(session.runner, session, plan)  # type: ignore[assignment]
    session.store = _PlanStore(session.store, writer)  # type: ignore[assignment]
