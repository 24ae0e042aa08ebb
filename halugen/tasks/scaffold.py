"""``halugen task new``: a task folder to edit, made from a built-in task.

The new folder is a copy of the built-in task's folder: its ``task.toml`` (commented
throughout) under the new name, and its templates, each with a note at the top (a comment,
never sent) naming the placeholders it must keep and those it may use.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UsageError
from . import BUILTIN_TASKS, TASK_NAMES, builtin_folder, builtin_task
from .problems import PROMPTS, TASK_FILE
from .schema import TASK_NAME
from .template_fields import spec_template_fields

__all__ = ["new_folder"]

_HEADER = """\
# Task {name}, made by `halugen task new {name} --like {like}` from halugen's {like} task.
# Edit the fields, patterns, guards and the templates in prompts/, then check the folder
# with `halugen task check {folder}` and use it with `--task {folder}`.
#
"""


def _placeholders(names: set[str]) -> str:
    return ", ".join("{{" + n + "}}" for n in sorted(names)) or "none"


def _template_note(name: str, need: set[str], allowed: set[str], what: str) -> str:
    lines = [
        f"Task {name}: its {what} template (this note and the text down to the first '===' "
        "line are comments, never sent).",
        f"Keep these placeholders: {_placeholders(need)}.",
    ]
    if allowed - need:
        lines.append(f"It may also use: {_placeholders(allowed - need)}.")
    lines.append(
        "Each {{field}} is a field of task.toml; 'halugen task check' names any that is "
        "missing or unknown."
    )
    return "\n".join(lines) + "\n\n"


def new_folder(name: str, like: str, out: Path | None = None) -> Path:
    """Write the folder of a new task ``name`` made from the built-in task ``like``."""
    if not TASK_NAME.match(name):
        raise UsageError(
            f"task name {name!r}: lower-case letters, digits and _, starting with a letter "
            "(it names files and columns)"
        )
    if name in BUILTIN_TASKS:
        raise UsageError(f"{name!r} is a built-in task's name: choose another")
    if like not in TASK_NAMES:
        raise UsageError(f"--like must be one of {', '.join(TASK_NAMES)}, not {like!r}")
    folder = out if out is not None else Path(name)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(f"{folder} exists and is not an empty folder: choose another --out")
    source = builtin_folder(like)
    spec = builtin_task(like)
    toml = (source / TASK_FILE).read_text(encoding="utf-8")
    toml = re.sub(r'(?m)^name = "[^"]*"', f'name = "{name}"', toml, count=1)
    toml = re.sub(r'(?m)^title = "[^"]*"', f'title = "{name}"', toml, count=1)
    toml = re.sub(
        r'(?m)^description = "[^"]*"',
        'description = "(say in one line what an item of this task is)"',
        toml,
        count=1,
    )
    wanted = spec_template_fields(spec)
    notes = {stem: (need, allowed, what) for stem, need, allowed, what in wanted}
    prompts = folder / PROMPTS
    prompts.mkdir(parents=True, exist_ok=True)
    header = _HEADER.format(name=name, like=like, folder=folder)
    (folder / TASK_FILE).write_text(header + toml, encoding="utf-8")
    for path in sorted((source / PROMPTS).glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        note = notes.get(path.stem)
        if note is not None:
            text = _template_note(name, *note) + text
        (prompts / path.name).write_text(text, encoding="utf-8")
    return folder
