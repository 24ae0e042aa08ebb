"""``halugen.toml``: the same settings as the command-line flags, in a file.

Which keys the file takes, their types and the commented file ``halugen init`` writes all
come from the one table of settings, ``options/table.py``. A flag wins over the environment, the
environment over the file, the file over the default (``resolve.py``).

A fleet of endpoints is a list of ``[[endpoints]]`` tables in the file, or repeated
``--endpoint URL,key=ENV_VAR,rpm=N,tpm=N,concurrency=N,weight=W,auth=api-key`` flags (the
flags replace the file's list). Keys are named by environment variable, never written in the
file or on the command line; an endpoint without ``key`` uses the run's key (``--api-key``
or ``$OPENAI_API_KEY``). ``rpm``, ``tpm`` and ``concurrency`` default to the run's
``--rpm``, ``--tpm`` and ``--concurrency``.
"""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..options.spec import Setting
from ..options.table import SETTINGS
from .endpoints import check_endpoint_types

__all__ = [
    "INIT_TEMPLATE",
    "KNOWN_KEYS",
    "init_template",
    "load_settings",
    "toml_value",
]

# key in the file -> its setting
_BY_KEY: dict[str, Setting] = {s.toml: s for s in SETTINGS if s.toml is not None}
# key in the file -> the types it accepts
KNOWN_KEYS: dict[str, type | tuple[type, ...]] = {key: s.kind for key, s in _BY_KEY.items()}

_TEMPLATE_HEAD = """\
# halugen settings. Each key is also a command-line flag; a flag wins over an environment
# variable, which wins over this file. `halugen run --budget 50usd` reads this file from
# the current directory (or the one --config names). The API key is read from
# $OPENAI_API_KEY (or --api-key); it is never stored.

[run]

"""
_TEMPLATE_FLEET = """\
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


def toml_value(value: Any) -> str:
    """``value`` written as TOML (strings, numbers, booleans, lists of them and inline tables
    of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")


def init_template() -> str:
    """The commented halugen.toml of ``halugen init``: every key of the file, with its help.

    Keys marked ``in_template`` are set, the others commented out; each shows its default,
    or its example where the default is empty.
    """
    parts = []
    for s in SETTINGS:
        if s.toml is None or s.toml == "endpoints":
            continue
        shown = s.example if s.default in (None, (), "") else s.default
        entry = f"{s.toml} = {toml_value(shown)}"
        note = s.file_help or s.help_line()
        lines = textwrap.wrap(note, 88, initial_indent="# ", subsequent_indent="# ")
        lines.append(entry if s.in_template else "# " + entry)
        parts.append("\n".join(lines))
    return _TEMPLATE_HEAD + "\n\n".join(parts) + "\n\n" + _TEMPLATE_FLEET


INIT_TEMPLATE = init_template()


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
        choices = _BY_KEY[key].choices
        if choices is not None and value not in choices:
            raise ConfigError(
                f"settings file {path}: {key} must be one of {', '.join(choices)} (got {value!r})"
            )
    for i, spec in enumerate(table.get("endpoints", ()), 1):
        where = f"settings file {path}: [[endpoints]] number {i}"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a table")
        check_endpoint_types(spec, where, ConfigError)
    return table
