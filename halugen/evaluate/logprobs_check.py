"""Does the endpoint give logprobs? Found out on the first judge call of an eval run.

``--scoring logprobs`` needs ``logprobs`` in every reply. Servers without them either refuse
the parameter (some answer HTTP 500 to every such request, which would be retried until
every item failed) or ignore it. So the first call goes alone, with one attempt; if it fails
while the same request without logprobs succeeds, or if the reply has no logprobs, the run
stops with one line instead of judging nothing and calling that "done".
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from ..errors import UsageError
from ..llm.calls import CallFailure, CallRunner
from ..records import ChatRequest, ChatResult

__all__ = ["LogprobsCheck"]


class LogprobsCheck:
    def __init__(self, runner: Any, base_url: str) -> None:
        self._runner = runner
        self._base_url = base_url
        # a planning pass (batch mode) sends nothing now: its answers are checked later
        self.known = None if isinstance(runner, CallRunner) else True
        self._lock = asyncio.Lock()

    async def call(self, request: ChatRequest, **call_kw: Any) -> ChatResult | CallFailure:
        if self.known is None:
            async with self._lock:
                if self.known is None:
                    return await self._probe(request, call_kw)
        result = await self._runner.call(request, **call_kw)
        if isinstance(result, ChatResult) and not result.logprobs and not result.from_cache:
            self._refuse("its reply had no logprobs")
        return result

    async def _probe(
        self, request: ChatRequest, call_kw: dict[str, Any]
    ) -> ChatResult | CallFailure:
        result = await self._runner.call(request, max_attempts=1, **call_kw)
        if isinstance(result, CallFailure):
            if result.status == 0:
                return result  # no answer at all says nothing about logprobs
            plain = dataclasses.replace(request, logprobs=False, top_logprobs=None)
            check = await self._runner.call(plain, max_attempts=1, **call_kw)
            if isinstance(check, ChatResult):
                self._refuse(f"it answered HTTP {result.status} with logprobs and 200 without")
            return result  # both failed: the endpoint's trouble, not logprobs'
        if not result.logprobs:
            self._refuse("its reply had no logprobs")
        self.known = True
        return result

    def _refuse(self, why: str) -> None:
        raise UsageError(
            f"{self._base_url} gives no logprobs ({why}); judge with --scoring parse instead"
        )
