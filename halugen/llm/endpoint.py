"""What a server says about itself: the models it serves and its context window.

Asked once, before a run, so that pointing ``--base-url`` at a local server is the only
change a user makes:

- ``GET {base}/models`` (every OpenAI-compatible server): the model ids. vLLM adds
  ``max_model_len`` to each model; some servers give ``context_length`` or ``n_ctx``.
- ``GET {root}/props`` (llama.cpp's server, at the root, not under ``/v1``):
  ``default_generation_settings.n_ctx``, and ``total_slots``, the requests it serves at
  once (``announced_slots``: the concurrency cap keeps to them, llm/capacity.py).

A server that answers neither is fine: OpenAI's windows come from the price card, and a
context-length error teaches the window during the run (see ``context_window_from_error``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..config import Timeouts
from ..errors import ConnectFailed, EndpointUnreachable, LLMError, UsageError
from .transport import Transport

__all__ = [
    "EndpointInfo",
    "announced_slots",
    "context_window_from_error",
    "describe_endpoint",
    "is_openai",
    "pick_model",
    "prompt_cache_key",
    "takes_cache_key",
]

_PROBE_TIMEOUTS = Timeouts(connect=5.0, read=10.0, total=15.0)
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"


@dataclass(frozen=True, slots=True)
class EndpointInfo:
    models: tuple[str, ...] = ()
    context_windows: dict[str, int] | None = None  # per model id, where the server says
    source: str = ""  # which answer gave the windows: "models" | "props"
    unreachable: str = ""  # why no connection could be made, when none could
    # llama.cpp's total_slots, when its /props gave the window (each slot's share of -c)
    slots: int | None = None

    def window(self, model: str) -> int | None:
        windows = self.context_windows or {}
        if model in windows:
            return windows[model]
        if len(windows) == 1 and len(self.models) <= 1:
            return next(iter(windows.values()))
        return None


def is_openai(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "api.openai.com"


def takes_cache_key(base_url: str) -> bool:
    """Does the endpoint take ``prompt_cache_key``? OpenAI's API documents it; other servers
    may refuse a field they do not know, so it is sent to OpenAI's only."""
    return is_openai(base_url)


def prompt_cache_key(template_name: str) -> str:
    """One ``prompt_cache_key`` per template (its requests share their opening), at most
    64 characters: the template's name, or a digest of a long one."""
    key = f"halugen/{template_name}"
    if len(key) <= 64:
        return key
    return "halugen/" + hashlib.sha256(template_name.encode("utf-8")).hexdigest()[:32]


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def describe_endpoint(
    transport: Transport, base_url: str, api_key: str | None
) -> EndpointInfo:
    """Ask the server; anything it cannot answer is simply not known (never an error)."""
    base = base_url.rstrip("/")
    models: list[str] = []
    windows: dict[str, int] = {}
    source = ""
    slots: int | None = None
    try:
        data = await _get_json(transport, f"{base}/models", api_key)
    except ConnectFailed as exc:
        return EndpointInfo(unreachable=str(exc))
    entries = data.get("data") if isinstance(data, dict) else None
    if isinstance(entries, list):
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                continue
            models.append(entry["id"])
            for name in ("max_model_len", "context_length", "context_window", "n_ctx"):
                value = entry.get(name) or (entry.get("meta") or {}).get(name)
                if isinstance(value, int) and value > 0:
                    windows[entry["id"]] = value
                    source = "models"
                    break
    if not windows:
        parts = urlsplit(base)
        root = f"{parts.scheme}://{parts.netloc}"
        props = await _get_json(transport, f"{root}/props", api_key)
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = (settings or {}).get("n_ctx") if isinstance(settings, dict) else None
        if n_ctx is None and isinstance(props, dict):
            n_ctx = props.get("n_ctx")
        if isinstance(n_ctx, int) and n_ctx > 0:
            for model in models or [""]:
                windows[model] = n_ctx
            source = "props"
            total = props.get("total_slots") if isinstance(props, dict) else None
            if isinstance(total, int) and not isinstance(total, bool) and total > 0:
                slots = total
    return EndpointInfo(tuple(models), windows or None, source, slots=slots)


async def announced_slots(transport: Transport, base_url: str, api_key: str | None) -> int | None:
    """The requests the server says it serves at once (llama.cpp's ``total_slots`` in
    ``GET /props``), or None: not said, not asked (OpenAI's API), or no answer."""
    if is_openai(base_url):
        return None
    parts = urlsplit(base_url.rstrip("/"))
    try:
        props = await _get_json(transport, f"{parts.scheme}://{parts.netloc}/props", api_key)
    except ConnectFailed:
        return None
    slots = props.get("total_slots") if isinstance(props, dict) else None
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None


async def _get_json(transport: Transport, url: str, api_key: str | None) -> Any:
    try:
        response = await transport.get(url, _headers(api_key), _PROBE_TIMEOUTS)
    except ConnectFailed:
        raise
    except LLMError:
        return None
    if response.status != 200:
        return None
    try:
        return orjson.loads(response.body)
    except orjson.JSONDecodeError:
        return None


def pick_model(given: str, base_url: str, info: EndpointInfo | None) -> tuple[str, str | None]:
    """The model to use and a note saying where it came from (None when it was given)."""
    if given:
        return given, None
    if is_openai(base_url):
        return OPENAI_DEFAULT_MODEL, None
    models = info.models if info is not None else ()
    if info is not None and info.unreachable:
        raise EndpointUnreachable(
            f"cannot reach {base_url}: {info.unreachable}; check --base-url (or "
            f"OPENAI_BASE_URL) and the network"
        )
    if len(models) == 1:
        return models[0], f"model {models[0]!r}: the only one {base_url} serves"
    if models:
        listed = ", ".join(models[:10]) + (" ..." if len(models) > 10 else "")
        raise UsageError(f"{base_url} serves several models ({listed}); choose one with --model")
    raise UsageError(
        f"give --model: {base_url} is not OpenAI's API and did not list its models (GET /models)"
    )


_NUMBERS = (
    # OpenAI and vLLM: "maximum context length is 2048 tokens. However, you requested 2300
    # tokens" / "your messages resulted in 2300 tokens"
    re.compile(
        r"maximum context length is (\d[\d,]*) tokens.*?(?:requested|resulted in) (\d[\d,]*)"
    ),
    # llama.cpp: "request (4476 tokens) exceeds the available context size (4096 tokens)"
    re.compile(r"request \((\d[\d,]*) tokens\) exceeds the available context size \((\d[\d,]*)"),
)


def context_window_from_error(message: str, body: Any) -> tuple[int | None, int | None]:
    """(the server's window, the tokens the request needed) from a context-length error."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("n_ctx"), int):
            needed = err.get("n_prompt_tokens")
            return err["n_ctx"], needed if isinstance(needed, int) else None
    m = _NUMBERS[0].search(message)
    if m:
        return _int(m.group(1)), _int(m.group(2))
    m = _NUMBERS[1].search(message)
    if m:
        return _int(m.group(2)), _int(m.group(1))
    return None, None


def _int(text: str) -> int:
    return int(text.replace(",", ""))
