"""A run object (``RunConfig``, ``EvalConfig``, ``PreselectConfig``) made from resolved
settings: each setting fills the fields its declaration names (``to``), after its check and
conversion, cast to the type of the field's default. A field of a field
(``sampling.temperature``) is filled in an object of that field's class; a setting that fills
such a field as a whole (``batch``) switches it: false leaves it None, its parts unread.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from typing import Any, TypeVar

from ..errors import UsageError
from ..options.spec import Setting
from ..options.table import SETTINGS
from .resolve import Resolved

__all__ = ["assemble", "fills"]

T = TypeVar("T")


def fills(cls: type) -> Iterator[tuple[Setting, str]]:
    """The settings that fill a field of ``cls``, with the field (a dotted path) each fills."""
    names = {f.name for f in dataclasses.fields(cls)}
    for s in SETTINGS:
        for path in s.to:
            if path.split(".", 1)[0] in names:
                yield s, path


def assemble(cls: type[T], resolved: Resolved, **given: Any) -> T:
    """``cls`` from the settings that fill its fields; ``given`` fields are taken as they are
    (those the command makes itself: the task it resolved, the run of an eval)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    wanted = [(s, path) for s, path in fills(cls) if path.split(".", 1)[0] not in given]
    nested = {path.split(".", 1)[0] for _, path in wanted if "." in path}
    # a setting that fills a nested object's field as a whole turns it on or off
    on = {path: bool(resolved[s.name]) for s, path in wanted if path in nested}
    top: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {head: {} for head in nested}
    done: dict[str, Any] = {}
    for s, path in wanted:
        head, _, part = path.partition(".")
        if not on.get(head, True) or path in on:
            continue  # batch mode off: its limits unread; the switch itself fills nothing
        if s.name not in done:
            value = resolved[s.name]
            wrong = None if s.check is None else s.check(s.flag, value)
            if wrong is not None:
                raise UsageError(wrong)
            done[s.name] = value if s.convert is None else s.convert(value)
        if part:
            parts[head][part] = done[s.name]
        else:
            top[head] = _cast(done[s.name], _default_of(fields[head]))
    for head, values in parts.items():
        if not on.get(head, True):
            top[head] = None
            continue
        inner = _class_of(cls, fields[head])
        inner_fields = {f.name: f for f in dataclasses.fields(inner)}
        top[head] = inner(**{k: _cast(v, _default_of(inner_fields[k])) for k, v in values.items()})
    return cls(**top, **given)


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _cast(value: Any, default: Any) -> Any:
    """``value`` as the type of the field's default (a flag's list as a tuple, a file's int
    as a float, a text as a Path); as it is where the default is None."""
    if value is None or default is None or isinstance(value, type(default)):
        return value
    return type(default)(value)


def _class_of(owner: type, f: dataclasses.Field[Any]) -> type:
    """The dataclass a field holds: its default's class, else the one its annotation names
    (``BatchOptions | None``)."""
    default = _default_of(f)
    if dataclasses.is_dataclass(default):
        return type(default)
    hint = typing.get_type_hints(owner)[f.name]
    found = [t for t in typing.get_args(hint) if dataclasses.is_dataclass(t)]
    if len(found) != 1:
        raise TypeError(f"{owner.__name__}.{f.name}: no dataclass to fill")
    return found[0]  # type: ignore[return-value]
