"""Recognition experiments: can a model tell a hallucinated answer from the right one?

``judge`` builds the judge's prompt values and request parameters per task and strategy,
``readers`` reads the replies (strictly by the reply contract, or leniently with
``verdicts``), ``metrics`` scores them, ``report`` renders the paper's tables, ``items``
reads what is judged. The run itself is wired elsewhere.
"""

from __future__ import annotations

__all__: list[str] = []
