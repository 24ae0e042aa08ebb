"""The ``RunConfig`` of resolved settings: the declared settings cast into it
(``settings/build.py``), with the three that need more than a cast, each read here in one place:
the seed map (``--map`` flags over the file's ``map`` table), the budget (a flag the shell
mangled gets its own message) and the fleet (``--endpoint`` flags, else the file's
``[[endpoints]]``), whose public endpoints need a key when the command calls them.
"""

from __future__ import annotations

import dataclasses

from .config import RunConfig
from .cost.prices import budget_from_flag, parse_budget
from .errors import ConfigError
from .seeds.table import parse_map
from .settings.build import assemble
from .settings.endpoints import parse_endpoint_flag, require_api_key, resolve_endpoints
from .settings.file import load_settings
from .settings.resolve import Resolved

__all__ = ["make_run_config"]


def make_run_config(resolved: Resolved, *, calls: bool = True) -> RunConfig:
    """The run's settings of ``resolved`` (flag > environment > halugen.toml > default).

    ``calls``: the command will call the endpoint, so a public endpoint needs a key
    (``estimate`` passes False: it makes no call).
    """
    mapping = _seed_map(resolved)
    text = resolved["budget"]
    budget_usd = None
    if text is not None:
        from_flag = resolved.origin.get("budget") == "flag"
        budget_usd = (budget_from_flag(text) if from_flag else parse_budget(str(text))) / 10**12
    # the fleet is made after the checks of every other setting (rpm, tpm, concurrency, ...)
    cfg = assemble(RunConfig, resolved, budget_usd=budget_usd, endpoints=(), seed_map=mapping)
    from_flags = resolved.origin.get("endpoints") == "flag"
    listed = resolved["endpoints"]
    fleet = resolve_endpoints(
        [parse_endpoint_flag(f) for f in listed] if from_flags else list(listed),
        api_key=cfg.api_key,  # an endpoint's limits and key default to the run's
        rpm=cfg.rate.rpm,
        tpm=cfg.rate.tpm,
        concurrency=cfg.rate.concurrency,
        source="--endpoint" if from_flags else f"{resolved.file} [[endpoints]]",
        keys_needed=calls,
    )
    if calls:
        for url, key in [(e.url, e.api_key) for e in fleet] or [(cfg.base_url, cfg.api_key)]:
            require_api_key(url, key)
    return dataclasses.replace(cfg, endpoints=fleet)


def _seed_map(resolved: Resolved) -> tuple[tuple[str, str], ...]:
    """``--map FIELD=COLUMN`` flags over halugen.toml's ``map`` table (a flag wins for its
    field), as sorted (field, column) pairs."""
    value = resolved["map"]
    origin = resolved.origin.get("map")
    path = resolved.file
    flagged = parse_map(value) if origin == "flag" else {}
    table = value if origin == "file" else {}
    if origin == "flag":  # the file's map still fills the fields no flag names
        table = load_settings(path).get("map") or {}
    if not isinstance(table, dict):
        raise ConfigError(f'settings file {path}: map must be a table, e.g. {{question = "q"}}')
    mapping: dict[str, str] = {}
    for field, column in table.items():
        if not isinstance(column, str) or not column.strip():
            raise ConfigError(
                f"settings file {path}: map.{field} must be a column name in quotes "
                f"(got {column!r})"
            )
        mapping[field] = column.strip()
    mapping.update(flagged)
    return tuple(sorted(mapping.items()))
