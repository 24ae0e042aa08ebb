"""The OpenAI batch file format: input lines written, output lines read and checked.

Input line (one request; ``custom_id`` is halugen's request key):

    {"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

Output line (OpenAI's output and error files; vLLM's ``run_batch`` writes the same shape
into one file, errors included, with ``error`` a string or an error object):

    {"id": ..., "custom_id": KEY, "response": {"status_code": 200, "request_id": ...,
     "body": {chat completion}}, "error": null}

A line is a success when its response has status 200 and a chat-completion body (read by
the client's one reader, ``read_completion``); anything else is a failure, retryable
(expired, cancelled, 408/409/429/5xx) or not (4xx).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import InputError
from ..llm.batch_client import BATCH_ENDPOINT
from ..llm.client import Completion, UnreadableCompletion, read_completion

__all__ = [
    "OutputLine",
    "input_line",
    "read_output",
    "read_output_lenient",
    "split_lines",
]

_RETRYABLE_CODES = frozenset({"batch_expired", "batch_cancelled"})


def input_line(custom_id: str, body: bytes) -> bytes:
    """One line of a batch input file; ``body`` is the request JSON as halugen sends it."""
    line = {
        "custom_id": custom_id,
        "method": "POST",
        "url": BATCH_ENDPOINT,
        "body": orjson.Fragment(body),  # the exact bytes: what the request key was made from
    }
    return orjson.dumps(line) + b"\n"


def split_lines(
    lines: Iterable[tuple[Any, bytes]], *, max_requests: int, max_bytes: int
) -> Iterator[list[tuple[Any, bytes]]]:
    """Consecutive groups of (item, line) within both limits of one batch file.

    A line larger than ``max_bytes`` on its own is yielded alone (the caller refuses it).
    """
    group: list[tuple[Any, bytes]] = []
    size = 0
    for item, line in lines:
        if group and (len(group) >= max_requests or size + len(line) > max_bytes):
            yield group
            group, size = [], 0
        group.append((item, line))
        size += len(line)
    if group:
        yield group


@dataclass(frozen=True, slots=True)
class OutputLine:
    """One line of an output (or error) file, read and classified."""

    line_no: int
    custom_id: str
    status_code: int  # 0 when the line has no response (expired, cancelled)
    completion: Completion | None  # the chat completion, for a success
    error: str  # "" for a success
    code: str = ""  # the provider's error code, when it gave one
    request_body: Any = None  # the request, when the line carries it (some tools echo it)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def retryable(self) -> bool:
        if self.ok:
            return False
        status = self.status_code
        return (
            self.code in _RETRYABLE_CODES
            or status in (0, 408, 409, 429)
            or status >= 500
            or self.code == "rate_limit_exceeded"
        )


def read_output(data: bytes, source: str) -> Iterator[OutputLine]:
    """The lines of an output file; a malformed line is an InputError naming it."""
    for n, raw in enumerate(data.splitlines(), start=1):
        if raw.strip():
            yield _read_line(raw, n, source)


def read_output_lenient(data: bytes, source: str) -> tuple[list[OutputLine], int]:
    """The readable lines of a provider's output file, and how many lines were not readable."""
    lines = []
    bad = 0
    for n, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            lines.append(_read_line(raw, n, source))
        except InputError:
            bad += 1
    return lines, bad


def _read_line(raw: bytes, n: int, source: str) -> OutputLine:
    where = f"{source} line {n}"
    try:
        item = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise InputError(f"{where}: not a JSON object (a batch output line is one)") from None
    if not isinstance(item, dict):
        raise InputError(f"{where}: not a JSON object (a batch output line is one)")
    custom_id = item.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise InputError(f"{where}: no custom_id")
    if "response" not in item and "error" not in item:
        hint = (
            " (this is a request line: import the file the engine wrote)" if "body" in item else ""
        )
        raise InputError(f"{where}: neither a response nor an error{hint}")
    echoed = item.get("request", item.get("body"))
    response = item.get("response")
    if response is not None and not isinstance(response, dict):
        raise InputError(f"{where}: 'response' is not an object")
    status = 0
    body = None
    if response is not None:
        status = response.get("status_code", 200)
        if isinstance(status, bool) or not isinstance(status, int):
            raise InputError(f"{where}: response.status_code is not an integer")
        body = response.get("body")
        if body is not None and not isinstance(body, dict):
            raise InputError(f"{where}: response.body is not an object")
    message, code = _error_of(item.get("error"), body)
    if status == 200 and not message:
        try:
            completion = read_completion(body if body is not None else {})
        except UnreadableCompletion as exc:
            raise InputError(
                f"{where}: status 200 without a chat completion in response.body ({exc})"
            ) from None
        return OutputLine(n, custom_id, 200, completion, "", "", echoed)
    if not message:
        message = f"HTTP {status}" if status else "no response"
    return OutputLine(n, custom_id, status, None, message[:500], code, echoed)


def _error_of(error: Any, body: dict[str, Any] | None) -> tuple[str, str]:
    """(message, code) of a failed line, from ``error`` or an error body; ("", "") if none."""
    for candidate in (error, (body or {}).get("error") if body else None):
        if candidate is None:
            continue
        if isinstance(candidate, str):
            return candidate or "error", ""
        if isinstance(candidate, dict):
            inner = candidate.get("error", candidate)  # vLLM: {"error": {...}} or flat
            if isinstance(inner, str):
                return inner, ""
            if isinstance(inner, dict):
                message = str(inner.get("message") or inner.get("code") or "error")
                code = inner.get("code")
                return message, str(code) if isinstance(code, str) else ""
        return str(candidate), ""
    return "", ""
