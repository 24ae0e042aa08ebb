"""What ``task.toml`` may hold: its keys, the kind of each value, and ``TableReader``,
which checks a table against them and notes one problem per wrong key."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .problems import TASK_FILE, Problem

__all__ = [
    "ANNOTATED_FIELDS",
    "FIELD_NAME",
    "GENERATED_FIELDS",
    "GENERATED_ONLY",
    "KINDS",
    "PATTERN_NAME",
    "REQUIRED_KEYS",
    "SECTION_KEYS",
    "STRATEGIES",
    "TASK_NAME",
    "TEMPLATE_STEM",
    "TOP_KEYS",
    "TableReader",
    "kind_of",
]

KINDS = ("generated", "annotated")
STRATEGIES = ("plain", "knowledge", "cot", "contrast")

# A task's name becomes file names, SQL values and Python identifiers (the Inspect export).
TASK_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# A field's name is a template placeholder, a JSON key and a column name.
FIELD_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
PATTERN_NAME = re.compile(r"^[a-z0-9][a-z0-9 _-]{0,39}$")
TEMPLATE_STEM = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# key -> kind of value: str, strs (list of strings), name / names (field names),
# table, tables (array of tables), texts (table of strings)
TOP_KEYS = {
    "name": "str",
    "title": "str",
    "description": "str",
    "kind": "str",
    "fields": "table",
    "patterns": "tables",
    "reply": "table",
    "filter": "table",
    "guards": "tables",
    "evaluate": "table",
    "seeds": "table",
    "templates": "table",
}
SECTION_KEYS = {
    "fields": {
        "seed": "names",
        "item": "names",
        "right": "name",
        "hallucinated": "name",
        "label": "name",
        "question": "name",
        "knowledge": "name",
        "long": "name",
        "topic": "names",
        "about": "texts",
    },
    "patterns": {"name": "str", "definition": "str", "words": "strs"},
    "reply": {"labels": "strs", "stop": "strs", "shape": "str"},
    "filter": {"label": "str", "context": "names", "words": "strs"},
    "evaluate": {"strategies": "strs", "shown": "name", "context": "names"},
    "seeds": {"map": "texts", "source_name": "str", "license": "str"},
    "templates": {"sample": "strs", "filter": "str"},
}
REQUIRED_KEYS = {
    "": ("name", "fields", "evaluate"),
    "fields": ("right",),
    "evaluate": ("strategies", "shown", "context"),
    "patterns": ("name", "definition"),
    "reply": ("labels", "shape"),
    "filter": ("label", "context"),
}
# what only a generated task has; and what an annotated one needs instead
GENERATED_ONLY = ("patterns", "reply", "filter", "guards", "seeds", "templates")
GENERATED_FIELDS = ("seed", "hallucinated", "long")
ANNOTATED_FIELDS = ("item", "label")


def kind_of(value: Any) -> str:
    """How the kind of a TOML value reads in a problem."""
    return {
        str: "a string",
        bool: "true/false",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


class TableReader:
    """Checks tables of the declaration against the keys above, noting every problem."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.problems: list[Problem] = []

    def problem(self, key: str, message: str, file: str = TASK_FILE) -> None:
        self.problems.append(Problem(file, key, message))

    # -- values ------------------------------------------------------------------------------

    def _value(self, where: str, kind: str, value: Any) -> Any:
        """``value`` if it is of ``kind``, else None (and a problem)."""
        want = {
            "str": "a string",
            "name": "a field name",
            "strs": "a list of strings",
            "names": "a list of field names",
            "table": "a table",
            "tables": "a list of tables ([[...]])",
            "texts": "a table of strings",
        }[kind]
        ok = {
            "str": lambda v: isinstance(v, str),
            "name": lambda v: isinstance(v, str),
            "strs": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "names": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "table": lambda v: isinstance(v, dict),
            "tables": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
            "texts": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        }[kind]
        if not ok(value):
            self.problem(where, f"must be {want}, not {kind_of(value)}")
            return None
        if kind == "name" and not FIELD_NAME.match(value):
            self.problem(where, f"{value!r} is not a field name (lower-case letters, digits, _)")
            return None
        if kind == "names":
            bad = [v for v in value if not FIELD_NAME.match(v)]
            if bad:
                self.problem(
                    where, f"{bad[0]!r} is not a field name (lower-case letters, digits, _)"
                )
                return None
            if len(set(value)) != len(value):
                self.problem(where, "names a field twice")
                return None
        return value

    def table(self, where: str, data: dict[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
        """The known keys of ``data`` with values of the right kind; unknown keys noted."""
        out: dict[str, Any] = {}
        for key, value in data.items():
            at = f"{where}.{key}" if where else key
            kind = keys.get(key)
            if kind is None:
                close = difflib.get_close_matches(key, list(keys), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]}?)" if close else ""
                self.problem(at, f"unknown key{hint}; known: {', '.join(keys)}")
                continue
            checked = self._value(at, kind, value)
            if checked is not None:
                out[key] = checked
        return out

    def require(self, where: str, raw: Any, keys: Sequence[str]) -> None:
        if not isinstance(raw, Mapping):
            return  # its kind is already a problem
        for key in keys:
            if key not in raw:
                self.problem(f"{where}.{key}" if where else key, "missing")

    def section(self, key: str, top: Mapping[str, Any], *, required: bool = True) -> dict[str, Any]:
        raw = top.get(key)
        if raw is None:
            if required and key not in self.data:
                self.problem(key, "missing")
            return {}
        got = self.table(key, raw, SECTION_KEYS[key])
        self.require(key, raw, REQUIRED_KEYS.get(key, ()))
        return got
