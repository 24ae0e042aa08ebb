"""The value of each setting a command takes, first match wins: the command-line flag, then
the environment (``HALUGEN_DB``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), then
``halugen.toml``, then the default. The environment beats the file because it is set for
one shell on purpose, while the file is shared by everyone working in the directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..options.spec import Setting
from ..options.table import setting
from .file import load_settings

__all__ = ["Resolved", "resolve"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The settings of one command line: each value and where it came from."""

    values: Mapping[str, Any]  # the settings the command takes
    origin: Mapping[str, str]  # name -> "flag" | "env" | "file" | "default"
    file: Path  # the settings file read (or looked for)

    def __getitem__(self, name: str) -> Any:
        """The resolved value, or the default where the command does not take the setting."""
        if name in self.values:
            return self.values[name]
        return setting(name).default


def resolve(
    taken: Iterable[str],
    given: Mapping[str, Any],
    *,
    config: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Resolved:
    """The settings ``taken`` by a command: ``given`` (its flags; None: not given), the
    environment, the settings file (``config``, else ./halugen.toml when there is one; read
    only when a setting with a key in it is left to it), the default."""
    path = Path(config) if config else Path("halugen.toml")
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    file: dict[str, Any] | None = None
    for name in taken:
        s = setting(name)
        value = given.get(name)
        if value is not None:
            origin[name] = "flag"
        elif s.env and environ.get(s.env, "").strip():
            value, origin[name] = _from_env(s, environ[s.env].strip()), "env"
        else:
            if file is None and s.toml is not None:
                file = load_settings(path, required=bool(config))
            if s.toml is not None and file is not None and s.toml in file:
                value, origin[name] = file[s.toml], "file"
            else:
                value, origin[name] = s.default, "default"
        values[name] = value
    return Resolved(values=values, origin=origin, file=path)


def _from_env(s: Setting, text: str) -> Any:
    kinds = s.kind if isinstance(s.kind, tuple) else (s.kind,)
    if str in kinds:
        return text
    if bool in kinds:
        if text.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return text.lower() in ("1", "true", "yes", "on")
        raise UsageError(f"${s.env} must be true or false, not {text!r}")
    try:
        return float(text) if float in kinds else int(text)
    except ValueError:
        raise UsageError(f"${s.env} must be a number, not {text!r}") from None
