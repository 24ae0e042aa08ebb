"""The dataset card's label check: the flagged share the verify stage measured, with its
Wilson 95% interval per task and pattern, or that the labels were not verified."""

from __future__ import annotations

from collections.abc import Sequence

from ..label_noise import NOT_VERIFIED, SEPARATION_NOTE, SHARE_COLUMNS, share_rows
from ..store.db import Store
from ..store.label_checks import flagged_shares, verified_runs
from .card_header import md_table

__all__ = ["label_check_section"]


def label_check_section(store: Store, runs: Sequence[str]) -> list[str]:
    """The card's "Label check" section for the samples of ``runs``."""
    lines = ["## Label check", ""]
    checked = verified_runs(store, runs)
    unchecked = [r for r in runs if r not in checked]
    if not checked:
        return [
            *lines,
            f"**{NOT_VERIFIED.capitalize()}**: no judge checked whether the hallucinated texts are "
            "unsupported by their knowledge and the right texts supported (`halugen run "
            "--verify` does; docs/verify.md). How many labels are wrong is unknown.",
        ]
    lines += [
        "A judge model checked each sample against its knowledge (`halugen run --verify`): "
        "the hallucinated text must not be supported by it, the right text must be. A "
        "sample is flagged when the hallucinated text was judged supported, the right text "
        "unsupported, or the judge could not say. The flagged share estimates the labels' "
        "noise (it is a judge's reading, not ground truth); flagged samples are left out "
        "of exports unless `--include-suspect` is given.",
        "",
        *md_table(SHARE_COLUMNS, share_rows(flagged_shares(store, sorted(checked)))),
        "",
        f"{SEPARATION_NOTE}.",
    ]
    if unchecked:
        lines += [
            "",
            f"Run(s) {', '.join(f'`{r}`' for r in unchecked)}: {NOT_VERIFIED}.",
        ]
    return lines
