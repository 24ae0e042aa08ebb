"""How a run ends: its status, the exit code that status means, and its closing line.

One table and one builder for every kind of run (generation, recognition experiments,
pre-selection, batch mode) and for the errors that end a command (the table of exit codes
is ``errors.EXIT_CODES``, beside the errors that carry them):

    status             exit  what it means
    done                  0  everything asked for is finished
    incomplete            1  items failed on call errors; the same command retries them
    failed                1  a systemic error (auth, store, the endpoint gone) stopped the run
    input_error           2  bad usage or unreadable input
    budget_exhausted      3  nothing more fits in the budget
    interrupted         130  Ctrl-C (128 + SIGINT, as shells report it)

Nothing here prints; the command line prints the line and exits with the code.
"""

from __future__ import annotations

from .errors import EXIT_CODES

__all__ = ["closing", "closing_line", "exit_code", "with_failed_work"]


# what to do next, by status; a caller with a better instruction passes ``next_step``
_NEXT = {
    "incomplete": "Run the same command again to retry them",
    "budget_exhausted": "State is saved: run the same command with a larger --budget to continue",
    "interrupted": "State is saved: run the same command again to resume",
}


def exit_code(status: str) -> int:
    """The exit code of a run that ended with ``status`` (an unknown status is a failure)."""
    return EXIT_CODES.get(status, 1)


def with_failed_work(
    status: str, detail: str, *, failed: int, what: str, cause: str | None = None
) -> tuple[str, str]:
    """(status, detail) of a run that would end ``done`` although ``failed`` of its ``what``
    (e.g. "seed(s)") failed on call errors: it ends ``incomplete``, never done with exit 0.
    ``cause``: the most common reason, for the line."""
    if status != "done" or failed <= 0:
        return status, detail
    return "incomplete", f"{failed} {what} failed on call errors" + (
        f"; most common cause: {cause}" if cause else ""
    )


def closing_line(
    status: str,
    *,
    what: str,
    summary: str = "",
    detail: str = "",
    budget: str = "",
    next_step: str | None = None,
) -> str:
    """The one line that ends a run: what ended, how, its figures, and what to do next.

    ``what`` names the run ("run r-12", "eval run r-3 (qa/plain with m)"), ``summary`` its
    figures, ``detail`` the cause (an error, what Ctrl-C left behind), ``budget`` the budget
    as text for the budget_exhausted line.
    """
    head = {
        "done": f"{what} done",
        "incomplete": f"{what} incomplete",
        "budget_exhausted": f"{what} stopped: the budget{f' of {budget}' if budget else ''} "
        f"is used up",
        "interrupted": f"{what} interrupted",
        "input_error": f"{what} stopped",
    }.get(status, f"{what} failed")
    if status == "done":
        line = f"{head}: {summary}" if summary else head
    else:
        line = f"{head}: {detail}" if detail else head
        if summary:
            line += f" ({summary})"
    step = _NEXT.get(status, "") if next_step is None else next_step
    return f"{line}. {step}" if step else line


def closing(status: str, **parts: str) -> tuple[str, int]:
    """The closing line (``parts`` as for ``closing_line``) and the exit code of a run that
    ended with ``status``."""
    return closing_line(status, **parts), exit_code(status)
