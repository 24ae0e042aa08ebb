"""What an endpoint can do, found out once per endpoint and model: structured outputs.

Servers differ: OpenAI and vLLM accept ``response_format`` with a JSON schema, older
servers answer it with a 400, and some ignore it and reply in text. ``StructuredOutputs``
finds out on the first call that asks, the way pre-selection finds out whether ``n`` is
honoured: that call goes alone (the others wait for the answer); a 400/422 means "not
supported" and the same call is sent again as text; a 200 whose reply is not a JSON object
means "ignored", treated the same way from then on. What was learned is stored in
``endpoint_capabilities`` with the run that learned it (so a later run of the same endpoint
and model does not probe again) and every run records which way it asked.

Readers of replies accept JSON and text alike, so a wrong guess costs nothing but the probe.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Mapping
from typing import Any

from ..records import ChatRequest, ChatResult
from .calls import CallFailure, CallRunner
from .replies import json_object, visible_text

__all__ = ["MODES", "StructuredOutputs", "structured_outputs"]

MODES = ("auto", "on", "off")
CAPABILITY = "json_schema"
# What a server without structured outputs answers a request with response_format.
_UNSUPPORTED_STATUS = frozenset({400, 422})

_BY_RUNNER: weakref.WeakKeyDictionary[CallRunner, dict[tuple[str, str], StructuredOutputs]] = (
    weakref.WeakKeyDictionary()
)


def structured_outputs(runner: CallRunner, model: str, mode: str = "auto") -> StructuredOutputs:
    """The one ``StructuredOutputs`` of this session for ``model`` (created on first use)."""
    per_runner = _BY_RUNNER.setdefault(runner, {})
    key = (model, mode)
    if key not in per_runner:
        per_runner[key] = StructuredOutputs(runner, model, mode)
    return per_runner[key]


class StructuredOutputs:
    """Ask for a JSON schema when the endpoint honours it, else plain text.

    ``mode``: "auto" (learn it), "on" (always ask), "off" (never ask). ``used`` says how
    this session asked once it has: "json_schema", "text" or "" (not yet).
    """

    def __init__(self, runner: CallRunner, model: str, mode: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"structured-output mode must be one of {MODES}, not {mode!r}")
        self.runner = runner
        self.model = model
        self.mode = mode
        self.endpoint = runner.pool.url  # one endpoint: its URL; a fleet: all of them
        self.supported: bool | None = {"on": True, "off": False}.get(mode)
        self.detail = ""
        self.used = ""
        self._lock: asyncio.Lock | None = None
        if self.supported is None:
            self.supported, self.detail = self._stored()
        self._recorded = False

    def _stored(self) -> tuple[bool | None, str]:
        rows = self.runner.store.query(
            "SELECT supported, detail FROM endpoint_capabilities WHERE endpoint = ? AND "
            "model = ? AND capability = ? ORDER BY created_at DESC LIMIT 1",
            [self.endpoint, self.model, CAPABILITY],
        )
        return (bool(rows[0][0]), rows[0][1] or "") if rows else (None, "")

    def _record(self, supported: bool, detail: str) -> None:
        self.supported, self.detail = supported, detail
        self.used = CAPABILITY if supported else "text"
        if self._recorded:
            return
        self._recorded = True
        self.runner.writer.put(
            [
                (
                    "endpoint_capabilities",
                    (
                        self.endpoint,
                        self.model,
                        CAPABILITY,
                        supported,
                        f"{self.mode}: {detail}"[:500],
                        self.runner.run_id,
                    ),
                )
            ]
        )

    @property
    def note(self) -> str:
        """One line for the user about how this session asked, "" before any call."""
        if not self.used:
            return ""
        if self.used == CAPABILITY:
            return f"replies asked for as JSON ({CAPABILITY} response_format)"
        why = f" ({self.detail})" if self.detail else ""
        return f"replies asked for as text: the endpoint has no structured outputs{why}"

    async def call(
        self,
        request: ChatRequest,
        response_format: Mapping[str, Any],
        **call_kw: Any,
    ) -> tuple[ChatResult | CallFailure, bool]:
        """Send ``request`` with ``response_format`` when supported; (result, asked as JSON).

        ``call_kw`` goes to ``CallRunner.call`` (stage, task, seed_key, est_prompt_tokens).
        """
        if self.supported is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:  # one probe; the others wait for what it finds
                if self.supported is None:
                    return await self._probe(request, response_format, call_kw)
        if self.supported:
            self._record(True, self.detail or "known")
            formatted = dataclasses.replace(request, response_format=dict(response_format))
            return await self.runner.call(formatted, **call_kw), True
        self._record(False, self.detail or "known")
        return await self.runner.call(request, **call_kw), False

    async def _probe(
        self, request: ChatRequest, response_format: Mapping[str, Any], call_kw: dict[str, Any]
    ) -> tuple[ChatResult | CallFailure, bool]:
        formatted = dataclasses.replace(request, response_format=dict(response_format))
        result = await self.runner.call(formatted, **call_kw)
        if isinstance(result, CallFailure):
            if result.status in _UNSUPPORTED_STATUS and result.reason != "context_length":
                plain = await self.runner.call(request, **call_kw)
                if not isinstance(plain, CallFailure):
                    self._record(False, f"HTTP {result.status} to response_format")
                return plain, False
            return result, True  # not about the format: learn nothing
        if result.finish_reason in ("content_filter", "length"):
            return result, True  # a cut or filtered reply says nothing about the format
        if json_object(visible_text(result.text)) is None:
            self._record(False, "response_format ignored, the reply was text")
        else:
            self._record(True, "accepted")
        return result, True
