"""``halugen.toml``: the same settings as the command-line flags, in a file.

Flags win over the file; the file wins over defaults. ``halugen init`` writes a commented
starting point.

A fleet of endpoints is a list of ``[[endpoints]]`` tables in the file, or repeated
``--endpoint URL,key=ENV_VAR,rpm=N,tpm=N,concurrency=N,weight=W,auth=api-key`` flags (the
flags replace the file's list). Keys are named by environment variable, never written in the
file or on the command line; an endpoint without ``key`` uses the run's key (``--api-key``
or ``$OPENAI_API_KEY``). ``rpm``, ``tpm`` and ``concurrency`` default to the run's
``--rpm``, ``--tpm`` and ``--concurrency``.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import AUTH_SCHEMES, Endpoint
from .errors import ConfigError, UsageError

__all__ = [
    "ENDPOINT_KEYS",
    "INIT_TEMPLATE",
    "KNOWN_KEYS",
    "load_settings",
    "parse_endpoint_flag",
    "resolve_endpoints",
]

# key in the file -> what it means (for the error message on a typo)
KNOWN_KEYS: dict[str, type | tuple[type, ...]] = {
    "task": (str, list),
    "seeds": (str, list),
    "seed_format": str,
    "model": str,
    "base_url": str,
    "db": str,
    "budget": str,
    "price_in": (int, float),
    "price_out": (int, float),
    "price_card": str,
    "concurrency": int,
    "rpm": (int, float),
    "tpm": (int, float),
    "limit": int,
    "seed": int,
    "temperature": (int, float),
    "max_tokens": int,
    "progress": bool,
    "timeout": (int, float),
    "max_attempts": int,
    "long_documents": str,
    "prompts": str,
    "batch": bool,
    "batch_poll": (int, float),
    "batch_max_requests": int,
    "batch_max_mb": (int, float),
    "endpoints": list,
}

# key of an [[endpoints]] table (or option of --endpoint) -> its type
ENDPOINT_KEYS: dict[str, type | tuple[type, ...]] = {
    "url": str,
    "key": str,  # the name of an environment variable holding the key
    "rpm": (int, float),
    "tpm": (int, float),
    "concurrency": int,
    "weight": (int, float),
    "auth": str,
}

INIT_TEMPLATE = """\
# halugen settings. Every key is also a command-line flag (flags win over this file).
# `python -m halugen run --budget 50usd` reads this file from the current directory.

[run]
task = "qa"                          # qa (more tasks: see `halugen run --help`)
seeds = ["hotpot_train_v1.1.json"]   # files or glob patterns
# seed_format = "hotpotqa"           # detected from the content when left out
model = "gpt-4o-mini"
# base_url = "https://api.openai.com/v1"   # or $OPENAI_BASE_URL; vLLM/llama.cpp/Ollama work too
# The API key is read from $OPENAI_API_KEY (or --api-key); it is never stored.
db = "halugen.duckdb"
budget = "5usd"                      # hard cap on what the run may cost, across resumes
# price_card = "local"               # self-hosted server: price 0
# price_in = 0.15                    # USD per million input tokens (overrides the card)
# price_out = 0.60                   # USD per million output tokens
# concurrency = 512                  # most requests in flight (default: what the limits need)
# rpm = 5000                         # your account's requests/min (learned from headers if unset)
# tpm = 2000000                      # your account's tokens/min
# limit = 1000                       # only the first N seeds
# batch = true                       # calls through the provider's Batch API (half price, 24 h)
seed = 0                             # run seed: candidate order and request seeds derive from it
temperature = 1.0                    # sampling temperature (HaluEval: 1)
max_tokens = 256                     # per sampled answer (HaluEval: 256)

