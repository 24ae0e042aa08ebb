"""Structured outputs in the simulator: a reply as JSON that fits the request's schema.

A simulated server may also ignore ``response_format`` or refuse it (a 400, or a 500 as
llama-cpp-python's server does): ``SimConfig.response_format``.

A server with structured outputs constrains its reply to the ``response_format`` schema, so
the simulator's answer (the values ``answers.reply`` decided: a choice, a verdict, a
pattern and a text) is written as an object of the schema's properties, each value
coerced to the property's type and enum; properties the simulator has no value for get a
valid filler. ``json_object`` (no schema) writes the reply format's labels as keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .keys import pick

__all__ = [
    "REFUSED_FORMAT",
    "UNSUPPORTED_FORMAT",
    "FormatRefused",
    "check_response_format",
    "structured_text",
]

# What a server without structured outputs says (OpenAI's wording for such models).
UNSUPPORTED_FORMAT = (
    "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."
)
# What a server that fails on it says with its 500 (as llama-cpp-python's server does).
REFUSED_FORMAT = "Internal Server Error: the response_format could not be turned into a grammar"


class FormatRefused(Exception):
    """A server that answers a ``response_format`` with a 500."""


_TYPES = ("text", "json_object", "json_schema")


def check_response_format(value: Any) -> dict[str, Any] | None:
    """The request's ``response_format`` when it asks for JSON, None for text or absent.

    Raises ValueError with OpenAI-like wording when it is malformed.
    """
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") not in _TYPES:
        raise ValueError(
            "'response_format.type' must be one of 'text', 'json_object', 'json_schema'."
        )
    if value["type"] == "text":
        return None
    if value["type"] == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise ValueError("'response_format.json_schema' must be an object with a 'name'.")
        if not isinstance(spec.get("schema", {}), dict):
            raise ValueError("'response_format.json_schema.schema' must be an object.")
    return value


def _instance(schema: Mapping[str, Any], value: Any, key: int, depth: int = 0) -> Any:
    """A value valid for ``schema``, taken from ``value`` where it fits."""
    enum = schema.get("enum")
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if enum:
        for option in enum:
            if value is not None and str(option).casefold() == str(value).strip().casefold():
                return option
        return pick(tuple(enum), key, 80 + depth)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        values = value if isinstance(value, Mapping) else {}
        lowered = {str(k).casefold(): v for k, v in values.items()}
        return {
            name: _instance(sub, lowered.get(name.casefold()), key, depth + 1)
            for name, sub in props.items()
        }
    if kind == "array":
        items = schema.get("items") or {"type": "string"}
        return [_instance(items, value, key, depth + 1)] if value is not None else []
    if kind == "integer":
        try:
            return int(str(value).strip())
        except (TypeError, ValueError):
            return int(schema.get("minimum", 1))
    if kind == "number":
        try:
            return float(str(value).strip())
        except (TypeError, ValueError):
            return float(schema.get("minimum", 0))
    if kind == "boolean":
        return str(value).strip().casefold() in ("yes", "true", "1")
    if kind == "null":
        return None
    return "" if value is None else str(value)


def structured_text(
    response_format: Mapping[str, Any],
    values: Mapping[str, str],
    labels: tuple[str, ...],
    key: int,
) -> str:
    """The reply as JSON text fitting ``response_format``."""
    if response_format.get("type") == "json_object":
        obj: Any = {label.lower(): values.get(label.lower(), "") for label in labels} or dict(
            values
        )
    else:
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        obj = _instance(schema, values, key)
    return orjson.dumps(obj).decode()
