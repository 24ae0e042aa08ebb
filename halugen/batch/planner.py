"""A planning pass: the normal pipeline, with a call strategy that sends nothing.

Batch mode runs a kind's ordinary pipeline (generation, eval, pre-selection) as it is; the
session of a planning pass opens with ``PlanningRunner`` as its call strategy
(llm/strategy.py; batch/modes.py's ``PlanForBatch`` gives it) instead of sending calls:

- a request whose key has an answer in the store is answered from it; any other is recorded
  in the pass's plan and gets a "deferred" failure; a request whose batch may still complete
  is not planned again;
- the rows the stages write about a seed one of whose calls was deferred (a candidate or
  outcome that says "call failed") are dropped (``seed_rows``), so the seed simply stays
  pending and the store holds only real results. Everything a seed with all its answers
  produces is written as usual, so the pass that defers nothing is the last one and has
  written it all.

Without batch mode, ``refuse_while_batches_live`` stops a session from starting while
batches of the run are still at the provider: an interactive session would pay again for
requests those batches may still answer, and would not count their reserved money.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UsageError
from ..llm.call_rows import LoggedCall, cached_log_row
from ..llm.calls import CallFailure, CallRunner
from ..llm.client import stored_result
from ..llm.strategy import DEFERRED
from ..records import ChatRequest, ChatResult
from ..stats import RunStats
from ..store import batch_queries
from ..store.db import Store
from ..store.key_index import KeyIndex
from ..store.rows import CandidateRow, FilterDecisionRow, SeedOutcomeRow
from ..store.writer import WriterRow
from ..tokens import TokenCounter
from .book import live_batch_summary, live_keys
from .plan import PassPlan, Planned

__all__ = ["PlanningRunner", "refuse_while_batches_live"]

# the records a stage writes about a seed
_SEED_RECORDS = (CandidateRow, FilterDecisionRow, SeedOutcomeRow)


class PlanningRunner:
    """Batch mode's call strategy: answers from the store, or plans the request."""

    def __init__(
        self, runner: CallRunner, *, store: Store, run_id: str, plan: PassPlan, stats: RunStats
    ) -> None:
        self._runner = runner  # its request bodies and prompt estimates; it sends nothing here
        self._store = store
        self._writer = store.writer
        self._stats = stats
        self.run_id = run_id
        self.plan = plan
        self._answered = store.response_index()
        self._mine = KeyIndex(r[0] for r in batch_queries.settled_key_prefixes(store, run_id))
        # content_filter answers are outcomes too; interactive runs hand them over at once
        self._filtered = {r[0]: r[1:] for r in batch_queries.filtered_answers(store, run_id)}
        self._live = live_keys(store, run_id)
        self._next_call_id = store.next_call_id()

    @property
    def counter(self) -> TokenCounter:
        return self._runner.counter

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
            result = stored_result(row, request.model) if row is not None else None
            if row is not None and result is not None:
                self.plan.answered += 1
                if key not in self._mine:  # another run's answer: this run uses it once
                    self._mine.add(key)
                    self._log_cached(key, stage, task, request.model, seed_key, result)
                return result
        filtered = self._filtered.get(key)
        if filtered is not None:
            result = stored_result(filtered, request.model)
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
                else self._runner.estimate_prompt_tokens(request)
            )
            self.plan.requests[key] = Planned(
                key=key,
                stage=stage,
                task=task,
                seed_key=seed_key,
                model=request.model,
                body=self._runner.pool.body(request),
                est_prompt_tokens=est,
                max_output_tokens=request.n * request.max_tokens,
            )
        return CallFailure(key, DEFERRED, "waiting for a batch", 0)

    def seed_rows(self, rows: Sequence[WriterRow]) -> Sequence[WriterRow]:
        """``rows`` without those about seeds one of whose calls was deferred."""
        deferred = self.plan.deferred_seeds
        if not deferred:
            return rows
        kept: list[WriterRow] = []
        for r in rows:
            if isinstance(r, _SEED_RECORDS) and (r.task, r.seed_key) in deferred:
                if isinstance(r, SeedOutcomeRow) and r.outcome == "failed":
                    self._stats.bump(self._stats.failed, r.task, -1)  # pending, not failed
                continue
            kept.append(r)
        return kept

    def _log_cached(
        self,
        key: str,
        stage: str,
        task: str,
        model: str,
        seed_key: str,
        result: ChatResult,
    ) -> None:
        call_id = self._next_call_id
        self._next_call_id += 1
        call = LoggedCall(call_id, key, self.run_id, stage, task, model, seed_key)
        log = cached_log_row(call, result)
        self._writer.put([log])


def refuse_while_batches_live(store: Store, run_id: str) -> None:
    """An interactive session may not start while batches of its run may still complete."""
    summary = live_batch_summary(store, run_id)
    if summary:
        them = "it" if summary.startswith("1 ") else "them"
        raise UsageError(
            f"run {run_id} has {summary} at the provider that may still complete; "
            f"run the same command with --batch to wait for {them} and use the answers "
            f"('halugen batch cancel' stops {them} early)"
        )
