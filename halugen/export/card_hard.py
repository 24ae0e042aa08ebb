"""The dataset card's section on the hard split: per config, the subset ``audit --balance``
recorded (n, its share of the full set, and what a 95% interval over n items can and cannot
show), or that there is none. The full set is the ``test`` split either way."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..intervals import size_line
from ..store.db import Store
from ..store.hard_splits import hard_split_of
from .card_header import CardFile, config_name

__all__ = ["hard_split_section", "splits_sentence"]


def splits_sentence(files: Sequence[CardFile]) -> str:
    """What splits the configs have, for the card's Files section."""
    if not any(f.hard is not None for f in files):
        return (
            "Each config has one split, `test`: HaluEval is a benchmark, not training data. "
            "No hard split: no `halugen audit --balance` is recorded for these samples."
        )
    return (
        "Each config's `test` split is the full set (the default; HaluEval is a benchmark, "
        "not training data); a config with a `hard` split also has the subset "
        "`halugen audit --balance` kept, beside it (see The hard split)."
    )


def hard_split_section(store: Store, card_path: Path, files: Sequence[CardFile]) -> list[str]:
    """``## The hard split``: one line per config."""
    lines = ["## The hard split", ""]
    for f in files:
        name = f"`{config_name(f)}`"
        if f.hard is None:
            lines.append(
                f"- {name}: no hard split (no `halugen audit --balance` is recorded for "
                "its runs' samples); `test` is the whole set."
            )
            continue
        hard = f.hard
        rel = Path(os.path.relpath(hard.path, card_path.parent)).as_posix()
        recorded = [s for t in f.tasks if (s := hard_split_of(store, f.runs, t)) is not None]
        audits = ", ".join(dict.fromkeys(a for s in recorded for a in s.audits)) or "?"
        verdict = (
            "every audited figure within the tolerance of chance"
            if recorded and all(s.balanced for s in recorded)
            else "NOT balanced on every audited figure: see audit_results"
        )
        share = f" ({hard.rows / f.rows:.0%})" if f.rows else ""
        lines.append(
            f"- {name}: split `hard` (`{rel}`), {hard.rows:,} of {f.rows:,} samples{share} "
            f"kept by `halugen audit --balance` (audit {audits}; {verdict}). "
            f"{size_line(hard.rows)}."
        )
    lines += [
        "",
        "The hard split is the largest subset `audit --balance` found in which cheap "
        "classifiers that never read the knowledge (length, answer text, overlap) come "
        "nearest to chance (the line above says whether all came within its tolerance); it "
        "is published beside the full set, never in its place. Its interval is the 95% "
        "interval on an accuracy near 50% over its n items.",
        "",
    ]
    return lines
