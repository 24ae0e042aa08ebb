"""Prompt templates: a template file's text, parsed and rendered here (which file is a
task's template is ``tasks.templates``'s to say).

A template is a chat script. Lines of the form ``=== system`` / ``=== user`` /
``=== assistant`` start a message; text before the first such line is a comment for the
reader of the file and is not sent. ``{{field}}`` is replaced by the seed's field of that
name. Every sample records the template's name and the hash of its whole file, so runs
with different prompts are told apart and an edited template changes its request keys.

Lines between ``=== if cached`` and ``=== end if`` (whole messages, or paragraphs of one) are
fixed text sent only when the run lengthens the template's opening to the provider's prompt
caching minimum because that costs less than it saves at the model's prices
(``cost.cache``): more demonstrations, as a rule. Such a template has two variants,
``Template`` (without them) and ``Template.padded`` (with them); the padded one's hash is
its own, so a sample tells which was sent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .errors import ConfigError
from .tokens import TokenCounter

__all__ = ["Template", "load_template_file", "parse_template"]

_HEADER = re.compile(r"^=== (system|user|assistant)\s*$")
_IF_CACHED = re.compile(r"^=== if cached\s*$")
_END_IF = re.compile(r"^=== end if\s*$")
_FIELD = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
_ROLES = ("system", "user", "assistant")

# Tokens a chat format adds around each message, and once per request (OpenAI's figures).
PER_MESSAGE_TOKENS = 4
PER_REQUEST_TOKENS = 3


@dataclass(frozen=True, slots=True)
class Template:
    name: str  # "<task>/<file stem>", e.g. "qa/sample_onepass"
    hash: str  # first 12 hex digits of sha256 of the file's text
    # per message: role and the content split into static text (str) and field names (tuples)
    parts: tuple[tuple[str, tuple[str | tuple[str], ...]], ...]
    # the variant with the ``=== if cached`` blocks (None: the template has none, or is it)
    padded: Template | None = None
    # per message: its text when it has no field (demonstrations, instructions: most of a
    # conversational template), else None. Every call renders and counts its template:
    # the fixed messages are joined once, and their tokens counted once per counter
    _fixed: tuple[str | None, ...] = field(init=False, repr=False, compare=False)
    _field_names: tuple[str, ...] = field(init=False, repr=False, compare=False)  # in order
    _fixed_tokens: dict[TokenCounter, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fixed = tuple(
            None if any(isinstance(seg, tuple) for seg in segs) else "".join(map(str, segs))
            for _, segs in self.parts
        )
        names = tuple(seg[0] for _, segs in self.parts for seg in segs if isinstance(seg, tuple))
        object.__setattr__(self, "_fixed", fixed)
        object.__setattr__(self, "_field_names", names)
        object.__setattr__(self, "_fixed_tokens", {})

    def variant(self, *, padded: bool) -> Template:
        """The variant to send: with the cached-only blocks when ``padded`` and it has any."""
        return self.padded if padded and self.padded is not None else self

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(p[0] for _, segs in self.parts for p in segs if isinstance(p, tuple))

    def render(self, values: Mapping[str, str]) -> tuple[dict[str, str], ...]:
        """The messages with every ``{{field}}`` filled from ``values``."""
        messages = []
        try:
            for (role, segs), fixed in zip(self.parts, self._fixed, strict=True):
                if fixed is None:
                    out = []
                    for seg in segs:
                        out.append(values[seg[0]] if isinstance(seg, tuple) else seg)
                    fixed = "".join(out)
                messages.append({"role": role, "content": fixed})
        except KeyError:
            missing = next(name for name in self._field_names if name not in values)
            raise ConfigError(
                f"prompt template {self.name} needs field {missing!r}, which the "
                f"record does not have (it has: {', '.join(sorted(values))})"
            ) from None
        return tuple(messages)

    def estimate_tokens(self, values: Mapping[str, str], counter: TokenCounter) -> int:
        """Prompt tokens of the rendered template; the static pieces are counted once.

        Splitting at the fields can differ from counting the joined text by a token or two
        per boundary; the budget's reservation margin absorbs that.
        """
        total = self._fixed_tokens.get(counter)
        if total is None:  # the request's, the messages' and the fixed pieces' tokens
            static = counter.count_static
            total = PER_REQUEST_TOKENS + sum(
                PER_MESSAGE_TOKENS + sum(static(s) for s in segs if not isinstance(s, tuple))
                for _, segs in self.parts
            )
            self._fixed_tokens[counter] = total
        count = counter.count
        for name in self._field_names:
            total += count(values.get(name, ""))
        return total


def parse_template(name: str, text: str) -> Template:
    """Parse a template's text; ``name`` is used in error messages and records."""
    base, padded = _cached_blocks(name, text)
    template = _parse(name, base, text)
    if padded is None:
        return template
    with_blocks = _parse(name, padded, "cached\0" + text)
    if with_blocks.fields != template.fields:
        raise ConfigError(
            f"prompt template {name}: an '=== if cached' block is fixed text, it cannot hold "
            "a {{field}}"
        )
    return Template(template.name, template.hash, template.parts, with_blocks)


