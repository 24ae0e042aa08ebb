"""Logins and leases of the annotation server, kept in the store so a restart keeps them.

A login is a random session id in an HttpOnly cookie. The store holds only its sha256
(someone who can read the store with ``halugen sql`` cannot log in as anyone) and the sha256
of the token used to log in: after a restart with a new tokens file, a session opened with a
token that is no longer valid is not restored. Leases (see ``assign.py``) are journalled
through the store writer's bulk lane and restored when the server starts; a crash loses at
most the last half second of them, which only lets an item be handed out once more (the cap
is checked again when the label is saved).

Tables (append-only, latest row wins): ``annotation_sessions``, ``annotation_leases``.
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..store.assignment_queries import open_leases, open_sessions
from ..store.db import Store
from ..store.rows import AnnotationLeaseRow, AnnotationSessionRow

__all__ = ["ANNOTATOR", "ORGANISER", "Session", "Sessions", "lease_journal", "load_leases"]

ANNOTATOR = "annotator"
ORGANISER = "organiser"
MAX_SESSIONS = 10_000


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    role: str  # annotator | organiser
    annotator: str | None  # None for the organiser


class Sessions:
    """Open sessions by cookie value; every change is written to the store before it counts.

    ``tokens`` (annotator -> token) and ``organiser_token``: what the server accepts now;
    ``load`` drops stored sessions whose token no longer matches.
    """

    def __init__(
        self,
        store: Store,
        *,
        tokens: Mapping[str, str] | None,
        organiser_token: str | None,
    ) -> None:
        self.store = store
        self._tokens = tokens
        self._organiser_token = organiser_token
        self._open: dict[str, Session] = {}  # sha256(cookie) -> session, oldest first

    def __len__(self) -> int:
        return len(self._open)

    def get(self, cookie: str | None) -> Session | None:
        return self._open.get(_sha256(cookie)) if cookie else None

    def load(self) -> int:
        """Restore the sessions still open in the store; returns how many."""
        rows = open_sessions(self.store)
        for session_hash, role, annotator, token_hash in rows:
            if self._still_valid(role, annotator, token_hash):
                self._open[session_hash] = Session(role, annotator)
        while len(self._open) > MAX_SESSIONS:
            self._open.pop(next(iter(self._open)))
        return len(self._open)

    def _still_valid(self, role: str, annotator: str | None, token_hash: str | None) -> bool:
        if role == ORGANISER:
            expected = self._organiser_token
            if self._tokens is None and expected is None:
                return True  # an open organiser view: nothing to check
        elif role == ANNOTATOR and annotator:
            if self._tokens is None:
                return True
            expected = self._tokens.get(annotator)
        else:
            return False
        return expected is not None and token_hash is not None and _sha256(expected) == token_hash

    async def open(self, session: Session, token: str | None, replaces: str | None) -> str:
        """A new session (durable before this returns); ``replaces``: the old cookie, ended."""
        sid = secrets.token_urlsafe(32)
        ended = []
        if replaces and _sha256(replaces) in self._open:
            ended.append(_sha256(replaces))
        while len(self._open) - len(ended) >= MAX_SESSIONS:  # forget the oldest login
            ended.append(next(h for h in self._open if h not in ended))
        rows = [self._row(h, self._open[h], None, "logout") for h in ended]
        rows.append(self._row(_sha256(sid), session, token, "login"))
        await self.store.writer.put_durable(rows)
        for h in ended:
            self._open.pop(h, None)
        self._open[_sha256(sid)] = session
        return sid

    async def close(self, cookie: str | None) -> None:
        if not cookie:
            return
        h = _sha256(cookie)
        session = self._open.get(h)
        if session is None:
            return
        await self.store.writer.put_durable([self._row(h, session, None, "logout")])
        self._open.pop(h, None)

    @staticmethod
    def _row(
        session_hash: str, session: Session, token: str | None, event: str
    ) -> AnnotationSessionRow:
        token_hash = _sha256(token) if token else None
        return AnnotationSessionRow(
            session_hash, session.annotator, session.role, token_hash, event
        )


def lease_journal(store: Store) -> Callable[[str, str, float], None]:
    """A ``Leases`` journal that appends each change to ``annotation_leases`` (bulk lane)."""

    seq = itertools.count()

    def record(annotator: str, item_id: str, expires_at: float) -> None:
        store.writer.put([AnnotationLeaseRow(annotator, item_id, float(expires_at), next(seq))])

    return record


def load_leases(store: Store, now: float) -> list[tuple[str, str, float]]:
    """Leases still running at ``now``: (annotator, item_id, expires_at), without the ones
    whose item the annotator has labelled since (the label holds the place now)."""
    return [(str(a), str(i), float(t)) for a, i, t in open_leases(store, now)]
