"""What an endpoint and model accept, settled before the first request whose body depends on it.

Servers differ. Structured outputs (``response_format`` with a JSON schema): OpenAI and vLLM
honour it, older servers refuse it with a 400, llama-cpp-python's server with a 500, and many
gateways ignore it and reply in text. ``n`` choices: llama.cpp's server answers one.
``logprobs``: some servers refuse them, some leave them out. A request's body must never
depend on which of its siblings came back first, so each question is settled once per
session, before the first request that needs the answer, and the answer holds for the whole
session. First found wins:

1. the flag (``--structured on|off``, ``--use-n always|never``);
2. what a probe found out earlier for this endpoint and model (stored);
3. how this run asked before: a run keeps its request bodies, so its stored answers (from
   another endpoint, or a batch file) are used, not asked again;
4. a probe (``probe.py``): a small request with a fixed body, sent alone while the callers
   that need the answer wait;
5. with no server to ask (a batch export for an offline engine): not supported, which any
   engine takes; the run says so, and the flag asks otherwise.

Every decision is written to ``endpoint_capabilities`` with where it came from; rows whose
source is ``probe`` are what later sessions of any run of the endpoint and model assume.

A capability with a value is asked with the value the run will use: ``n`` with the choices
a request needs (llama.cpp's server takes ``n`` up to its slot count only), decided and
stored as ``n=3`` apart from ``n=2``. A request refused later with a 400 naming the field
(``refuses_field``: a stored answer from another server behind the same URL, a gateway that
answers probes differently) turns the feature off for the rest of the session
(``refused``): the caller falls back, e.g. to one call per response.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..records import ChatRequest
from ..store import run_queries
from ..store.db import Store
from ..store.rows import EndpointCapabilityRow
from .calls import CallFailure, CallRunner
from .probe import ProbeUnanswered, probe

__all__ = [
    "CAPABILITIES",
    "JSON_SCHEMA",
    "LOGPROBS",
    "MODES",
    "N_CHOICES",
    "Capabilities",
    "Decision",
    "refuses_field",
]

JSON_SCHEMA = "json_schema"  # structured outputs: response_format with a JSON schema
N_CHOICES = "n"  # several choices from one request
LOGPROBS = "logprobs"  # token logprobs in the reply
CAPABILITIES = (JSON_SCHEMA, N_CHOICES, LOGPROBS)
MODES = ("auto", "on", "off")
# the flag that forces each one, for messages
_FLAGS = {JSON_SCHEMA: "--structured on|off", N_CHOICES: "--use-n always|never", LOGPROBS: ""}


@dataclass(frozen=True, slots=True)
class Decision:
    """How a session asks about one capability, and why.

    ``source``: flag | stored (a probe of an earlier session) | run (how this run asked
    before) | probe (this session's) | default (no server could be asked) | refused (a
    request of this session was refused with a 400 naming the field).
    """

    capability: str
    supported: bool
    source: str
    detail: str = ""

    @property
    def note(self) -> str:
        """One line for the user ("" when there is nothing worth saying)."""
        why = {
            "flag": f"as the flag says ({self.detail})",
            "stored": f"as a probe found before ({self.detail})",
            "probe": f"as the probe found ({self.detail})",
            "run": "as this run asked before",
            "default": f"{self.detail}; {_FLAGS[self.capability]} decides".rstrip("; "),
            "refused": f"as the server refused it ({self.detail})",
        }[self.source]
        if self.capability == JSON_SCHEMA:
            if self.supported:
                return f"replies asked for as JSON ({JSON_SCHEMA} response_format), {why}"
            return f"replies asked for as text, not with a JSON schema: {why}"
        if self.capability == N_CHOICES and not self.supported and self.source != "flag":
            return f"each response is sampled with its own call, not with n: {why}"
        return ""


@dataclass(eq=False, kw_only=True)
class Capabilities:
    """The decisions of one session; each is made once, before the requests that need it.

    ``runner`` sends the probes (the session's interactive runner, also in batch mode);
    None when no server can be asked. ``modes`` maps a capability to auto | on | off.
    ``task`` labels the probe calls in the ledger and the view.
    """

    store: Store
    run_id: str
    endpoint: str
    model: str
    modes: Mapping[str, str] = field(default_factory=dict)
    runner: CallRunner | None = None
    task: str = ""
    _decided: dict[str, Decision] = field(default_factory=dict, init=False)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict, init=False)
    _rng: random.Random = field(default_factory=random.Random, init=False)  # probe jitter

    def __post_init__(self) -> None:
        for capability, mode in self.modes.items():
            if capability not in CAPABILITIES or mode not in MODES:
                raise ValueError(f"no capability mode {capability}={mode!r}")

    @property
    def decisions(self) -> tuple[Decision, ...]:
        return tuple(self._decided.values())

    def notes(self) -> list[str]:
        return [d.note for d in self._decided.values() if d.note]

    async def decide(self, capability: str, value: int | None = None) -> Decision | CallFailure:
        """The session's decision; the first caller makes it, the others wait for it.

        ``value``: what the run will ask for (``n``: the choices a request needs); each
        value is a question of its own. A ``CallFailure`` when a probe was needed and got no
        answer: the caller fails as its own call would have, and the next caller asks again.
        """
        key = _key(capability, value)
        decided = self._decided.get(key)
        if decided is not None:
            return decided
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            decided = self._decided.get(key)
            if decided is None:
                try:
                    decided = await self._decide(capability, value)
                except ProbeUnanswered as exc:
                    return exc.failure
                self._decided[key] = decided
                self._record(key, decided)
        return decided

    def refused(self, capability: str, value: int | None, failure: CallFailure) -> Decision:
        """A request asking for ``capability`` was refused (``refuses_field``): it is off for
        the rest of the session, and this run asks without it from now on."""
        key = _key(capability, value)
        decision = Decision(capability, False, "refused", failure.message[:300])
        if self._decided.get(key) != decision:
            self._decided[key] = decision
            self._record(key, decision)
        return decision

    async def formatted(
        self, request: ChatRequest, response_format: Mapping[str, Any]
    ) -> ChatRequest | CallFailure:
        """``request`` with ``response_format`` when this session asks for JSON, else as it is."""
        decision = await self.decide(JSON_SCHEMA)
        if isinstance(decision, CallFailure):
            return decision
        if decision.supported:
            return dataclasses.replace(request, response_format=dict(response_format))
        return request

    async def _decide(self, capability: str, value: int | None) -> Decision:
        mode = self.modes.get(capability, "auto")
        if mode != "auto":
            flag = _FLAGS[capability].split(" ")[0]
            return Decision(capability, mode == "on", "flag", f"{flag} {mode}".strip())
        key = _key(capability, value)
        row = run_queries.probed_capability(self.store, self.endpoint, self.model, key)
        if row is not None:
            return Decision(capability, row[0], "stored", row[1])
        row = run_queries.run_capability(self.store, self.run_id, key)
        if row is not None:
            return Decision(capability, row[0], "run", row[1])
        if self.runner is None:
            return Decision(capability, False, "default", "no server was asked, none is known")
        supported, detail = await probe(
            self.runner, capability, self.model, task=self.task, rng=self._rng, value=value
        )
        return Decision(capability, supported, "probe", detail)

    def _record(self, key: str, decision: Decision) -> None:
        row = EndpointCapabilityRow(
            endpoint=self.endpoint,
            model=self.model,
            capability=key,
            supported=decision.supported,
            detail=decision.detail[:500],
            run_id=self.run_id,
            source=decision.source,
        )
        self.store.writer.put([row])


def _key(capability: str, value: int | None) -> str:
    """How a decision is kept and stored: ``n=3`` for n with 3 choices."""
    return capability if value is None else f"{capability}={value}"


def refuses_field(failure: CallFailure, field: str) -> bool:
    """Was a request refused with a 400 that names ``field``? ("Field 'n': Value must be
    between 1 <= value <= 2" from llama.cpp's server, "'n' must be ...", "param: n")."""
    if failure.status != 400:
        return False
    name = re.escape(field)
    quoted = rf"""['"`]{name}['"`]"""
    labelled = rf"\b(?:param(?:eter)?|field)\s*[:=]?\s*{name}\b"
    return re.search(f"{quoted}|{labelled}", failure.message, re.IGNORECASE) is not None
