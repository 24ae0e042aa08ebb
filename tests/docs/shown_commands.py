"""The shell commands a markdown page shows, read from its fenced code blocks.

What counts as a command:
- in a ``bash``, ``sh`` or ``shell`` block, every line but comments (``\\`` joins lines);
- in a ``console`` block, and in any other block, a line starting with ``$ `` (the lines
  under it are its output), and also a line starting with ``python -m halugen`` or
  ``halugen `` (an untagged block of commands is still a block of commands);
- ``a && b`` is two commands.

``python``, ``toml`` and ``json`` blocks hold no shell commands.

A command that cannot run here is marked in the page, in an HTML comment right before its
block (blank lines and other markers may come between):

    <!-- not run: WHY -->              every command of the next block
    <!-- not run "PREFIX": WHY -->     the next block's commands that start with PREFIX
    <!-- not run 'PREFIX': WHY -->     the same, for a PREFIX that holds a double quote

Those are only parsed. A comment on a command's line that says ``exit N`` is the exit code
the page promises for it (``# refused, exit 2``); otherwise it is 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ShownCommand", "shown_commands"]

_SHELL = {"bash", "sh", "shell", "zsh"}
_NO_COMMANDS = {"python", "py", "toml", "json", "yaml", "sql"}
_MARKER = re.compile(
    r"""<!--\s*not run(?:\s+(?:"(?P<prefix>[^"]+)"|'(?P<quoted>[^']+)'))?"""
    r"\s*:\s*(?P<why>.+?)\s*-->"
)
_FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<info>[\w+-]*)")
_COMMENT = re.compile(r"\s+#\s.*$|\s+#$")
_EXIT = re.compile(r"\bexit (\d+)\b")


@dataclass(frozen=True)
class ShownCommand:
    """One command as the page shows it, with where it is and what the page says of it."""

    page: str
    line: int  # 1-based, the command's first line in the page
    text: str  # the command, continuation lines joined, its trailing comment removed
    comment: str  # the trailing comment, without "#"
    not_run: str | None  # why it is only parsed (the page's marker), or None: it runs

    @property
    def expected_exit(self) -> int:
        found = _EXIT.search(self.comment)
        return int(found.group(1)) if found else 0

    @property
    def background(self) -> bool:
        return self.text.endswith("&") and not self.text.endswith("&&")

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def _split_comment(line: str) -> tuple[str, str]:
    """``cmd  # why`` -> (``cmd``, ``why``); a ``#`` inside quotes is not a comment."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def _is_halugen(line: str) -> bool:
    return line.startswith(("python -m halugen", "halugen "))


def _block_commands(lines: list[tuple[int, str]], info: str) -> list[tuple[int, str, str]]:
    """(line number, command, comment) of one block's lines."""
    shell = info in _SHELL
    found: list[tuple[int, str, str]] = []
    pending: tuple[int, str] | None = None  # a command whose line ended with "\"
    for number, raw in lines:
        line = raw.strip()
        if pending is not None:
            start, text = pending
            text = f"{text} {line}"
            if text.endswith("\\"):
                pending = (start, text[:-1].rstrip())
                continue
            pending = None
            number, line = start, text
        elif line.startswith("$ "):
            line = line[2:].strip()
        elif not (shell or _is_halugen(line)):
            continue
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending = (number, line[:-1].rstrip())
            continue
        command, comment = _split_comment(line)
        for part in command.split(" && "):
            found.append((number, part.strip(), comment))
    assert pending is None, f"line {pending[0]}: a command ends in '\\' with no next line"
    return found


def _why_not_run(markers: list[tuple[str | None, str]], command: str) -> str | None:
    """The reason of the first marker that covers ``command``; None when none does."""
    for prefix, why in markers:
        if prefix is None or command.startswith(prefix):
            return why
    return None


def shown_commands(path: Path) -> list[ShownCommand]:
    """Every command of the page at ``path``, in the order shown."""
    commands: list[ShownCommand] = []
    markers: list[tuple[str | None, str]] = []
    block: list[tuple[int, str]] | None = None
    fence = info = ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if block is not None:
            if line.strip().startswith(fence) and not line.strip()[len(fence) :].strip():
                if info not in _NO_COMMANDS:
                    for at, text, comment in _block_commands(block, info):
                        why = _why_not_run(markers, text)
                        commands.append(ShownCommand(path.name, at, text, comment, why))
                block, markers = None, []
            else:
                block.append((number, line))
            continue
        opening = _FENCE.match(line.strip())
        if opening:
            block, fence, info = [], opening.group("fence"), opening.group("info").lower()
            continue
        marker = _MARKER.search(line)
        if marker:
            prefix = marker.group("prefix") or marker.group("quoted")
            markers.append((prefix, marker.group("why")))
        elif line.strip():
            markers = []  # a marker is for the block right after it
    return commands
