"""The OpenAI Batch API client: upload a JSONL file, create, poll, cancel, list, download.

One call per method, through the same transport seam as chat calls; failures come out as
halugen's error tree (the status codes read as in client.py). Retrying is the caller's
(halugen/batch/jobs.py), because some steps (creating a batch) must be checked before they
are tried again.

    POST /files (multipart, purpose=batch)     -> file id
    POST /batches {input_file_id, endpoint, completion_window: "24h", metadata}
    GET  /batches/{id}   POST /batches/{id}/cancel   GET /batches?limit&after
    GET  /files/{id}/content
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..config import Timeouts
from ..errors import RetryableError
from .client import error_for
from .transport import HttpResponse, Transport

__all__ = ["BATCH_ENDPOINT", "FINAL_STATUSES", "BatchClient", "BatchInfo"]

BATCH_ENDPOINT = "/v1/chat/completions"
# a batch in one of these states changes no more (its output and error files are final)
FINAL_STATUSES = frozenset({"failed", "completed", "expired", "cancelled"})


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What the provider says about one batch."""

    id: str
    status: str  # validating | failed | in_progress | finalizing | completed | expired | ...
    input_file_id: str = ""
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    created_at: int = 0
    errors: tuple[str, ...] = ()  # validation errors of a failed batch, one line each
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES

    @classmethod
    def from_json(cls, data: Any) -> BatchInfo:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise ValueError("not a batch object")
        counts = data.get("request_counts") or {}
        errors = []
        for err in (data.get("errors") or {}).get("data") or []:
            if isinstance(err, dict):
                line = f" (line {err['line']})" if err.get("line") else ""
                errors.append(f"{err.get('code') or 'error'}: {err.get('message') or ''}{line}")
        return cls(
            id=data["id"],
            status=str(data.get("status") or ""),
            input_file_id=str(data.get("input_file_id") or ""),
            output_file_id=data.get("output_file_id") or None,
            error_file_id=data.get("error_file_id") or None,
            total=int(counts.get("total") or 0),
            completed=int(counts.get("completed") or 0),
            failed=int(counts.get("failed") or 0),
            created_at=int(data.get("created_at") or 0),
            errors=tuple(errors),
            metadata=data.get("metadata") or {},
        )


class BatchClient:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        transport: Transport,
        timeouts: Timeouts = Timeouts(),
    ) -> None:
        self.base = base_url.rstrip("/")
        self._secret = api_key or ""
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._transport = transport
        self._timeouts = timeouts

    async def upload(self, data: bytes, *, filename: str = "batch.jsonl") -> str:
        """Upload a batch input file; returns its file id."""
        boundary = f"halugen-{uuid.uuid4().hex}"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{filename}"\r\nContent-Type: application/jsonl\r\n\r\n'
        ).encode()
        body = head + data + f"\r\n--{boundary}--\r\n".encode()
        headers = {**self._auth, "Content-Type": f"multipart/form-data; boundary={boundary}"}
        resp = await self._transport.post(f"{self.base}/files", headers, body, self._timeouts)
        data_ = self._json(resp, "uploading the batch file")
        file_id = data_.get("id") if isinstance(data_, dict) else None
        if not isinstance(file_id, str):
            raise RetryableError("the server answered the upload without a file id", status=200)
        return file_id

    async def create(
        self, input_file_id: str, *, metadata: Mapping[str, str] | None = None
    ) -> BatchInfo:
        payload: dict[str, Any] = {
            "input_file_id": input_file_id,
            "endpoint": BATCH_ENDPOINT,
            "completion_window": "24h",
        }
        if metadata:
            payload["metadata"] = dict(metadata)
        headers = {**self._auth, "Content-Type": "application/json"}
        resp = await self._transport.post(
            f"{self.base}/batches", headers, orjson.dumps(payload), self._timeouts
        )
        return self._batch(resp, "creating the batch")

    async def get(self, batch_id: str) -> BatchInfo:
        resp = await self._transport.get(
            f"{self.base}/batches/{batch_id}", self._auth, self._timeouts
        )
        return self._batch(resp, f"reading batch {batch_id}")

    async def cancel(self, batch_id: str) -> BatchInfo:
        headers = {**self._auth, "Content-Type": "application/json"}
        resp = await self._transport.post(
            f"{self.base}/batches/{batch_id}/cancel", headers, b"{}", self._timeouts
        )
        return self._batch(resp, f"cancelling batch {batch_id}")

    async def list(
        self, *, after: str | None = None, limit: int = 100
    ) -> tuple[list[BatchInfo], bool]:
        """One page of the account's batches, newest first; (batches, has_more)."""
        query = f"?limit={limit}" + (f"&after={after}" if after else "")
        resp = await self._transport.get(f"{self.base}/batches{query}", self._auth, self._timeouts)
        data = self._json(resp, "listing batches")
        try:
            items = [BatchInfo.from_json(d) for d in data["data"]]
        except (KeyError, TypeError, ValueError):
            raise RetryableError("the batch list is not a list of batches", status=200) from None
        return items, bool(data.get("has_more"))

    async def content(self, file_id: str) -> bytes:
        """The bytes of a file (a batch's output or error file)."""
        resp = await self._transport.get(
            f"{self.base}/files/{file_id}/content", self._auth, self._timeouts
        )
        if resp.status != 200:
            raise error_for(resp, self._secret)
        return resp.body

    # -- parsing ---------------------------------------------------------------------------

    def _json(self, resp: HttpResponse, doing: str) -> Any:
        if resp.status != 200:
            err = error_for(resp, self._secret)
            err.args = (f"{doing}: {err}",)
            raise err
        try:
            return orjson.loads(resp.body)
        except orjson.JSONDecodeError:
            raise RetryableError(f"{doing}: the answer is not JSON", status=200) from None

    def _batch(self, resp: HttpResponse, doing: str) -> BatchInfo:
        data = self._json(resp, doing)
        try:
            return BatchInfo.from_json(data)
        except (ValueError, TypeError, AttributeError):
            raise RetryableError(f"{doing}: the answer is not a batch object", status=200) from None
