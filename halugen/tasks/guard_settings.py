"""The ``[[guards]]`` of ``task.toml``: each named guard made with its settings, every
wrong name or setting noted."""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable
from typing import Any

from .base import Check
from .checks import GUARDS
from .schema import kind_of

__all__ = ["read_guards"]

# notes a problem: (key, message)
Note = Callable[[str, str], None]


def read_guards(raw: Any, problem: Note) -> tuple[Check, ...]:
    """The guards declared in ``raw`` (the ``guards`` value), problems noted by ``problem``."""
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        return ()  # noted by the top-level table check
    out: list[Check] = []
    for i, entry in enumerate(raw):
        where = f"guards[{i}]"
        name = entry.get("check")
        if not isinstance(name, str):
            problem(
                f"{where}.check",
                "missing: which guard (" + ", ".join(GUARDS) + ")"
                if name is None
                else f"must be a string, not {kind_of(name)}",
            )
            continue
        cls = GUARDS.get(name)
        if cls is None:
            close = difflib.get_close_matches(name, list(GUARDS), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problem(f"{where}.check", f"no guard {name!r}{hint}; known: {', '.join(GUARDS)}")
            continue
        settings = {k: v for k, v in entry.items() if k != "check"}
        guard = _guard(f"{where} ({name})", cls, settings, problem)
        if guard is not None:
            out.append(guard)
    return tuple(out)


def _guard(where: str, cls: type, settings: dict[str, Any], problem: Note) -> Check | None:
    params = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "problem"}
    values: dict[str, Any] = {}
    ok = True
    for key, value in settings.items():
        f = params.get(key)
        if f is None:
            problem(
                f"{where}.{key}",
                "unknown setting; "
                + (f"known: {', '.join(params)}" if params else "this guard has none"),
            )
            ok = False
            continue
        converted = _setting(str(f.type), value)
        if converted is None:
            problem(
                f"{where}.{key}",
                f"must be {_SETTING_KINDS.get(str(f.type), f.type)}, not {kind_of(value)}",
            )
            ok = False
            continue
        values[key] = converted
    for key, f in params.items():
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default and key not in values and key not in settings:
            problem(f"{where}.{key}", "missing")
            ok = False
    if not ok:
        return None
    try:
        guard: Check = cls(**values)
    except (re.error, ValueError, TypeError) as exc:
        problem(where, f"cannot be made: {exc}")
        return None
    return guard


_SETTING_KINDS = {
    "int": "a whole number",
    "float": "a number",
    "str": "a string",
    "tuple[str, ...]": "a list of strings",
}


def _setting(kind: str, value: Any) -> Any:
    """``value`` as the guard's setting of type ``kind``; None when it is not one."""
    if isinstance(value, bool):
        return None
    if kind == "int":
        return value if isinstance(value, int) else None
    if kind == "float":
        return float(value) if isinstance(value, int | float) else None
    if kind == "str":
        return value if isinstance(value, str) else None
    if kind == "tuple[str, ...]":
        ok = isinstance(value, list) and all(isinstance(x, str) for x in value)
        return tuple(value) if ok else None
    return None
