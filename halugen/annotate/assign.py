"""Which item an annotator gets next.

An item goes to at most ``per_item`` distinct annotators, plus one for each extra place an
organiser opened on it (``annotation_extra_places``, to settle a tie). Two things hold a
place on an item: a saved label (any source: web or imported) and a lease, the short-lived
claim of an item handed out by the web page but not labelled yet. Leases keep several people
working at once from being handed the same last free place. They are decided in memory and
journalled to the store (``sessions.lease_journal``), so a restarted server restores them;
the cap is checked once more when a label is saved.

Items are offered in ``item_id`` order, the same for everyone; an annotator may always come
back to the items they labelled themself. Labels are read from the store on every call, so
what the page shows is what the store holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..store import assignment_queries as queries
from ..store.assignment_queries import ItemLoad
from ..store.db import Store

__all__ = ["Assigner", "Leases", "MyItems", "Progress"]

DEFAULT_LEASE_SECONDS = 600.0

# (annotator, item_id, expires_at): told every grant and release (expires_at 0)
Journal = Callable[[str, str, float], None]


class Leases:
    """Who was handed which item, until when.

    ``clock``: wall-clock seconds (injectable for tests); wall time, not a monotonic clock,
    because expiry times outlive the process. ``journal`` is told every change.
    """

    def __init__(
        self,
        seconds: float = DEFAULT_LEASE_SECONDS,
        clock: Callable[[], float] = time.time,
        journal: Journal | None = None,
    ) -> None:
        self.seconds = seconds
        self._clock = clock
        self._journal = journal
        self._until: dict[tuple[str, str], float] = {}  # (annotator, item_id) -> expiry

    def now(self) -> float:
        return self._clock()

    def restore(self, leases: Iterable[tuple[str, str, float]]) -> None:
        """Take back leases from a previous run of the server (expired ones are dropped)."""
        t = self._clock()
        for annotator, item_id, until in leases:
            if until > t:
                self._until[(annotator, item_id)] = until

    def grant(self, annotator: str, item_id: str) -> None:
        until = self._clock() + self.seconds
        self._until[(annotator, item_id)] = until
        if self._journal is not None:
            self._journal(annotator, item_id, until)

    def release(self, annotator: str, item_id: str) -> None:
        if self._until.pop((annotator, item_id), None) is not None and self._journal:
            self._journal(annotator, item_id, 0.0)

    def holds(self, annotator: str, item_id: str) -> bool:
        until = self._until.get((annotator, item_id))
        return until is not None and until > self._clock()

    def others_on(self, item_id: str, annotator: str) -> int:
        """Active leases on ``item_id`` held by anyone but ``annotator``."""
        self._expire()
        return sum(1 for (who, item) in self._until if item == item_id and who != annotator)

    def held_by(self, annotator: str) -> list[str]:
        self._expire()
        return sorted(item for (who, item) in self._until if who == annotator)

    def by_item(self) -> dict[str, set[str]]:
        self._expire()
        out: dict[str, set[str]] = {}
        for who, item in self._until:
            out.setdefault(item, set()).add(who)
        return out

    def _expire(self) -> None:
        t = self._clock()
        for key in [k for k, until in self._until.items() if until <= t]:
            del self._until[key]


@dataclass(frozen=True, slots=True)
class MyItems:
    """Where an item sits among an annotator's own labelled items."""

    position: int  # 1-based: the k in "k of n"
    total: int  # labelled + still available to this annotator
    prev: str | None  # the annotator's labelled item just before (item_id order)
    next: str | None  # the annotator's labelled item just after


@dataclass(frozen=True, slots=True)
class Progress:
    labelled: int  # items this annotator labelled
    available: int  # items this annotator could still be given
    items: int  # items in the store
    complete: int  # items with per_item labels or more
    labels: int  # (item, annotator) labels in the store
    per_item: int
    target: int  # labels wanted in all: per_item per item plus the extra places

    def as_dict(self) -> dict[str, object]:
        return {
            "mine": {"labelled": self.labelled, "available": self.available},
            "overall": {
                "items": self.items,
                "complete": self.complete,
                "labels": self.labels,
                "target": self.target,
                "per_item": self.per_item,
            },
        }


