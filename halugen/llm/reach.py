"""Is the provider still there? A run stops when it is gone or frozen for a while.

Every attempt's outcome is told here. An HTTP answer of any status (even an error) means
the provider is reachable. A failure to connect (refused, no route, connect timeout: nothing
was sent) is evidence that it is gone. When attempts have done nothing but fail to connect
for ``window`` seconds, on every worker and every endpoint of a fleet, the provider is
taken to be gone for good (``RetryPolicy.unreachable_after``, 60 s: longer than a
restart or a network blip) and the run stops with ``EndpointUnreachable``: retrying every
seed for minutes only turns answered-later seeds into failed ones. Inside that window a
refused connection does not use up a call's attempts (``counts_attempt``): a server that
is restarted comes back to calls that are still waiting for it.

A frozen server (it accepts connections and never answers) is the other way to be gone:
when at least ``FROZEN_AFTER`` attempts in a row have timed out, with no answer of any
kind in between, and nothing has been answered for ``window`` seconds, the run stops the
same way. One timeout says nothing (a slow or overloaded server is still there, and an
answer from any worker restarts the count); dropped connections say nothing either.

A run that never reached the endpoint at all stops sooner: when its first call has used up
its attempts (a wrong --base-url, no network).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CallTimeout, ConnectFailed, EndpointUnreachable, RetryableError

__all__ = ["FROZEN_AFTER", "Reachability"]

# timeouts in a row (no answer between them) before a silent server can be called frozen:
# with fewer, one slow answer at -j 1 could stop a run
FROZEN_AFTER = 3


class Reachability:
    """What the attempts of a run say about its endpoint (see the module docstring)."""

    def __init__(self, where: str, *, window: float, clock: Callable[[], float]) -> None:
        self.where = where  # for the message: the URL (or the fleet's URLs)
        self.window = window
        self._clock = clock
        self.ever_reached = False
        self._failing_since: float | None = None  # first connect failure since an answer
        self._failures = 0  # connect failures since then
        self._last_answer: float | None = None  # when an attempt last got an HTTP answer
        self._silent_since: float | None = None  # nothing answered since (timeouts only)
        self._timeouts = 0  # attempts timed out in a row since the last answer

    def answered(self) -> None:
        """An attempt got an HTTP answer (any status)."""
        self.ever_reached = True
        self._failing_since = None
        self._failures = 0
        self._last_answer = self._clock()
        self._silent_since = None
        self._timeouts = 0

    def counts_attempt(self, error: RetryableError) -> bool:
        """Whether a failed attempt uses up one of its call's attempts: a refused connection
        to an endpoint that has answered before does not (the window decides instead)."""
        return not (isinstance(error, ConnectFailed) and self.ever_reached)

    def timed_out(self, error: CallTimeout) -> None:
        """An attempt got no answer in time (``error.waited`` seconds after it left); raises
        ``EndpointUnreachable`` once the server looks frozen (see the module docstring)."""
        now = self._clock()
        sent_at = now - error.waited
        if self._silent_since is None:
            last = self._last_answer
            self._silent_since = sent_at if last is None else max(last, sent_at)
        self._timeouts += 1
        silent_for = now - self._silent_since
        if self._timeouts >= FROZEN_AFTER and silent_for >= self.window:
            raise EndpointUnreachable(
                f"the server at {self.where} accepted connections but answered none of the "
                f"last {self._timeouts} requests ({str(error).split(' (')[0]}); nothing answered "
                f"for {silent_for:.0f} s (--unreachable-after): stopping. What was answered is "
                f"kept: run the same command again once the server answers (or with a longer "
                f"--timeout, if it is only that slow)"
            )

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
