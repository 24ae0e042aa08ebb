"""The simulated Batch API's jobs: ``BatchService`` answers ``/v1/files`` and
``/v1/batches`` for one simulator, reads input files, moves each batch through its
lifecycle on the batch clock, answers and bills its lines, and writes its output files
(the behaviour is described in batch.py)."""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import orjson

from ..llm.transport import HttpResponse
from ..records import canonical_json
from .batch_files import (
    ApiError,
    StoredFile,
    error_entry,
    json_response,
    output_line,
    parse_multipart,
)
from .caching import PrefixCache
from .completion import chat_completion
from .config import BatchSimConfig
from .keys import key64, unit
from .request import BadRequest, error_response
from .structured import FormatRefused

__all__ = ["BatchService"]

BATCH_ENDPOINT = "/v1/chat/completions"
_STATUSES_FINAL = frozenset({"failed", "completed", "expired", "cancelled"})


@dataclass
class _Line:
    custom_id: str
    body: dict[str, Any]
    digest: bytes  # sha256 of the canonical body, as the chat endpoint bills it
    outcome: str  # ok | fail (a 500 in the line) | bad (a 400: the chat endpoint's check)
    message: str = ""
    code: str | None = None
    param: str | None = None


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, Any] | None
    created: float  # batch clock
    created_at: int  # unix seconds, for the batch object
    lines: list[_Line]
    errors: list[dict[str, Any]]  # validation errors: the batch fails
    cancelled: float | None = None  # batch clock at the cancel request
    final: str | None = None  # the final status once its files are made
    output_file_id: str | None = None
    error_file_id: str | None = None
    done_ok: int = 0
    done_failed: int = 0
    stamps: dict[str, int] = field(default_factory=dict)


