"""The re-ask after a guard's rejection: one follow-up line per guard, read from prompts/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from halugen.errors import ConfigError
from halugen.stages.follow_ups import load_follow_ups
from halugen.tokens import get_counter
from tests.python_source import parse_file

TASKS = Path(__file__).resolve().parents[2] / "halugen" / "tasks"


def _guard_problem_codes() -> set[str]:
    """Every problem code a guard of ``halugen/tasks`` can return: the ``problem`` field of
    a guard class, and each string a guard's ``__call__`` (or the equality check) returns."""
    codes: set[str] = set()
    for path in TASKS.glob("*.py"):
        tree = parse_file(path)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == "problem"
                and isinstance(node.value, ast.Constant)
            ):
                codes.add(node.value.value)
            if isinstance(node, ast.FunctionDef) and node.name in ("__call__", "check"):
                for ret in ast.walk(node):
                    if (
                        isinstance(ret, ast.Return)
                        and isinstance(ret.value, ast.Constant)
                        and isinstance(ret.value.value, str)
                        and ret.value.value
                    ):
                        codes.add(ret.value.value)
    return codes - {""}


def test_every_guard_has_its_own_follow_up_line() -> None:
    codes = _guard_problem_codes()
    assert {"equals_right_answer", "contains_right_answer", "casing"} <= codes
    missing = codes - load_follow_ups().lines.keys()
    assert not missing, f"add a line for these to prompts/follow_ups.toml: {sorted(missing)}"


def test_the_follow_up_names_the_guard_and_an_unknown_code_gets_the_fallback() -> None:
    f = load_follow_ups()
    assert f.text("equals_right_answer").startswith("That answer is the correct one.")
    assert f.text("no_such_guard") == f"{f.fallback} {f.closing}"
    reply, follow_up = f.messages("Pattern: x\nAnswer: 1865", "equals_right_answer")
    assert reply == {"role": "assistant", "content": "Pattern: x\nAnswer: 1865"}
    assert follow_up["role"] == "user" and follow_up["content"].endswith(f.closing)


def test_the_estimate_covers_both_turns() -> None:
    counter = get_counter("cl100k_base")
    f = load_follow_ups()
    text = "Pattern: factualness\nAnswer: Queen Victoria"
    est = f.estimate_tokens(text, "casing", counter)
    assert est >= counter.count(text) + counter.count(f.text("casing")) + 2


def test_a_broken_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "follow_ups.toml"
    bad.write_text("closing = 'Again.'\n[line]\ncasing = ''\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"follow_ups\.toml"):
        load_follow_ups(bad)
    bad.write_text("[line\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read"):
        load_follow_ups(bad)
