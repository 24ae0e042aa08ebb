"""One exception tree for halugen; everything a user can see is a ``HalugenError``.

    HalugenError                    base; ``str(err)`` is a one-line message for the user
    ├── UsageError                  bad flag, bad value, unknown model without prices (exit 2)
    ├── InputError                  a seed file or data file that cannot be read (exit 2)
    ├── ConfigError                 halugen.toml, price cards, prompt templates (exit 2)
    ├── StoreError                  the store is in use, a write to it failed (exit 1)
    │   ├── StoreInUse              another process holds it (for what needs more than reads)
    │   └── UnusableStore           --db names no store, a damaged one, one on a read-only
    │                               disk or from a newer halugen (exit 2)
    ├── RunStopping                 a call not made because the run is stopping; its item
    │   │                           stays pending for the next run
    │   ├── BudgetExhausted         nothing more fits in the budget (exit 3)
    │   └── Interrupted             Ctrl-C released the call before it left (exit 130)
    ├── EndpointUnreachable         the endpoint cannot be reached, or no longer (exit 1)
    └── LLMError                    a call to the model endpoint failed
        ├── RetryableError          429, 408, 409, 5xx, timeouts, connection errors, bad bodies
        │   ├── RateLimited         429; carries the server's retry-after hint
        │   ├── CallTimeout         no (complete) answer within --timeout: the server is slow
        │   └── ConnectFailed       no connection could be made: nothing was sent
        └── FatalCallError          400/403/404/422, context length: not retried, per call
            ├── ContextTooLong      the request does not fit the server's context window
            └── AuthError           401: stops the whole run

Per-record failures travel downstream as values (``records.Rejected``); only systemic
failures (budget, auth, store) are raised through the pipeline. Exit codes come from the one
table of run endings (``EXIT_CODES``, here so that the errors stand on the ground floor;
``endings.py`` builds a run's closing line from it): an error's code is its status's.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "EXIT_CODES",
    "AuthError",
    "BudgetExhausted",
    "CallTimeout",
    "ConfigError",
    "ConnectFailed",
    "ContextTooLong",
    "EndpointUnreachable",
    "FatalCallError",
    "HalugenError",
    "InputError",
    "Interrupted",
    "LLMError",
    "RateLimited",
    "RetryableError",
    "RunStopping",
    "StoreError",
    "StoreInUse",
    "UnusableStore",
    "UsageError",
]


# a run's status -> the exit code it means (endings.py: how a run ends)
EXIT_CODES: Mapping[str, int] = MappingProxyType(
    {
        "done": 0,
        "incomplete": 1,
        "failed": 1,
        "input_error": 2,
        "budget_exhausted": 3,
        "interrupted": 130,
    }
)


class HalugenError(Exception):
    """Base of every error halugen raises on purpose."""

    exit_code = EXIT_CODES["failed"]


class UsageError(HalugenError):
    exit_code = EXIT_CODES["input_error"]


class InputError(HalugenError):
    exit_code = EXIT_CODES["input_error"]


class ConfigError(HalugenError):
    exit_code = EXIT_CODES["input_error"]


class StoreError(HalugenError):
    exit_code = EXIT_CODES["failed"]


class StoreInUse(StoreError):
    """Another process holds the store, and what was asked needs more than its read-only
    route (``annotate resolve`` asks a holder that offers it instead, see store/live.py)."""


class UnusableStore(StoreError):
    """The file given as the store cannot be used as it is: bad input, like a bad seed file."""

    exit_code = EXIT_CODES["input_error"]


class RunStopping(HalugenError):
    """A call was not made because the run is stopping; its item stays pending.

    Stages catch it and go on to the next item (which stops the same way), so the pipeline
    drains without sending anything more. ``status`` is the run status it leads to.
    """

    status = "failed"


class BudgetExhausted(RunStopping):
    status = "budget_exhausted"
    exit_code = EXIT_CODES["budget_exhausted"]


class Interrupted(RunStopping):
    """Ctrl-C: the call was released before its request left (nothing was billed)."""

    status = "interrupted"
    exit_code = EXIT_CODES["interrupted"]


class EndpointUnreachable(HalugenError):
    """No attempt reaches the endpoint: a wrong --base-url, no network, or a provider that
    went away and stayed away. Stops the run."""

    exit_code = EXIT_CODES["failed"]


class LLMError(HalugenError):
    """A failed call. ``status`` is the HTTP status (0 when no response arrived)."""

    def __init__(self, message: str, *, status: int = 0, billed_maybe: bool = False) -> None:
        super().__init__(message)
        self.status = status
        # True when the provider may have done (and billed) the work although we got no usable
        # answer: timeouts after sending, dropped connections, unparseable 200 bodies.
        self.billed_maybe = billed_maybe

    @property
    def error_class(self) -> str:
        return type(self).__name__


class RetryableError(LLMError):
    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        billed_maybe: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, billed_maybe=billed_maybe)
        self.retry_after = retry_after


class RateLimited(RetryableError):
    pass


class CallTimeout(RetryableError):
    """The request was sent but no complete answer came in time (a slow or queueing server).

    ``waited``: the seconds the attempt was given (its --timeout), 0 when not known."""

    def __init__(self, message: str, *, billed_maybe: bool = False, waited: float = 0.0) -> None:
        super().__init__(message, billed_maybe=billed_maybe)
        self.waited = waited


class ConnectFailed(RetryableError):
    """No connection could be made (refused, no route, DNS): the request never left."""


class FatalCallError(LLMError):
    pass


class AuthError(FatalCallError):
    pass


class ContextTooLong(FatalCallError):
    """The server's context window is smaller than the request; carries its figures."""

    def __init__(
        self, message: str, *, status: int = 400, window: int | None = None,
        needed: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message, status=status)
        self.window = window
        self.needed = needed