class BatchService:
    """The Batch API of one ``Simulator``; ``handle`` answers its routes."""

    def __init__(self, sim: Any, config: BatchSimConfig) -> None:
        self.sim = sim
        self.config = config
        self._files: dict[str, StoredFile] = {}
        self._batches: dict[str, _Batch] = {}
        self._ids = itertools.count(1)
        self._attempts: dict[bytes, int] = {}
        self._now = config.clock()
        # the batch engines' own cache, not the chat one's
        self.cache = PrefixCache(sim.config.cache, sim.tokens)
        self.reset()

    # -- bookkeeping -----------------------------------------------------------------------

    def reset(self) -> None:
        """Zero the batch bill (files and batches stay, as at a provider)."""
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cached_tokens = 0
        self._billed: dict[bytes, int] = {}
        self._billed_requests = 0
        self._created = 0
        self.cache.reset()
        self._cancels = 0
        self._uploads = 0

    def _usd(self, prompt: int, completion: int, cached: int = 0) -> float:
        full = self.sim.config.bill_usd(prompt, completion, cached)
        return full * (1.0 - self.config.discount)

    def stats(self) -> dict[str, Any]:
        """What batches billed: tokens, requests, USD at the batch price, per-key counts."""
        self._now = self.config.clock()
        for batch in self._batches.values():
            self._advance(batch)  # a provider bills what ended, whether anyone looked or not
        by_status: dict[str, int] = {}
        for batch in self._batches.values():
            status = self._status(batch)
            by_status[status] = by_status.get(status, 0) + 1
        return {
            "batches_created": self._created,
            "batches_by_status": by_status,
            "cancel_requests": self._cancels,
            "files_uploaded": self._uploads,
            "prompt_tokens": self._prompt_tokens,
            "completion_tokens": self._completion_tokens,
            "cached_tokens": self._cached_tokens,
            "billed_requests": self._billed_requests,
            "billed_usd": self._usd(
                self._prompt_tokens, self._completion_tokens, self._cached_tokens
            ),
            "cache": self.cache.stats(),
            "billed_keys": self._billed,
        }

    def batch_ids(self) -> list[str]:
        return list(self._batches)

    # -- routing ---------------------------------------------------------------------------

    async def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> HttpResponse | None:
        """Answer a Batch API request; None when ``path`` is not one of its routes."""
        route, _, query = path.partition("?")
        parts = [p for p in route.split("/") if p]
        if parts and parts[0] == "v1":
            parts = parts[1:]
        if not parts or parts[0] not in ("files", "batches"):
            return None
        if not self.sim.authorised(headers):
            return self.sim.unauthorised()
        self._now = self.config.clock()  # one reading per request: every answer agrees
        try:
            if parts[0] == "files":
                return self._files_route(method, parts[1:], headers, body)
            return self._batches_route(method, parts[1:], body, parse_qs(query))
        except ApiError as exc:
            return error_response(exc.status, exc.message, "invalid_request_error", exc.code)

    def _files_route(
        self, method: str, rest: list[str], headers: Mapping[str, str], body: bytes
    ) -> HttpResponse:
        if method == "POST" and not rest:
            return json_response(self._upload(headers, body).as_object())
        if method == "GET" and rest:
            file = self._files.get(rest[0])
            if file is None:
                raise ApiError(404, f"No such File object: {rest[0]}", "not_found")
            if len(rest) == 1:
                return json_response(file.as_object())
            if rest[1:] == ["content"]:
                return HttpResponse(
                    status=200, headers={"content-type": "application/octet-stream"}, body=file.data
                )
        raise ApiError(404, f"Unknown request URL: {method} /v1/files/{'/'.join(rest)}", None)

    def _batches_route(
        self, method: str, rest: list[str], body: bytes, query: dict[str, list[str]]
    ) -> HttpResponse:
        if method == "POST" and not rest:
            return json_response(self._object(self._create(body)))
        if method == "GET" and not rest:
            return json_response(self._list(query))
        if rest:
            batch = self._batches.get(rest[0])
            if batch is None:
                raise ApiError(404, f"No batch found with id '{rest[0]}'.", "not_found")
            if method == "GET" and len(rest) == 1:
                return json_response(self._object(batch))
            if method == "POST" and rest[1:] == ["cancel"]:
                return json_response(self._object(self._cancel(batch)))
        raise ApiError(404, f"Unknown request URL: {method} /v1/batches/{'/'.join(rest)}", None)

    # -- files -----------------------------------------------------------------------------

    def _upload(self, headers: Mapping[str, str], body: bytes) -> StoredFile:
        fields = parse_multipart(headers.get("content-type", ""), body)
        purpose = fields.get("purpose", (b"", ""))[0].decode("utf-8", "replace")
        if "file" not in fields:
            raise ApiError(400, "Missing required parameter: 'file'.", "missing_required_parameter")
        if purpose != "batch":
            raise ApiError(400, f"'{purpose}' is not a supported purpose here.", "invalid_value")
        data, filename = fields["file"]
        file = self._new_file(data, filename or "upload.jsonl", purpose)
        self._uploads += 1
        return file

    def _new_file(self, data: bytes, filename: str, purpose: str) -> StoredFile:
        fid = f"file-sim{next(self._ids):06d}"
        file = self._files[fid] = StoredFile(fid, purpose, filename, data, int(time.time()))
        return file

    # -- batches ---------------------------------------------------------------------------

    def _create(self, body: bytes) -> _Batch:
        try:
            req = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ApiError(400, "We could not parse the JSON body of your request.", None) from None
        if not isinstance(req, dict):
            raise ApiError(400, "The request body must be a JSON object.", None)
        file = self._files.get(str(req.get("input_file_id")))
        if file is None:
            raise ApiError(404, f"No such File object: {req.get('input_file_id')}", "not_found")
        endpoint = req.get("endpoint")
        if endpoint != BATCH_ENDPOINT:
            raise ApiError(400, f"Unsupported endpoint {endpoint!r} here.", "invalid_value")
        if req.get("completion_window") != "24h":
            raise ApiError(400, "completion_window must be '24h'.", "invalid_value")
        lines, errors = self._read_input(file.data)
        bid = f"batch_sim{next(self._ids):06d}"
        batch = self._batches[bid] = _Batch(
            id=bid,
            input_file_id=file.id,
            endpoint=endpoint,
            completion_window="24h",
            metadata=req.get("metadata") if isinstance(req.get("metadata"), dict) else None,
            created=self._now,
            created_at=int(time.time()),
            lines=lines,
            errors=errors,
        )
        self._created += 1
        return batch

    def _read_input(self, data: bytes) -> tuple[list[_Line], list[dict[str, Any]]]:
        cfg = self.config
        errors: list[dict[str, Any]] = []
        if len(data) > cfg.max_bytes:
            return [], [error_entry("file_too_large", f"The file is over {cfg.max_bytes} bytes.")]
        lines: list[_Line] = []
        seen: set[str] = set()
        models: set[str] = set()
        for n, raw in enumerate(data.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                item = orjson.loads(raw)
            except orjson.JSONDecodeError:
                errors.append(error_entry("invalid_json_line", "This line is not valid JSON.", n))
                continue
            if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
                errors.append(
                    error_entry("missing_required_parameter", "custom_id is required.", n)
                )
                continue
            if item["custom_id"] in seen:
                errors.append(error_entry("duplicate_custom_id", "custom_id is used twice.", n))
                continue
            if item.get("method") != "POST" or item.get("url") != BATCH_ENDPOINT:
                errors.append(
                    error_entry("invalid_url", f"url must be {BATCH_ENDPOINT} (POST).", n)
                )
                continue
            if not isinstance(item.get("body"), dict):
                errors.append(error_entry("invalid_request", "body must be an object.", n))
                continue
            seen.add(item["custom_id"])
            models.add(str(item["body"].get("model")))
            lines.append(self._line(item["custom_id"], item["body"]))
        if len(lines) > cfg.max_requests:
            errors.append(
                error_entry(
                    "too_many_requests", f"A batch holds at most {cfg.max_requests} requests."
                )
            )
        if len(models) > 1:
            errors.append(
                error_entry("mismatched_model", "Every line of a batch must use one model.")
            )
        if not lines and not errors:
            errors.append(error_entry("empty_file", "The file holds no requests."))
        return lines, errors

    def _line(self, custom_id: str, body: dict[str, Any]) -> _Line:
        sim = self.sim
        digest = hashlib.sha256(canonical_json(body)).digest()
        try:
            req = sim.apply_format_policy(sim.parse(orjson.dumps(body)))
            window = sim.config.context_window
            if req.prompt_tokens + (req.max_tokens or 0) > window:
                raise BadRequest(
                    f"This model's maximum context length is {window} tokens; the request "
                    f"asks for {req.prompt_tokens + (req.max_tokens or 0)}.",
                    "messages",
                    "context_length_exceeded",
                )
        except BadRequest as exc:
            return _Line(custom_id, body, digest, "bad", str(exc), exc.code, exc.param)
        except FormatRefused as exc:
            return _Line(custom_id, body, digest, "fail", str(exc))
        if self.config.fail_rate > 0:
            attempt = self._attempts.get(digest, 0) + 1
            self._attempts[digest] = attempt
            if unit(key64(sim.config.seed, digest, attempt, "batch-fail")) < self.config.fail_rate:
                return _Line(custom_id, body, digest, "fail", "The server had an error.")
        return _Line(custom_id, body, digest, "ok")

    def _cancel(self, batch: _Batch) -> _Batch:
        status = self._status(batch)
        if status in _STATUSES_FINAL or status == "cancelling":
            if status != "cancelling":
                raise ApiError(400, f"Cannot cancel a batch with status '{status}'.", None)
            return batch
        batch.cancelled = self._now
        batch.stamps["cancelling_at"] = int(time.time())
        self._cancels += 1
        return batch

    def _list(self, query: dict[str, list[str]]) -> dict[str, Any]:
        limit = max(1, min(100, int((query.get("limit") or ["20"])[0] or 20)))
        after = (query.get("after") or [""])[0]
        ids = list(reversed(self._batches))  # newest first, as OpenAI lists them
        if after and after in self._batches:
            ids = ids[ids.index(after) + 1 :]
        page = ids[:limit]
        return {
            "object": "list",
            "data": [self._object(self._batches[i]) for i in page],
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
            "has_more": len(ids) > len(page),
        }

    # -- time ------------------------------------------------------------------------------

    def _duration(self, batch: _Batch) -> float:
        cfg = self.config
        return cfg.duration_s if cfg.line_s is None else cfg.line_s * len(batch.lines)

    def _done_at(self, batch: _Batch, t: float) -> int:
        """Lines done ``t`` seconds after the batch was created."""
        run = t - self.config.validating_s
        if run <= 0:
            return 0
        total = len(batch.lines)
        duration = self._duration(batch)
        if duration <= 0:
            return total
        return min(total, math.floor(total * run / duration))

    def _status(self, batch: _Batch) -> str:
        if batch.final is not None:
            return batch.final
        cfg = self.config
        t = self._now - batch.created
        if t < cfg.validating_s:
            return "validating"
        if batch.errors:
            return "failed"
        if batch.cancelled is not None:
            waited = self._now - batch.cancelled
            return "cancelling" if waited < cfg.cancel_s else "cancelled"
        expired = cfg.expire_s is not None and t >= cfg.expire_s
        if expired and self._done_at(batch, cfg.expire_s or 0.0) < len(batch.lines):
            return "expired"
        duration = self._duration(batch)
        if t < cfg.validating_s + duration:
            return "in_progress"
        if t < cfg.validating_s + duration + cfg.finalizing_s:
            return "finalizing"
        return "completed"

    def _advance(self, batch: _Batch) -> str:
        """The batch's status now; makes its files (and bills) once it has ended."""
        status = self._status(batch)
        if batch.final is None and status in _STATUSES_FINAL:
            self._finish(batch, status)
        return status

    def _finish(self, batch: _Batch, status: str) -> None:
        cfg = self.config
        batch.final = status
        batch.stamps[f"{status}_at"] = int(time.time())
        if status == "failed":
            return
        if status == "cancelled":
            assert batch.cancelled is not None
            done = self._done_at(batch, batch.cancelled - batch.created)
        elif status == "expired":
            assert cfg.expire_s is not None
            done = self._done_at(batch, cfg.expire_s)
        else:
            done = len(batch.lines)
        out: list[bytes] = []
        errs: list[bytes] = []
        for i, line in enumerate(batch.lines):
            rid = f"batch_req_{line.digest.hex()[:20]}{i:05d}"
            if i >= done:
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                message = (
                    "This request could not be executed before the completion window expired."
                    if status == "expired"
                    else "This request was not executed: the batch was cancelled."
                )
                errs.append(
                    output_line(rid, line.custom_id, None, {"code": code, "message": message})
                )
                continue
            if line.outcome == "ok":
                payload = self._answer(line, self._line_time(batch, i))
                response = {"status_code": 200, "request_id": f"req_{rid[10:]}", "body": payload}
                out.append(output_line(rid, line.custom_id, response, None))
                batch.done_ok += 1
                continue
            status_code = 400 if line.outcome == "bad" else 500
            kind = "invalid_request_error" if line.outcome == "bad" else "server_error"
            error = {"message": line.message, "type": kind, "param": line.param, "code": line.code}
            response = {"status_code": status_code, "request_id": f"req_{rid[10:]}"}
            errs.append(
                output_line(rid, line.custom_id, {**response, "body": {"error": error}}, None)
            )
            batch.done_failed += 1
        if out:
            batch.output_file_id = self._new_file(b"".join(out), "output.jsonl", "batch_output").id
        if errs:
            batch.error_file_id = self._new_file(b"".join(errs), "errors.jsonl", "batch_output").id

    def _line_time(self, batch: _Batch, i: int) -> float:
        """When line ``i`` was done, on the batch clock (lines go at an even pace)."""
        total = len(batch.lines)
        return batch.created + self.config.validating_s + self._duration(batch) * (i + 1) / total

    def _answer(self, line: _Line, when: float) -> dict[str, Any]:
        """What the chat endpoint answers for this body (no faults, no latency), billed."""
        sim = self.sim
        req = sim.apply_format_policy(sim.parse(orjson.dumps(line.body)))
        n_out = req.n if sim.config.honour_n else 1
        cached = 0
        if sim.config.cache.caches_in_batch(req.model):
            cached = self.cache.serve(req.model, req.body, req.contents, req.prompt_tokens, when)
        # the simulator's own answer path: same texts, same usage as an interactive call
        payload, completion_tokens = chat_completion(
            sim.config, sim.oracle, req, n_out, line.digest, None, cached, sim.tokens
        )
        self._prompt_tokens += req.prompt_tokens
        self._completion_tokens += completion_tokens
        self._cached_tokens += cached
        self._billed_requests += 1
        self._billed[line.digest] = self._billed.get(line.digest, 0) + 1
        return payload

    def _object(self, batch: _Batch) -> dict[str, Any]:
        status = self._advance(batch)
        total = len(batch.lines)
        if batch.final is not None:
            completed, failed = batch.done_ok, batch.done_failed
        elif status in ("in_progress", "finalizing", "cancelling"):
            now = self._now if batch.cancelled is None else batch.cancelled
            done = self._done_at(batch, now - batch.created)
            failed = sum(1 for line in batch.lines[:done] if line.outcome != "ok")
            completed = done - failed
        else:
            completed = failed = 0
        expires_at = batch.created_at + 24 * 3600
        obj: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": batch.completion_window,
            "status": status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": batch.created_at,
            "in_progress_at": None,
            "expires_at": expires_at,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": batch.metadata,
        }
        obj.update(batch.stamps)
        return obj
