"""Who may annotate: annotator names, per-annotator tokens, and where the server may listen.

The server binds to loopback by default; a non-loopback bind needs an explicit flag and
then a token per annotator, compared in constant time. The tokens file (``annotate tokens``)
maps each name to its token and holds the organiser's token under ``"@organiser"``, a key no
annotator name can take.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping

from ..errors import UsageError
from ..local_page import is_loopback

__all__ = [
    "ORGANISER_KEY",
    "check_bind",
    "make_tokens",
    "split_tokens",
    "validate_name",
]

ORGANISER_KEY = "@organiser"

_NAME = re.compile(r"[\w .\-]{1,64}")  # \w on str: Unicode letters, digits and '_'


def validate_name(name: object) -> str:
    """An annotator name: 1-64 letters, digits, spaces or ``._-`` (outer spaces dropped)."""
    if not isinstance(name, str):
        raise UsageError("annotator name must be a string")
    cleaned = name.strip()
    if not _NAME.fullmatch(cleaned):
        raise UsageError("annotator name must be 1 to 64 letters, digits, spaces or . _ -")
    return cleaned


def make_tokens(names: Iterable[str], *, organiser: bool = False) -> dict[str, str]:
    """A fresh random token per annotator (for ``allow_remote``), name -> token; with
    ``organiser``, one more under ``ORGANISER_KEY`` for the organiser view."""
    out: dict[str, str] = {}
    for raw in names:
        name = validate_name(raw)
        if name in out:
            raise UsageError(f"annotator {name!r} given twice")
        out[name] = secrets.token_urlsafe(24)
    if not out:
        raise UsageError("no annotator names given")
    if organiser:
        out[ORGANISER_KEY] = secrets.token_urlsafe(24)
    return out


def split_tokens(tokens: Mapping[str, object]) -> tuple[dict[str, str], str | None]:
    """A tokens mapping -> (annotator name -> token, the organiser token or None).

    Every value must be a non-empty string; ``UsageError`` names the entry that is not.
    """
    if not isinstance(tokens, Mapping):
        raise UsageError("the tokens file must hold a JSON object of name -> token")
    annotators: dict[str, str] = {}
    organiser = None
    for key, value in tokens.items():
        if not isinstance(value, str) or not value:
            raise UsageError(f"the token of {key!r} must be a non-empty string")
        if key == ORGANISER_KEY:
            organiser = value
        else:
            annotators[validate_name(key)] = value
    return annotators, organiser


def check_bind(host: str, *, allow_remote: bool, tokens: Mapping[str, str] | None) -> None:
    """Refuse a non-loopback bind unless asked for explicitly, and then only with tokens."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise UsageError(
            f"refusing to listen on {host}: the annotation server binds to 127.0.0.1 unless "
            f"--allow-remote is given (and then every annotator needs a token)"
        )
    if not tokens:
        raise UsageError(
            f"listening on {host} needs a token per annotator: create them with "
            f"'halugen annotate tokens --annotators a,b,c' and pass them to the server"
        )
