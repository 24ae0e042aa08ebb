"""Where the data directories live: ``budgets/`` (price cards) and ``prompts/`` (the built-in
task folders), in a wheel or in a checkout; both are found the same way."""

from __future__ import annotations

from pathlib import Path

__all__ = ["data_dir"]

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the directory of ``budgets`` or ``prompts``.

    An installed wheel carries them under ``halugen/_data/``; an editable install or a
    checkout has them at the top of the repository.
    """
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"halugen's {name}/ directory is missing from the installation")
