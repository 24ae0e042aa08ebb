"""``halugen.toml``: the same settings as the command-line flags, in a file.

Flags win over the file; the file wins over defaults. ``halugen init`` writes a commented
starting point.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["INIT_TEMPLATE", "KNOWN_KEYS", "load_settings"]

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
concurrency = 64                     # most requests in flight
# rpm = 5000                         # your account's requests/min (learned from headers if unset)
# tpm = 2000000                      # your account's tokens/min
# limit = 1000                       # only the first N seeds
# batch = true                       # calls through the provider's Batch API (half price, 24 h)
seed = 0                             # run seed: candidate order and request seeds derive from it
temperature = 1.0                    # sampling temperature (HaluEval: 1)
max_tokens = 256                     # per sampled answer (HaluEval: 256)
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
    return table