# A fleet: several endpoints (accounts, replicas) under one budget and one store. Each has
# its own limits, learned from its own headers; a call goes to whichever has room.
# [[endpoints]]
# url = "https://account-a.example/v1"
# key = "ACCOUNT_A_KEY"              # environment variable holding this endpoint's key
# rpm = 5000                         # optional, as the run's rpm/tpm/concurrency
# [[endpoints]]
# url = "https://gateway.example/openai/v1"
# key = "GATEWAY_KEY"
# auth = "api-key"                   # Azure-style gateways: the api-key header
# weight = 2                         # twice the share when both have room
"""


def load_settings(path: Path, *, required: bool = False) -> dict[str, Any]:
    """The ``[run]`` table of a settings file; {} when the file is absent and not required."""
    if not path.exists():
        if required:
            raise ConfigError(f"settings file {path} not found")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"settings file {path} cannot be read: {exc}") from None
    table = data.get("run", data)
    if not isinstance(table, dict):
        raise ConfigError(f"settings file {path}: [run] must be a table")
    if "run" in data and "endpoints" in data:  # [[endpoints]] beside [run]
        table = {**table, "endpoints": data["endpoints"]}
    for key, value in table.items():
        expected = KNOWN_KEYS.get(key)
        if expected is None:
            raise ConfigError(
                f"settings file {path}: unknown key {key!r} (known: {', '.join(KNOWN_KEYS)})"
            )
        if isinstance(value, bool) and expected is not bool:
            raise ConfigError(f"settings file {path}: {key} must not be true/false")
        if not isinstance(value, expected):
            raise ConfigError(f"settings file {path}: {key} has the wrong type ({value!r})")
    for i, spec in enumerate(table.get("endpoints", ()), 1):
        where = f"settings file {path}: [[endpoints]] number {i}"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a table")
        _check_endpoint_types(spec, where, ConfigError)
    return table


def _check_endpoint_types(spec: Mapping[str, Any], where: str, error: type[Exception]) -> None:
    for key, value in spec.items():
        expected = ENDPOINT_KEYS.get(key)
        if expected is None:
            raise error(f"{where}: unknown key {key!r} (known: {', '.join(ENDPOINT_KEYS)})")
        if isinstance(value, bool) or not isinstance(value, expected):
            raise error(f"{where}: {key} has the wrong type ({value!r})")
    if "url" not in spec:
        raise error(f"{where}: url is missing")


def parse_endpoint_flag(text: str) -> dict[str, Any]:
    """``URL,key=ENV,rpm=N,...`` (the value of one ``--endpoint``) as an endpoint table."""
    url, *options = (part.strip() for part in text.split(","))
    where = f"--endpoint {text}"
    if not url or "=" in url.split("://", 1)[0]:
        raise UsageError(f"{where}: give the URL first, then name=value options")
    spec: dict[str, Any] = {"url": url}
    for option in options:
        name, sep, value = option.partition("=")
        name, value = name.strip(), value.strip()
        expected = ENDPOINT_KEYS.get(name)
        if not sep or expected is None or name == "url":
            known = ", ".join(k for k in ENDPOINT_KEYS if k != "url")
            raise UsageError(f"{where}: {option!r} is not a name=value option (known: {known})")
        if expected is str:
            spec[name] = value
            continue
        try:
            spec[name] = int(value) if expected is int else float(value)
        except ValueError:
            raise UsageError(f"{where}: {name} must be a number, not {value!r}") from None
    return spec


def resolve_endpoints(
    specs: Sequence[Mapping[str, Any]],
    *,
    api_key: str | None,
    rpm: float | None,
    tpm: float | None,
    concurrency: int | None,
    environ: Mapping[str, str] = os.environ,
    source: str = "--endpoint",
    keys_needed: bool = True,
) -> tuple[Endpoint, ...]:
    """Endpoint tables (from flags or the file) as endpoints, keys read from the environment.

    ``keys_needed=False`` (a command that makes no call, such as ``estimate``): a ``key=``
    variable that is not set leaves that endpoint without a key instead of failing.
    """
    endpoints = []
    seen: set[str] = set()
    for spec in specs:
        url = str(spec.get("url", "")).rstrip("/")
        where = f"{source} {url or '?'}"
        _check_endpoint_types(spec, where, UsageError)
        if "://" not in url:
            raise UsageError(f"{where}: the URL must start with http:// or https://")
        if url in seen:
            raise UsageError(f"{where}: the same endpoint is listed twice")
        seen.add(url)
        key_env = spec.get("key")
        key = api_key
        if key_env is not None:
            key = environ.get(key_env) or None
            if key is None and keys_needed:
                raise UsageError(
                    f"{where}: environment variable {key_env} is not set (key= names the "
                    f"variable that holds this endpoint's key)"
                )
        auth = spec.get("auth", "bearer")
        if auth not in AUTH_SCHEMES:
            raise UsageError(f"{where}: auth must be one of {', '.join(AUTH_SCHEMES)}")
        limits = {
            "rpm": spec.get("rpm", rpm),
            "tpm": spec.get("tpm", tpm),
            "weight": spec.get("weight", 1.0),
            "concurrency": spec.get("concurrency", concurrency),
        }
        for name, value in limits.items():
            if value is not None and not (math.isfinite(value) and value > 0):
                raise UsageError(f"{where}: {name} must be more than zero (got {value:g})")
        endpoints.append(
            Endpoint(
                url=url,
                api_key=key,
                key_env=key_env,
                rpm=None if limits["rpm"] is None else float(limits["rpm"]),
                tpm=None if limits["tpm"] is None else float(limits["tpm"]),
                concurrency=(None if limits["concurrency"] is None else int(limits["concurrency"])),
                weight=float(limits["weight"]),
                auth=auth,
            )
        )
    return tuple(endpoints)
