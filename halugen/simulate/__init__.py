"""halugen's built-in OpenAI-compatible provider, for tests, benchmarks and the demo.

``Simulator(SimConfig(...)).handle`` answers chat-completions requests in process (wrap it
in ``halugen.llm.transport.HandlerTransport``); ``serve`` / ``run_server`` put the same
object behind an aiohttp server on loopback. Modules:

    answers.py     what the model says: reads the prompt, picks the kind of reply (pure)
    mutate.py      wrong-but-plausible variants of a right answer (hallucination replies)
    plain.py       answers to plain user queries (contradicting or paraphrasing variants)
    words.py       names, content words, normalise (precompiled, hot path)
    keys.py        deterministic "randomness": every choice is a hash
    tokens.py      the byte-length token rule used for usage and limits
    caching.py     automatic prompt caching: prefixes, retention, routing, which models
    limits.py      the account's per-minute token buckets and x-ratelimit-* headers
    request.py     reading and checking a request body; OpenAI-style error bodies
    config.py      SimConfig: what the simulated provider is set to do
    completion.py  the body of a chat completion: replies, cuts, logprobs, usage
    simulator.py   Simulator: routing, auth, limits, faults, billing, capacity
    server.py      the aiohttp app, serve(), run_server()
    batch.py       the Batch API (/v1/files, /v1/batches) attached to a simulator
    batch_jobs.py  the Batch API's service: batches' lifecycle, their lines answered and billed
    batch_files.py the Batch API's files, multipart uploads, output lines and errors
"""

from __future__ import annotations

from .caching import CacheConfig
from .config import FAULT_KINDS, SimConfig
from .server import SIMULATOR, build_app, run_server, serve
from .simulator import SimulatedDrop, SimulatedRefusal, Simulator

__all__ = [
    "FAULT_KINDS",
    "SIMULATOR",
    "CacheConfig",
    "SimConfig",
    "SimulatedDrop",
    "SimulatedRefusal",
    "Simulator",
    "build_app",
    "run_server",
    "serve",
]
