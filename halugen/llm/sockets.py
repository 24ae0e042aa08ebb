"""Room for the connections of the requests in flight: the process's open-file limit.

Every request in flight holds a connection of its own (HTTP/1.1 sends one request at a time on
a connection), and every connection a file descriptor. With a soft limit of 1,024 open files
(Linux's usual default; macOS starts at 256) the 1,000th request at once would fail with "too
many open files". A process may raise its own soft limit up to the hard one: this does so
when the endpoints may need more, and says how many connections fit when even that is not
enough, so that the cap on requests in flight stays under it.
"""

from __future__ import annotations

__all__ = ["RESERVED_FDS", "connection_room"]

RESERVED_FDS = 256  # for the store, seed files, the tokenizer's cache, threads, the loop itself
_MACOS_OPEN_MAX = 10240  # macOS refuses a soft limit above this, whatever the hard limit says


def connection_room(wanted: int) -> int:
    """How many connections (up to ``wanted``) the open-file limit leaves room for, after
    raising the soft limit towards the hard one if that is needed."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise; its own is far above ours
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = resource.RLIM_INFINITY
    need = wanted + RESERVED_FDS
    if soft != unlimited and soft < need:
        top = need if hard == unlimited else min(need, hard)
        for target in (top, min(top, _MACOS_OPEN_MAX)):
            if target <= soft:
                break
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            except (ValueError, OSError):
                continue
            soft = target
            break
    if soft == unlimited:
        return wanted
    return max(1, min(wanted, soft - RESERVED_FDS))
