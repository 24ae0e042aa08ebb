"""Making one logical LLM call under all of halugen's guarantees.

    key -> cache? -> reserve worst case -> reservation durable -> rate-limit slot -> send
        -> settle to reported usage (or release / consume) -> log the call -> answer

Retries happen here, each attempt reserved and paced on its own. Per-call failures are
returned as ``CallFailure`` values; only systemic errors raise (BudgetExhausted,
AuthError, StoreError).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ..budget import Ledger, ModelPrice, PromptMargin, Reservation
from ..config import RetryPolicy
from ..errors import AuthError, EndpointUnreachable, FatalCallError, LLMError, RetryableError
from ..prompts import PER_MESSAGE_TOKENS, PER_REQUEST_TOKENS
from ..records import ChatRequest, ChatResult
from ..stats import RunStats
from ..store.db import KeyIndex, Store, key_prefix
from ..tokens import TokenCounter
from .pool import EndpointPool

__all__ = ["CallFailure", "CallRunner", "backoff_delay"]


@dataclass(frozen=True, slots=True)
class CallFailure:
    key: str
    error_class: str
    message: str
    status: int = 0

    @property
    def reason(self) -> str:
        return "context_length" if "context" in self.message else "call_failed"


def backoff_delay(
    attempt: int, policy: RetryPolicy, retry_after: float | None, rng: random.Random
) -> float:
    """Exponential backoff with full jitter; never shorter than the server's retry-after."""
    cap = min(policy.max_delay, policy.base_delay * (2**attempt))
    delay = rng.uniform(0, cap)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