def _cached_blocks(name: str, text: str) -> tuple[str, str | None]:
    """(the text without its ``=== if cached`` blocks, the text with them; None when it has
    none). The marker lines themselves are in neither."""
    lines = text.splitlines(keepends=True)
    if not any(_IF_CACHED.match(line.rstrip("\r\n")) for line in lines):
        if any(_END_IF.match(line.rstrip("\r\n")) for line in lines):
            raise ConfigError(f"prompt template {name} has '=== end if' without '=== if cached'")
        return text, None
    base: list[str] = []
    padded: list[str] = []
    inside = False
    for number, line in enumerate(lines, 1):
        bare = line.rstrip("\r\n")
        if _IF_CACHED.match(bare):
            if inside:
                raise ConfigError(
                    f"prompt template {name}, line {number}: '=== if cached' inside another "
                    "(close the first with '=== end if')"
                )
            inside = True
        elif _END_IF.match(bare):
            if not inside:
                raise ConfigError(
                    f"prompt template {name}, line {number}: '=== end if' without '=== if cached'"
                )
            inside = False
        else:
            padded.append(line)
            if not inside:
                base.append(line)
    if inside:
        raise ConfigError(f"prompt template {name}: an '=== if cached' has no '=== end if'")
    return "".join(base), "".join(padded)


def _parse(name: str, text: str, hashed: str) -> Template:
    messages: list[tuple[str, list[str]]] = []
    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line.rstrip("\r\n"))
        if m:
            messages.append((m.group(1), []))
        elif messages:
            messages[-1][1].append(line)
    if not messages:
        raise ConfigError(f"prompt template {name} has no '=== user' (or system/assistant) section")
    parts = []
    for role, lines in messages:
        content = "".join(lines).strip()
        if not content:
            raise ConfigError(f"prompt template {name} has an empty '=== {role}' section")
        segs: list[str | tuple[str]] = []
        pos = 0
        for m in _FIELD.finditer(content):
            if m.start() > pos:
                segs.append(content[pos : m.start()])
            segs.append((m.group(1),))
            pos = m.end()
        if pos < len(content):
            segs.append(content[pos:])
        parts.append((role, tuple(segs)))
    if parts[-1][0] != "user":
        raise ConfigError(f"prompt template {name} must end with a '=== user' section")
    digest = hashlib.sha256(hashed.encode("utf-8")).hexdigest()[:12]
    return Template(name=name, hash=digest, parts=tuple(parts))


@cache
def load_template_file(name: str, path: Path) -> Template:
    """Read and parse the template file at ``path``; ``name`` is "<task>/<stem>"."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"prompt template {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"prompt template {path} cannot be read: {exc}") from None
    return parse_template(name, text)
