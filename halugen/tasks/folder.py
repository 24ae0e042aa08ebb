"""A task folder: ``task.toml`` declares the task, ``prompts/`` holds its templates.

``load_folder`` reads one into a ``TaskSpec``; ``check_files`` finds every problem with
it first, without calling anything: a missing or unknown key, a value of the wrong kind, a
field named nowhere, a guard or shape that does not exist, a pattern without a definition,
a template that lacks a placeholder its fields need or names one no field gives. Each
problem is one line naming the file and the key. The built-in tasks are folders read the
same way (the top-level ``prompts/``), so there is one way to define a task.

A folder is read into ``{relative path: text}`` first (``read_files``); a store keeps that
mapping for the tasks its runs used, so a task can be read back from there as well.
The files are checked in ``declaration`` (the keys in ``schema``, the guards in
``guard_settings``, the placeholders in ``template_fields``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .base import TaskSpec
from .declaration import spec_from_files
from .problems import PROMPTS, TASK_FILE, Problem, TaskFolderError

__all__ = ["check_folder", "load_folder", "read_files"]


_MAX_FILE = 1_000_000  # bytes: a template or declaration larger than this is a mistake


# -- reading ------------------------------------------------------------------------------


def read_files(folder: Path) -> tuple[dict[str, str], list[Problem]]:
    """``{relative path: text}`` of ``task.toml`` and ``prompts/*.txt``, and what could not
    be read. A folder without ``task.toml`` is one problem."""
    files: dict[str, str] = {}
    problems: list[Problem] = []
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        return files, [Problem(TASK_FILE, "", f"the task folder {what}")]
    paths = [folder / TASK_FILE]
    prompts = folder / PROMPTS
    if prompts.is_dir():
        paths += sorted(prompts.glob("*.txt"))
    for path in paths:
        rel = path.relative_to(folder).as_posix()
        try:
            if path.stat().st_size > _MAX_FILE:
                problems.append(Problem(rel, "", f"larger than {_MAX_FILE:,} bytes"))
                continue
            files[rel] = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if rel == TASK_FILE:
                problems.append(
                    Problem(
                        rel,
                        "",
                        "missing (a task folder declares its task there; "
                        "'halugen task new NAME --like qa' writes one)",
                    )
                )
        except UnicodeDecodeError:
            problems.append(Problem(rel, "", "not UTF-8 text"))
        except OSError as exc:
            problems.append(Problem(rel, "", f"cannot be read ({exc.strerror or exc})"))
    return files, problems


def check_folder(
    folder: Path, *, builtin: bool = False, reserved: Sequence[str] = ()
) -> tuple[TaskSpec | None, list[Problem]]:
    """(the spec, []) or (None, every problem) for the task folder at ``folder``.

    ``reserved`` are names another task owns (the built-in ones, for a user's folder).
    """
    files, problems = read_files(folder)
    spec = None
    if TASK_FILE in files:
        spec, more = spec_from_files(files, folder=folder, builtin=builtin, reserved=reserved)
        problems += more
    return (None if problems else spec), problems


def load_folder(folder: Path, *, builtin: bool = False, reserved: Sequence[str] = ()) -> TaskSpec:
    """The task declared in ``folder``; ``TaskFolderError`` listing every problem."""
    spec, problems = check_folder(folder, builtin=builtin, reserved=reserved)
    if spec is None:
        raise TaskFolderError(str(folder), problems)
    return spec