class Assigner:
    """Hands out items under the per-item cap. Synchronous: call it from one thread."""

    def __init__(self, store: Store, *, per_item: int = 3, leases: Leases | None = None) -> None:
        if per_item < 1:
            raise ValueError("per_item must be at least 1")
        self.store = store
        self.per_item = per_item
        self.leases = leases if leases is not None else Leases()

    # -- questions ----------------------------------------------------------------------
    def labelled_by(self, item_id: str, annotator: str) -> bool:
        return queries.has_labelled(self.store, item_id, annotator)

    def others_labelled(self, item_id: str, annotator: str) -> int:
        return queries.others_labelled(self.store, item_id, annotator)

    def cap(self, item_id: str) -> int:
        """How many annotators ``item_id`` may have: per_item plus its extra places."""
        return self.per_item + queries.extra_places(self.store, item_id)

    def may_label(self, item_id: str, annotator: str) -> bool:
        """True when a label by ``annotator`` on ``item_id`` keeps the item within the cap."""
        if self.labelled_by(item_id, annotator) or self.leases.holds(annotator, item_id):
            return True
        taken = self.others_labelled(item_id, annotator) + self.leases.others_on(item_id, annotator)
        return taken < self.cap(item_id)

    def may_view(self, item_id: str, annotator: str) -> bool:
        """An annotator sees the items they labelled and the ones handed to them."""
        return self.labelled_by(item_id, annotator) or self.leases.holds(annotator, item_id)

    # -- handing out --------------------------------------------------------------------
    def next_for(self, annotator: str) -> str | None:
        """The item ``annotator`` should work on now (leased to them), or None when done."""
        for item_id in self.leases.held_by(annotator):
            if not self.labelled_by(item_id, annotator) and self._exists(item_id):
                self.leases.grant(annotator, item_id)  # still on it: renew
                return item_id
        leased = self.leases.by_item()
        with queries.open_items(self.store, annotator, self.per_item) as items:
            return self._first_free(items, annotator, leased)

    def _first_free(
        self, items: Iterator[ItemLoad], annotator: str, leased: dict[str, set[str]]
    ) -> str | None:
        for item_id, n, cap in items:
            others = len(leased.get(item_id, set()) - {annotator})
            if n + others < cap:
                self.leases.grant(annotator, item_id)
                return str(item_id)
        return None

    # -- where am I ---------------------------------------------------------------------
    def my_items(self, item_id: str, annotator: str) -> MyItems:
        progress = self.progress(annotator)
        before, prev, nxt = queries.my_position(self.store, item_id, annotator)
        if self.labelled_by(item_id, annotator):
            position = int(before) + 1
        else:  # a new item: the one after all the labelled ones
            position = progress.labelled + 1
        total = max(progress.labelled + progress.available, position)
        return MyItems(position, total, prev, nxt)

    def last_labelled(self, annotator: str) -> str | None:
        return queries.last_labelled(self.store, annotator)

    def progress(self, annotator: str) -> Progress:
        items, complete, labels, mine, open_to_me, target = queries.item_progress(
            self.store, annotator, self.per_item
        )
        # items open by the labels alone but filled up by other people's leases
        blocked = 0
        leased = {item: who - {annotator} for item, who in self.leases.by_item().items()}
        leased = {item: who for item, who in leased.items() if who}
        if leased:
            for item_id, n, cap in queries.open_items_among(
                self.store, annotator, self.per_item, sorted(leased)
            ):
                if n + len(leased[item_id]) >= cap:
                    blocked += 1
        return Progress(
            labelled=int(mine),
            available=int(open_to_me) - blocked,
            items=int(items),
            complete=int(complete),
            labels=int(labels),
            per_item=self.per_item,
            target=int(target),
        )

    def _exists(self, item_id: str) -> bool:
        return queries.item_exists(self.store, item_id)
