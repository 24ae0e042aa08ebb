"""The guidelines shown on the annotation page: halugen's short default, or the organiser's file.

The text is sent to the page as a string and shown as text (paragraphs, ``#`` headings and
``-`` list items are laid out, nothing else is interpreted: no HTML, no links), so a file can
hold anything without changing the page.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources

from ..errors import InputError

__all__ = ["MAX_GUIDELINES_BYTES", "Guidelines", "default_guidelines", "load_guidelines"]

MAX_GUIDELINES_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Guidelines:
    text: str
    source: str  # "default" or the file's name

    def as_dict(self) -> dict[str, str]:
        return {"text": self.text, "source": self.source}


def default_guidelines() -> Guidelines:
    text = (resources.files(__package__) / "static" / "guidelines.md").read_text("utf-8")
    return Guidelines(text, "default")


def load_guidelines(path: str | os.PathLike[str]) -> Guidelines:
    """The organiser's guidelines file (UTF-8 text, at most 256 KiB); ``InputError`` if not."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read(MAX_GUIDELINES_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"guidelines file {name} not found (check the path)") from None
    except IsADirectoryError:
        raise InputError(f"guidelines file {name} is a directory, not a file") from None
    except OSError as err:
        raise InputError(f"cannot read guidelines file {name}: {err.strerror or err}") from None
    if len(data) > MAX_GUIDELINES_BYTES:
        raise InputError(
            f"guidelines file {name} is larger than {MAX_GUIDELINES_BYTES // 1024} KiB: "
            f"keep the guidelines short, or link to the long version from them"
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            f"guidelines file {name} is not UTF-8 text (byte {err.start}): save it as UTF-8"
        ) from None
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise InputError(f"guidelines file {name} is empty")
    return Guidelines(text, os.path.basename(name))
