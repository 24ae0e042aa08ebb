"""Samples the verify stage flagged: left out of sample exports unless ``--include-suspect``.

A flagged sample's hallucinated text was judged supported by its knowledge, or its right
text unsupported, or the judge stayed unsure (docs/verify.md). It stays in the store; an
export says how many it left out and how to take them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..store.db import Store
from ..store.label_checks import NOT_SUSPECT, flagged_in

__all__ = ["suspect_note", "without_suspects"]


def without_suspects(where: str | None) -> str:
    """The user's ``--where`` predicate (or none) and "not flagged"."""
    return f"{NOT_SUSPECT} AND ({where})" if where else NOT_SUSPECT


def suspect_note(
    store: Store, run_ids: Sequence[str], task: str | None, where: str | None
) -> tuple[str, ...]:
    """A note on the flagged samples an export left out; () when there were none."""
    n = flagged_in(store, run_ids, task, where)
    if not n:
        return ()
    return (
        f"{n:,} sample(s) flagged by the verify stage were left out (their labels failed "
        f"the check; see the label_checks view); --include-suspect exports them too",
    )
