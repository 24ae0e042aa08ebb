"""Is the provider still there? A run stops when no attempt can connect for a while.

Every attempt's outcome is told here. An HTTP answer of any status (even an error) means
the provider is reachable. A failure to connect (refused, no route, connect timeout: nothing
was sent) is evidence that it is gone. When attempts have done nothing but fail to connect
for ``window`` seconds, on every worker and every endpoint of a fleet, the provider is
taken to be gone for good (``RetryPolicy.unreachable_after``, 60 s: longer than a
restart or a network blip) and the run stops with ``EndpointUnreachable``: retrying every
seed for minutes only turns answered-later seeds into failed ones. Timeouts and dropped
connections say neither (a slow or overloaded server is still there).

A run that never reached the endpoint at all stops sooner: when its first call has used up
its attempts (a wrong --base-url, no network).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ConnectFailed, EndpointUnreachable

__all__ = ["Reachability"]


class Reachability:
    """What the attempts of a run say about its endpoint (see the module docstring)."""

    def __init__(self, where: str, *, window: float, clock: Callable[[], float]) -> None:
        self.where = where  # for the message: the URL (or the fleet's URLs)
        self.window = window
        self._clock = clock
        self.ever_reached = False
        self._failing_since: float | None = None  # first connect failure since an answer
        self._failures = 0  # connect failures since then

    def answered(self) -> None:
        """An attempt got an HTTP answer (any status)."""
        self.ever_reached = True
        self._failing_since = None
        self._failures = 0

    def connect_failed(self, error: ConnectFailed) -> None:
        """An attempt could not connect; raises ``EndpointUnreachable`` once the window of
        nothing but such failures has passed."""
        now = self._clock()
        if self._failing_since is None:
            self._failing_since = now
        self._failures += 1
        down_for = now - self._failing_since
        if self.ever_reached and down_for >= self.window:
            raise EndpointUnreachable(
                f"{self.where} stopped answering: no attempt could connect for "
                f"{down_for:.0f} s ({self._failures} attempt(s); last: {error}). What was "
                f"answered is kept: run the same command again once the endpoint is back"
            )

    def never_reached(self, error: ConnectFailed, attempts: int) -> EndpointUnreachable | None:
        """The error that stops a run whose endpoint has never answered, after a call used
        up its ``attempts`` failing to connect; None once it has answered."""
        if self.ever_reached:
            return None
        return EndpointUnreachable(
            f"cannot reach {self.where}: {error} (after {attempts} attempts); check "
            f"--base-url (or OPENAI_BASE_URL) and the network"
        )
