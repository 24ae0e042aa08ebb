"""The re-ask a guard's rejection leads to: the rejected reply, then what was wrong with it.

A candidate a task's guard turns away is asked for again. A fresh request with a new seed
rarely helps a small model (it repeats the right answer, or writes a sentence where a span is
wanted, again), so the next ask carries the rejected reply as the model's own turn and one
user turn naming the failed guard (``prompts/follow_ups.toml``: the wording lives with the
other prompts and ships with them). The follow-up is part of the request, so its key, resume
and the budget treat it like any call: its prompt tokens are estimated with the two turns.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import ConfigError
from ..prompts import PER_MESSAGE_TOKENS
from ..resources import data_dir
from ..tokens import TokenCounter

__all__ = ["FollowUps", "load_follow_ups"]


@dataclass(frozen=True)
class FollowUps:
    """One line per guard problem code, the fallback for others, the closing sentence."""

    lines: Mapping[str, str]
    fallback: str
    closing: str

    def text(self, problem: str) -> str:
        """The user turn that follows a reply the guard ``problem`` turned away."""
        return f"{self.lines.get(problem, self.fallback)} {self.closing}"

    def messages(self, rejected: str, problem: str) -> tuple[dict[str, str], dict[str, str]]:
        """The two turns appended to the sampling request: the reply, then the follow-up."""
        return (
            {"role": "assistant", "content": rejected},
            {"role": "user", "content": self.text(problem)},
        )

    def estimate_tokens(self, rejected: str, problem: str, counter: TokenCounter) -> int:
        """Prompt tokens the two turns add (``Template.estimate_tokens``' framing)."""
        return 2 * PER_MESSAGE_TOKENS + counter.count(rejected) + counter.count(self.text(problem))


@cache
def load_follow_ups(path: Path | None = None) -> FollowUps:
    """Read ``follow_ups.toml`` (the built-in one unless ``path`` is given); read once."""
    path = path or data_dir("prompts") / "follow_ups.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        lines = data.get("line", {})
        fallback, closing = data["fallback"], data["closing"]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError) as e:
        raise ConfigError(
            f"{path}: cannot read the guards' follow-up lines ({e}); restore the file from "
            "halugen's prompts/ folder"
        ) from None
    texts = [fallback, closing, *lines.values()] if isinstance(lines, dict) else [None]
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise ConfigError(
            f"{path}: every follow-up line, `fallback` and `closing` must be non-empty text"
        )
    return FollowUps(lines=dict(lines), fallback=fallback, closing=closing)
