"""Helpers for the simulator tests: fake time, request bodies, prompts in halugen's shape."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import orjson

from halugen.llm.transport import HttpResponse
from halugen.simulate import Simulator

T = TypeVar("T")
CHAT = "/v1/chat/completions"


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeSleep:
    """Records what the simulator would have slept, and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def body(content: str | list[dict[str, str]], **params: Any) -> bytes:
    messages = [{"role": "user", "content": content}] if isinstance(content, str) else content
    payload: dict[str, Any] = {"model": "sim-model", "messages": messages}
    payload.update(params)
    return orjson.dumps(payload)


async def post(sim: Simulator, data: bytes, headers: dict[str, str] | None = None) -> HttpResponse:
    return await sim.handle(CHAT, headers or {}, data)


def call(sim: Simulator, data: bytes, headers: dict[str, str] | None = None) -> HttpResponse:
    return run(post(sim, data, headers))


def texts(resp: HttpResponse) -> list[str]:
    return [c["message"]["content"] for c in orjson.loads(resp.body)["choices"]]


QA_DEMOS = """You write wrong answers that look right, to test hallucination detectors.

Demonstration:
Knowledge: The Danube flows through Vienna and Budapest before reaching the Black Sea.
Question: Which sea does the Danube reach?
Right answer: the Black Sea
Hallucinated answer: the Caspian Sea
Pattern: factualness

Demonstration:
Knowledge: Tomas Berglund wrote the novel Ice Harbour in 1971.
Question: Who wrote Ice Harbour?
Right answer: Tomas Berglund
Hallucinated answer: Tomas Berglund's brother
Pattern: comprehension
"""


def qa_prompt(knowledge: str, question: str, right: str) -> str:
    return (
        QA_DEMOS
        + "\nNow the record to work on.\n"
        + f"Knowledge: {knowledge}\nQuestion: {question}\nRight answer: {right}\n\n"
        + "Reply format:\n"
        + "Pattern: <one of: comprehension, factualness, specificity, inference>\n"
        + "Answer: <your hallucinated answer>"
    )


def filter_prompt(knowledge: str, question: str, answers: list[str]) -> str:
    demo = (
        "Pick the answer best supported by the knowledge.\n\n"
        "Knowledge: Mount Orla is 2,310 metres high.\nQuestion: How high is Mount Orla?\n"
        "Answer 1: 2,310 metres\nAnswer 2: 3,100 metres\nAnswer 3: 900 metres\nChoice: 1\n\n"
    )
    shown = "\n".join(f"Answer {i}: {a}" for i, a in enumerate(answers, 1))
    return (
        demo
        + f"Knowledge: {knowledge}\nQuestion: {question}\n{shown}\n\n"
        + "Reply format:\nChoice: <the number of the answer you pick>"
    )


def verdict_prompt(question: str, answer: str) -> str:
    return (
        "Decide whether the answer contains non-factual or made-up information.\n\n"
        f"Question: {question}\nAnswer: {answer}\n\n"
        "Reply format:\nVerdict: <one of: Yes, No>"
    )
