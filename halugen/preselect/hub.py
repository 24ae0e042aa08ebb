"""Where a BERTScore model named by the hub comes from, decided before anything is loaded.

A hub name (bert-score's default ``roberta-large``, or ``--bertscore-model org/name``) loads
from the Hugging Face cache or is downloaded. Without a network, Hugging Face's loaders retry
each file for about a minute, printing a line per retry, and then fail with a message about
their cache. So before a load:

- the model is in the cache: it loads from there; when the hub cannot be reached (or
  ``HF_HUB_OFFLINE`` is set), in offline mode, so nothing is retried;
- it is not: with ``HF_HUB_OFFLINE`` set, or when one quick request to the hub fails, the
  scorer is refused at once with one line naming ``--bertscore-model PATH``.

The hub endpoint is ``HF_ENDPOINT`` (Hugging Face's own setting); proxies come from the
usual environment variables.
"""

from __future__ import annotations

import contextlib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from ..errors import UsageError

__all__ = ["HubSource", "hub_offline", "resolve_hub_model"]

_PROBE_TIMEOUT = 5.0  # seconds; the hub answers a model's metadata in well under one
_LOCAL_HINT = (
    "give a local model directory with --bertscore-model PATH (and --bertscore-layers N), "
    "or download the model once where there is a network"
)


def _constants() -> Any:
    from huggingface_hub import constants  # a dependency of transformers

    return constants


def _in_cache(name: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id=name, filename="config.json")
    except Exception:  # an invalid repo id, an unreadable cache: not usable from the cache
        return False
    return isinstance(found, str)


def _probe(endpoint: str, name: str) -> str:
    """ "" when the hub answers for ``name`` (any HTTP reply), else why it cannot be reached."""
    url = f"{endpoint.rstrip('/')}/api/models/{urllib.parse.quote(name, safe='/')}"
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=_PROBE_TIMEOUT):
            return ""
    except urllib.error.HTTPError:
        return ""  # it answered; the loader reports a missing or gated model itself
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        return f"{type(reason).__name__}: {reason}" if not str(reason) else str(reason)


class HubSource:
    """How to load a hub model: ``offline`` when it must come from the cache alone."""

    def __init__(self, name: str, *, offline: bool) -> None:
        self.name = name
        self.offline = offline


def resolve_hub_model(name: str, *, shown: str) -> HubSource:
    """Decide where the hub model ``name`` loads from; ``UsageError`` when it cannot load.

    ``shown`` names the model in messages (e.g. "bert-score's default model roberta-large").
    """
    constants = _constants()
    cached = _in_cache(name)
    if constants.HF_HUB_OFFLINE:
        if cached:
            return HubSource(name, offline=True)
        raise UsageError(
            f"BERTScore model {shown} is not in the Hugging Face cache and HF_HUB_OFFLINE is "
            f"set, so it cannot be downloaded: {_LOCAL_HINT}"
        )
    why = _probe(constants.ENDPOINT, name)
    if not why:
        return HubSource(name, offline=False)
    if cached:
        return HubSource(name, offline=True)
    raise UsageError(
        f"BERTScore model {shown} is not in the Hugging Face cache and {constants.ENDPOINT} "
        f"cannot be reached ({why}): {_LOCAL_HINT}"
    )


@contextlib.contextmanager
def hub_offline(offline: bool) -> Iterator[None]:
    """Hugging Face's loaders in offline mode while inside, when ``offline``."""
    if not offline:
        yield
        return
    constants = _constants()
    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True  # read at each call by huggingface_hub.is_offline_mode
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before
