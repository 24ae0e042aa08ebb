"""One table of run statuses and exit codes, one builder of closing lines."""

from __future__ import annotations

import pytest

from halugen import errors
from halugen.endings import closing, closing_line, exit_code
from halugen.errors import EXIT_CODES


def test_the_table_gives_every_status_its_code() -> None:
    assert dict(EXIT_CODES) == {
        "done": 0,
        "incomplete": 1,
        "failed": 1,
        "input_error": 2,
        "budget_exhausted": 3,
        "interrupted": 130,
    }
    assert exit_code("something new") == 1  # an unknown ending is a failure, never 0
    with pytest.raises(TypeError):
        EXIT_CODES["done"] = 5  # type: ignore[index]


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.UsageError, "input_error"),
        (errors.InputError, "input_error"),
        (errors.ConfigError, "input_error"),
        (errors.StoreError, "failed"),
        (errors.EndpointUnreachable, "failed"),
        (errors.AuthError, "failed"),
        (errors.BudgetExhausted, "budget_exhausted"),
        (errors.Interrupted, "interrupted"),
    ],
)
def test_errors_take_their_exit_codes_from_the_table(error: type, status: str) -> None:
    assert error("x").exit_code == EXIT_CODES[status]
    if issubclass(error, errors.RunStopping):
        assert error.status == status


def test_closing_lines_say_what_ended_how_and_what_to_do() -> None:
    assert closing("done", what="run r1", summary="3 sampled") == ("run r1 done: 3 sampled", 0)
    line, code = closing("budget_exhausted", what="run r1", summary="spent $1", budget="$1")
    assert code == 3
    assert line == (
        "run r1 stopped: the budget of $1 is used up (spent $1). State is saved: run the same "
        "command with a larger --budget to continue"
    )
    line = closing_line(
        "interrupted", what="eval run r2", detail="5 queued call(s) released at $0", summary="x"
    )
    assert line.startswith("eval run r2 interrupted: 5 queued call(s) released at $0 (x).")
    assert line.endswith("run the same command again to resume")
    assert closing_line("failed", what="run r3", detail="boom", summary="y") == (
        "run r3 failed: boom (y)"
    )
    assert closing_line("incomplete", what="run r4", detail="2 seed(s) failed").endswith(
        "Run the same command again to retry them"
    )
    custom = closing_line("interrupted", what="run r5", next_step="Do this")
    assert custom == "run r5 interrupted. Do this"