class CallRunner:
    def __init__(
        self,
        *,
        run_id: str,
        pool: EndpointPool,
        ledger: Ledger,
        price: ModelPrice,
        counter: TokenCounter,
        store: Store,
        stats: RunStats,
        retry: RetryPolicy = RetryPolicy(),
        margin: PromptMargin | None = None,
        first_call_id: int = 1,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.run_id = run_id
        self.pool = pool  # the endpoints: each attempt goes to one with room
        self.ledger = ledger
        self.price = price
        self.counter = counter
        self.count_tokens = counter.count
        self.store = store
        self.writer = store.writer
        self.stats = stats
        self.retry = retry
        self.margin = margin or PromptMargin()
        self._next_call_id = first_call_id
        self._sleep = sleep
        self._rng = random.Random()  # backoff jitter only: never affects results
        self._known: KeyIndex = store.response_index()
        self._inflight: dict[str, asyncio.Future[ChatResult | CallFailure]] = {}
        self.auth_failed: AuthError | None = None
        self._reached = False  # has any attempt got an HTTP answer from the endpoint?

    def estimate_prompt_tokens(self, request: ChatRequest) -> int:
        return PER_REQUEST_TOKENS + sum(
            PER_MESSAGE_TOKENS + self.count_tokens(m.get("content", "")) for m in request.messages
        )

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
        shared = self._inflight.get(key)
        if shared is not None:  # the same request is already on its way: share its answer
            return await asyncio.shield(shared)
        fut: asyncio.Future[ChatResult | CallFailure] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            result = await self._call(request, key, stage, task, seed_key, est_prompt_tokens)
        except BaseException as exc:
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()  # mark retrieved: sharers re-raise it, nobody else must
            raise
        finally:
            self._inflight.pop(key, None)
        fut.set_result(result)
        return result

    async def _call(
        self,
        request: ChatRequest,
        key: str,
        stage: str,
        task: str,
        seed_key: str,
        est_prompt_tokens: int | None,
    ) -> ChatResult | CallFailure:
        st = self.stats.stage(task, stage)
        call_id = self._next_call_id
        self._next_call_id += 1

        if key in self._known:
            cached = self._from_cache(request, key, call_id, stage, task, seed_key)
            if cached is not None:
                st.done += 1
                st.cached += 1
                return cached

        est = (
            est_prompt_tokens
            if est_prompt_tokens is not None
            else (self.estimate_prompt_tokens(request))
        )
        max_out = request.n * request.max_tokens
        body = self.pool.body(request)
        attempts = 0
        res_no = 0
        total_cost = 0
        total_reserved = 0
        last_error: LLMError | None = None
        st.started += 1
        while True:
            reserve_tokens = self.margin.reserve_tokens(est)
            amount = self.price.cost(reserve_tokens, max_out)
            reservation = await self.ledger.reserve(amount)  # BudgetExhausted propagates
            res_no += 1
            total_reserved += amount
            common = (key, stage, task, request.model, seed_key)
            try:
                await self.writer.put_durable(
                    [("ledger", (call_id, res_no, self.run_id, "reserve", amount, *common))]
                )
            except BaseException:
                self.ledger.release(reservation)
                raise
            attempts += 1
            st.in_flight += 1
            try:
                result = await self.pool.send(request, body=body, tokens=reserve_tokens + max_out)
            except RetryableError as exc:
                last_error = exc
                self._reached = self._reached or exc.status != 0
                total_cost += self._close(reservation, call_id, res_no, exc.billed_maybe)
                if attempts >= self.retry.max_attempts:
                    break
                st.retries += 1
                await self._sleep(
                    backoff_delay(attempts - 1, self.retry, exc.retry_after, self._rng)
                )
                continue
            except FatalCallError as exc:
                last_error = exc
                self._reached = True
                total_cost += self._close(reservation, call_id, res_no, False)
                if isinstance(exc, AuthError):
                    self.auth_failed = exc
                    self._log_failure(
                        call_id,
                        key,
                        stage,
                        task,
                        seed_key,
                        request,
                        est,
                        exc,
                        attempts,
                        total_cost,
                        total_reserved,
                    )
                    raise
                break
            except BaseException:
                # cancelled (Ctrl-C) or a bug while the request may be at the provider:
                # count it as spent, as a crash would
                self._close(reservation, call_id, res_no, True)
                raise
            finally:
                st.in_flight -= 1
            # success
            self._reached = True
            cost = self.price.cost(
                result.prompt_tokens, result.completion_tokens, result.cached_tokens
            )
            total_cost += cost
            self.ledger.settle(reservation, cost)
            if not result.usage_estimated:
                self.margin.observe(est, result.prompt_tokens)
            status = "content_filter" if "content_filter" in result.finish_reasons else "ok"
            self.writer.put(
                [
                    ("ledger", (call_id, res_no, self.run_id, "settle", cost, *common)),
                    (
                        "call_log",
                        (
                            call_id,
                            key,
                            key_prefix(key),
                            self.run_id,
                            stage,
                            task,
                            request.model,
                            seed_key,
                            status,
                            result.prompt_tokens,
                            result.completion_tokens,
                            result.cached_tokens,
                            result.usage_estimated,
                            est,
                            total_cost,
                            total_reserved,
                            result.latency_ms,
                            attempts,
                            200,
                            None,
                            None,
                            result.finish_reason,
                            body.decode(),
                            result.raw.decode("utf-8", "replace"),
                        ),
                    ),
                ]
            )
            if status == "ok":
                self._known.add(key)
            st.done += 1
            st.prompt_tokens += result.prompt_tokens
            st.completion_tokens += result.completion_tokens
            st.cost_pusd += cost
            self.stats.record_call(result.prompt_tokens + result.completion_tokens)
            return _with_attempts(result, attempts)

        assert last_error is not None
        self._log_failure(
            call_id,
            key,
            stage,
            task,
            seed_key,
            request,
            est,
            last_error,
            attempts,
            total_cost,
            total_reserved,
        )
        if last_error.status == 0 and not self._reached:
            # every attempt of the first calls failed before any answer: systemic, not per call
            raise EndpointUnreachable(
                f"cannot reach {self.pool.url} after {attempts} attempts ({last_error}); "
                f"check --base-url (or OPENAI_BASE_URL) and the network"
            )
        st.failed += 1
        st.cost_pusd += total_cost
        return CallFailure(key, last_error.error_class, str(last_error), last_error.status)

    def _close(
        self, reservation: Reservation, call_id: int, res_no: int, billed_maybe: bool
    ) -> int:
        """Close a reservation after a failed attempt; returns what it cost."""
        if billed_maybe:
            spend = reservation.amount
            self.ledger.consume(reservation)
            event = "consume"
        else:
            spend = 0
            self.ledger.release(reservation)
            event = "release"
        self.writer.put(
            [("ledger", (call_id, res_no, self.run_id, event, spend, None, None, None, None, None))]
        )
        return spend

    def _log_failure(
        self,
        call_id: int,
        key: str,
        stage: str,
        task: str,
        seed_key: str,
        request: ChatRequest,
        est: int,
        error: LLMError,
        attempts: int,
        cost: int,
        reserved: int,
    ) -> None:
        self.writer.put(
            [
                (
                    "call_log",
                    (
                        call_id,
                        key,
                        key_prefix(key),
                        self.run_id,
                        stage,
                        task,
                        request.model,
                        seed_key,
                        "failed",
                        None,
                        None,
                        None,
                        None,
                        est,
                        cost,
                        reserved,
                        None,
                        attempts,
                        error.status,
                        error.error_class,
                        str(error)[:500],
                        None,
                        self.pool.body(request).decode(),
                        None,
                    ),
                )
            ]
        )

    def _from_cache(
        self, request: ChatRequest, key: str, call_id: int, stage: str, task: str, seed_key: str
    ) -> ChatResult | None:
        row = self.store.cached_response(key)
        if row is None:
            return None
        raw, prompt, completion, cached_tokens, estimated = row
        try:
            data = orjson.loads(raw)
            choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
            texts = tuple((c.get("message") or {}).get("content") or "" for c in choices)
            reasons = tuple(c.get("finish_reason") or "" for c in choices)
            logprobs = tuple(c.get("logprobs") for c in choices)
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return None  # an unreadable cache entry is simply not a hit
        self.writer.put(
            [
                (
                    "call_log",
                    (
                        call_id,
                        key,
                        key_prefix(key),
                        self.run_id,
                        stage,
                        task,
                        request.model,
                        seed_key,
                        "cached",
                        prompt,
                        completion,
                        cached_tokens,
                        estimated,
                        None,
                        0,
                        0,
                        0.0,
                        0,
                        None,
                        None,
                        None,
                        reasons[0] if reasons else None,
                        None,
                        None,
                    ),
                )
            ]
        )
        return ChatResult(
            texts=texts,
            finish_reasons=reasons,
            prompt_tokens=prompt or 0,
            completion_tokens=completion or 0,
            cached_tokens=cached_tokens or 0,
            usage_estimated=bool(estimated),
            model=request.model,
            raw=raw.encode(),
            from_cache=True,
            attempts=0,
            logprobs=logprobs if any(lp is not None for lp in logprobs) else (),
        )


def _with_attempts(result: ChatResult, attempts: int) -> ChatResult:
    if attempts == result.attempts:
        return result
    from dataclasses import replace

    return replace(result, attempts=attempts)
