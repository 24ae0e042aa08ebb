"""The simulator's Batch API: ``/v1/files`` and ``/v1/batches``, as OpenAI serves them.

A batch goes validating -> in_progress -> finalizing -> completed on the simulator's batch
clock (``BatchSimConfig``): its lines are done in file order, at an even pace over
``duration_s``, so a batch read half way has half its lines done. A batch still running
``expire_s`` after creation expires; a cancelled one stops where it was. Either way the lines
done so far are in the output file and the rest are in the error file (``batch_expired`` /
``batch_cancelled``), as OpenAI does.

Each line is answered with exactly what ``POST /v1/chat/completions`` would answer for the
same body (the simulator's own deterministic answers), and billed when its batch ends, at
the batch price: ``(1 - discount)`` of the tokens' price. Where the provider caches prompts
in batches (``CacheConfig.caches_in_batch``: as OpenAI, the GPT-5 family and later), the
lines go through a prefix cache of the Batch API's own, in file order, each at the time the
batch clock says it was done; their cached tokens are billed at ``(1 - discount)`` of the
cached price. A share ``fail_rate`` of lines is answered with a 500 in the line (drawn per
body and attempt, so a resubmitted line can succeed); a line longer than the context is
answered 400, as the chat endpoint would.
``stats`` adds what batches billed to the simulator's own counters, separately and in the
total, so tests check a run's budget from the provider's side.

Files and batches live in memory: a client that is killed and comes back finds them.

The parts: ``BatchSimConfig`` (config.py), the service and its batches' lifecycle
(batch_jobs.py), files and wire formats (batch_files.py); here, attaching the service to a
simulator.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

from ..llm.transport import HttpResponse
from .batch_files import json_response
from .batch_jobs import BatchService
from .config import BatchSimConfig
from .request import error_response

__all__ = [
    "add_batch_routes",
    "batch_service",
    "in_process_handlers",
    "with_batch_stats",
]

# -- attaching the service to a simulator ------------------------------------------------

_SERVICES: weakref.WeakKeyDictionary[Any, BatchService] = weakref.WeakKeyDictionary()


def batch_service(sim: Any) -> BatchService:
    """The Batch API of ``sim`` (made on first use, from ``sim.config.batch``)."""
    service = _SERVICES.get(sim)
    if service is None:
        config = getattr(sim.config, "batch", None) or BatchSimConfig()
        service = _SERVICES[sim] = BatchService(sim, config)
    return service


def with_batch_stats(sim: Any, stats: dict[str, Any]) -> dict[str, Any]:
    """The simulator's ``stats`` with what batches billed: in ``batch`` and in the totals."""
    batch = batch_service(sim).stats()
    keys = stats.get("billed_keys")
    out = dict(stats)
    out["interactive_billed_usd"] = stats["billed_usd"]
    out["billed_usd"] = stats["billed_usd"] + batch["billed_usd"]
    out["billed_requests"] = stats["billed_requests"] + batch["billed_requests"]
    billed: dict[str, int] = dict(keys if keys is not None else sim.stats()["billed_keys"])
    for digest, count in batch["billed_keys"].items():
        billed[digest.hex()] = billed.get(digest.hex(), 0) + count
    out["duplicate_bills"] = out["billed_requests"] - len(billed)
    if keys is not None:
        out["billed_keys"] = billed
    out["batch"] = {k: v for k, v in batch.items() if k != "billed_keys"}
    return out


def in_process_handlers(sim: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(post, get) handlers for ``HandlerTransport``: the Batch API, then the chat endpoint."""
    service = batch_service(sim)

    async def post(path: str, headers: Mapping[str, str], body: bytes) -> HttpResponse:
        response = await service.handle("POST", path, headers, body)
        return response if response is not None else await sim.handle(path, headers, body)

    async def get(path: str, headers: Mapping[str, str]) -> HttpResponse:
        response = await service.handle("GET", path, headers, b"")
        if response is not None:
            return response
        if path.split("?", 1)[0].rstrip("/").endswith("/models"):
            return json_response(sim.models())
        return error_response(404, f"Unknown request URL: GET {path}.", "invalid_request_error")

    return post, get


def add_batch_routes(app: Any, sim: Any) -> None:
    """Serve ``sim``'s Batch API from an aiohttp application."""
    from aiohttp import web

    service = batch_service(sim)

    async def route(request: web.Request) -> web.Response:
        body = await request.read()
        resp = await service.handle(request.method, request.path_qs, request.headers, body)
        assert resp is not None  # only batch paths are routed here
        return web.Response(status=resp.status, body=resp.body, headers=resp.headers)

    for prefix in ("/v1", ""):
        app.router.add_route("*", prefix + "/files", route)
        app.router.add_route("*", prefix + "/files/{tail:.*}", route)
        app.router.add_route("*", prefix + "/batches", route)
        app.router.add_route("*", prefix + "/batches/{tail:.*}", route)
