"""The simulated Batch API's files and wire formats: a stored file, a multipart upload
read, the JSONL lines of output and error files, and the API's error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..llm.transport import HttpResponse

__all__ = [
    "ApiError",
    "StoredFile",
    "error_entry",
    "json_response",
    "output_line",
    "parse_multipart",
]

_JSON = "application/json"


@dataclass
class StoredFile:
    id: str
    purpose: str
    filename: str
    data: bytes
    created_at: int

    def as_object(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


class ApiError(Exception):
    """A Batch API request refused: its HTTP status, message and error code."""

    def __init__(self, status: int, message: str, code: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def error_entry(code: str, message: str, line: int | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "param": None, "line": line}


def output_line(
    rid: str, custom_id: str, response: dict[str, Any] | None, error: dict[str, Any] | None
) -> bytes:
    line = {"id": rid, "custom_id": custom_id, "response": response, "error": error}
    return orjson.dumps(line) + b"\n"


def json_response(data: dict[str, Any]) -> HttpResponse:
    return HttpResponse(status=200, headers={"content-type": _JSON}, body=orjson.dumps(data))


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[bytes, str]]:
    """``{field name: (value, filename)}`` of a multipart/form-data body."""
    boundary = ""
    for param in content_type.split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.lower() == "boundary":
            boundary = value.strip('"')
    if not content_type.lower().startswith("multipart/form-data") or not boundary:
        raise ApiError(400, "Expected a multipart/form-data body.", None)
    fields: dict[str, tuple[bytes, str]] = {}
    delimiter = b"--" + boundary.encode()
    for chunk in body.split(delimiter)[1:]:
        if chunk.startswith(b"--"):
            break  # the closing delimiter
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            continue
        if content.endswith(b"\r\n"):
            content = content[:-2]
        name = filename = ""
        for header in head.decode("utf-8", "replace").split("\r\n"):
            key, _, value = header.partition(":")
            if key.strip().lower() != "content-disposition":
                continue
            for item in value.split(";")[1:]:
                k, _, v = item.strip().partition("=")
                if k == "name":
                    name = v.strip('"')
                elif k == "filename":
                    filename = v.strip('"')
        if name:
            fields[name] = (content, filename)
    return fields
