"""One setting, declared once: its name, type, default, flag(s), halugen.toml key, environment
variable, help, checks and where its value goes in a run object.

A declaration says only what differs from the usual: the flag is ``--<name>`` (underscores
as dashes), the key in halugen.toml is the name, and the value fills the field of the same
name in the run object (``RunConfig``, ``EvalConfig``, ``PreselectConfig``), cast to the
type of that field's default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["SAME", "Setting"]

SAME: Any = "<same as the name>"  # flags, toml and to: made from the setting's name


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """One setting. ``name`` is its attribute on the parsed arguments."""

    name: str
    kind: type | tuple[type, ...]  # what halugen.toml accepts (a flag's type follows from it)
    help: str  # what it does, without the default: the help line adds that
    group: str  # which commands take it: see table.GROUPS
    default: Any = None
    default_text: str | None = None  # the default in words, where the value alone is unclear
    flags: tuple[str, ...] = SAME  # SAME: --<name>; () : halugen.toml only
    toml: str | None = SAME  # the key in halugen.toml (SAME: the name); None: not in the file
    env: str | None = None  # an environment variable that sets it (below the flag)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    nargs: str | None = None  # "+": several values after one flag
    repeat: bool = False  # the flag may be given again (each adds one value)
    const: Any = None  # a flag without a value sets this (True for --batch, False for --no-…)
    example: Any = None  # a value other than the default, for init's template and the tests
    in_template: bool = False  # uncommented in the file `halugen init` writes
    file_help: str | None = None  # the key's note in that file, where the flag's help does not fit
    # the fields of the run object it fills ("sampling.temperature": a field of a field);
    # SAME: the field of its own name; (): none (the command reads it from the arguments)
    to: tuple[str, ...] = SAME
    # what is wrong with a value, naming the flag; None: nothing (checks.py)
    check: Callable[[str, Any], str | None] | None = None
    # the value as the run object holds it, before the cast to the field's type (checks.py)
    convert: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.flags is SAME:
            object.__setattr__(self, "flags", ("--" + self.name.replace("_", "-"),))
        if self.toml is SAME:
            object.__setattr__(self, "toml", self.name)
        if self.to is SAME:
            object.__setattr__(self, "to", (self.name,))

    @property
    def flag(self) -> str:
        """The flag as messages name it (``--max-tokens``), also for a file-only setting."""
        return "--" + self.name.replace("_", "-")

    def default_words(self) -> str:
        """The default as the help line shows it."""
        if self.default_text is not None:
            return self.default_text
        if self.default is None or self.default == ():
            return "none"
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)

    def help_line(self) -> str:
        """The flag's help: what it does, the environment variable, the default."""
        if self.const is not None and self.default_text is None:
            return self.help  # an on/off flag: it says what turning it on does
        env = f"${self.env}, else " if self.env else ""
        return f"{self.help} (default: {env}{self.default_words()})"
