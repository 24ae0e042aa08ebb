"""Structured outputs: the JSON schemas the judges ask for, as OpenAI's ``response_format``.

With ``{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}`` a server
that supports structured outputs (OpenAI, vLLM's guided decoding, llama.cpp's grammar,
Ollama) constrains the reply to the schema, so a verdict can no longer be missing or
ambiguous. Whether an endpoint supports it is learned once (``capabilities``); the readers
of the replies accept these objects and plain text alike.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "choice_format",
    "contrast_format",
    "json_schema_format",
    "reasoned_verdict_format",
    "verdict_format",
]


def json_schema_format(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    """A strict ``response_format`` for an object with exactly ``properties``, in order."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name,
            "strict": True,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }


def verdict_format() -> dict[str, Any]:
    """``{"verdict": "Yes" | "No"}``: "Yes" = contains hallucination."""
    return json_schema_format("verdict", {"verdict": {"type": "string", "enum": ["Yes", "No"]}})


def reasoned_verdict_format() -> dict[str, Any]:
    """``{"reasoning": "...", "verdict": "Yes" | "No"}``: the reasoning comes first, as the
    chain-of-thought prompt asks (a model writes the properties in schema order)."""
    return json_schema_format(
        "reasoned_verdict",
        {
            "reasoning": {"type": "string"},
            "verdict": {"type": "string", "enum": ["Yes", "No"]},
        },
    )


def contrast_format() -> dict[str, Any]:
    """``{"hallucinated": 1 | 2}``: which of the two shown texts is hallucinated."""
    return json_schema_format("contrast", {"hallucinated": {"type": "integer", "enum": [1, 2]}})


def choice_format(count: int) -> dict[str, Any]:
    """``{"choice": 1..count}``: the filter judge's pick among ``count`` candidates."""
    return json_schema_format(
        "choice", {"choice": {"type": "integer", "enum": list(range(1, count + 1))}}
    )
