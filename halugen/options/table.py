"""Every setting of every command, in one table made of the areas' declarations.

The rest is made from it:

- the command-line flags (``cli/flags.py`` ``add_settings``): their help ends with the
  default, and the commands list the groups of settings they take;
- the value a command uses (``settings/resolve.py``): the flag, else the environment
  variable, else ``halugen.toml``, else the default;
- what ``halugen.toml`` accepts and the types it checks, and the commented file
  ``halugen init`` writes (``settings/file.py``);
- the defaults of ``RunConfig`` and the objects it holds (``config.py``), of ``EvalConfig``
  and ``PreselectConfig``: ``default("<name>")``;
- those objects, from the resolved values (``settings/build.py`` ``assemble``).

Adding a setting is one declaration in its area's module: give it a ``group`` that the
commands which need it take (or a new group here, added to those commands with
``add_settings``). A setting of a run object also gets a field there, with
``default("<name>")`` as its default; the declaration's ``to`` names the field when its name
differs. ``tests/cli/test_options.py`` checks that every flag with a halugen.toml key
round-trips through the file (give it an ``example``), that ``halugen init`` lists every key
and ``tests/settings/test_one_default.py`` that each default is written once.

These modules import nothing from halugen: ``config.py`` and ``--help`` read them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .preselection import PRESELECT
from .recognition import EVAL, LABELS
from .run_calls import ENDPOINT
from .run_control import BATCH, RESUME, RUN
from .run_inputs import SAMPLING, SEEDS, VERIFY
from .spec import Setting
from .topics import TOPICS

__all__ = ["GROUPS", "SETTINGS", "default", "setting", "settings_in"]

# group -> the title of its flags in --help; None: among the command's own options
GROUPS: dict[str, str | None] = {
    "seeds": "seeds and prompts",
    "sampling": "sampling",
    "endpoint": "model endpoint",
    "run": "run",
    "resume": "resuming",
    "batch": "batch mode",
    "verify": "label check",
    "eval": None,
    "labels": None,
    "preselect": None,
    "topics": None,
}

# in this order in halugen.toml and the file `halugen init` writes
SETTINGS: tuple[Setting, ...] = (
    *SEEDS,
    *SAMPLING,
    *ENDPOINT,
    *RUN,
    *VERIFY,
    *RESUME,
    *BATCH,
    *EVAL,
    *LABELS,
    *PRESELECT,
    *TOPICS,
)

_BY_NAME = {s.name: s for s in SETTINGS}
assert len(_BY_NAME) == len(SETTINGS), "two settings of the same name"


def default(name: str) -> Any:
    """The default of the setting ``name`` (the run objects take their defaults from here)."""
    return _BY_NAME[name].default


def setting(name: str) -> Setting:
    return _BY_NAME[name]


def settings_in(group: str) -> Iterator[Setting]:
    """The settings of ``group``, in table order."""
    return (s for s in SETTINGS if s.group == group)
