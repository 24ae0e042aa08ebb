"""Where an export writes: one file, or a directory.

``--out NAME/`` (a trailing slash) or an existing directory is always a directory, also when
only one task is exported; anything else is a file. No ``--out``: the format's default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

__all__ = ["Target", "resolve_target"]


@dataclass(frozen=True)
class Target:
    path: Path
    is_dir: bool

    def file(self, name: str) -> Path:
        """``name`` inside the directory (created), or the file itself."""
        if not self.is_dir:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return self.path
        self.path.mkdir(parents=True, exist_ok=True)
        return self.path / name

    def beside(self, name: str) -> Path:
        """A companion file: ``name`` inside the directory, else next to the file."""
        if self.is_dir:
            self.path.mkdir(parents=True, exist_ok=True)
            return self.path / name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.path.parent / name


def _names_a_directory(out: str) -> bool:
    return out.endswith(("/", os.sep)) or Path(out).is_dir()


def resolve_target(
    out: str | os.PathLike[str] | None,
    *,
    default: str,
    default_is_dir: bool = False,
    needs_dir: bool = False,
) -> Target:
    """The target of ``--out`` (``default`` when None). ``needs_dir``: the format writes
    several files, so a path that is an existing file is refused."""
    if out is None:
        return Target(Path(default), default_is_dir)
    text = os.fspath(out)
    if not text:
        raise UsageError("--out is empty: give a file or a directory (end it with /)")
    path = Path(text).expanduser()
    if needs_dir:
        if path.exists() and not path.is_dir():
            raise UsageError(f"--out {text} is a file; this format writes a directory")
        return Target(path, True)
    if _names_a_directory(text):
        if path.exists() and not path.is_dir():
            raise UsageError(f"--out {text} ends with / but is a file")
        return Target(path, True)
    if path.parent != Path() and path.parent.exists() and not path.parent.is_dir():
        raise UsageError(f"--out {text}: {path.parent} is not a directory")
    return Target(path, False)
