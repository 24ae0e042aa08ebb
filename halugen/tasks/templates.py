"""A task's templates: the files of its folder's ``prompts/``, or of ``--prompts DIR``.

``prompts`` parses a template's text; which file is a task's template is decided here, from
the task's declaration (``TaskSpec``), so the parser below knows nothing of tasks.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..errors import ConfigError
from ..prompts import Template, load_template_file, parse_template
from .base import TaskSpec

__all__ = ["task_template"]


def task_template(spec: TaskSpec, stem: str, directory: Path | None = None) -> Template:
    """The template ``prompts/<stem>.txt`` of ``spec``; ``directory/<task>/<stem>.txt`` wins
    when that file exists (``--prompts DIR``)."""
    if directory is not None and (directory / spec.name / f"{stem}.txt").is_file():
        return load_template_file(f"{spec.name}/{stem}", directory / spec.name / f"{stem}.txt")
    for name, template in spec.templates:
        if name == stem:
            return template
    # a template the declaration does not name (a newer step's, e.g. a re-ask): the
    # folder's prompts/ were read whole
    for path, text in spec.sources:
        if path == f"prompts/{stem}.txt":
            return _parsed(f"{spec.name}/{stem}", text)
    where = spec.folder / "prompts" if spec.folder else f"the {spec.name} task"
    raise ConfigError(f"prompt template {where}/{stem}.txt not found")


@lru_cache(maxsize=64)
def _parsed(name: str, text: str) -> Template:
    return parse_template(name, text)
