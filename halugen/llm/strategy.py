"""How a session's pipeline calls are made: sent now, or planned for a batch.

A session opens with one strategy and keeps it (``session.call_session`` chooses):
``Interactive`` sends every call through the call runner; batch mode's ``PlanningRunner``
(batch/planner.py) answers calls from the store and plans the others for a batch. Stages
call ``call`` and write through a ``StageWriter``, which gives their rows to the strategy's
``seed_rows`` first: a planning pass drops the rows that only say a seed's call was deferred,
so the seed stays pending and the store holds only real results.

Probes (llm/probe.py) and the money machinery always use the session's ``CallRunner``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, Protocol, TypedDict, Unpack

from ..records import ChatRequest, ChatResult
from ..store.writer import StoreWriter, WriterRow
from ..tokens import TokenCounter
from .calls import CallFailure, CallRunner

__all__ = ["CallSite", "CallStrategy", "Interactive", "StageWriter"]


class CallSite(TypedDict):
    """Where a call is made: its stage and task, the seed, the prompt-token estimate."""

    stage: str
    task: str
    seed_key: NotRequired[str]
    est_prompt_tokens: NotRequired[int | None]


class CallStrategy(Protocol):
    @property
    def counter(self) -> TokenCounter: ...

    async def call(
        self, request: ChatRequest, **where: Unpack[CallSite]
    ) -> ChatResult | CallFailure:
        """One logical call: an answer, or a failure the stage records."""
        ...

    def seed_rows(self, rows: Sequence[WriterRow]) -> Sequence[WriterRow]:
        """The rows a stage may write now, of ``rows``."""
        ...


class Interactive:
    """Every call goes to the endpoint now, through the call runner."""

    def __init__(self, runner: CallRunner) -> None:
        self.runner = runner
        self.call = runner.call

    @property
    def counter(self) -> TokenCounter:
        return self.runner.counter

    def seed_rows(self, rows: Sequence[WriterRow]) -> Sequence[WriterRow]:
        return rows


class StageWriter:
    """Where the stages of a session write: the store's writer, after the strategy's filter."""

    def __init__(self, writer: StoreWriter, strategy: CallStrategy) -> None:
        self._writer = writer
        self._strategy = strategy

    def put(self, rows: Sequence[WriterRow]) -> None:
        kept = self._strategy.seed_rows(rows)
        if kept:
            self._writer.put(kept)

    async def put_durable(self, rows: Sequence[WriterRow]) -> None:
        kept = self._strategy.seed_rows(rows)
        if kept:
            await self._writer.put_durable(kept)
