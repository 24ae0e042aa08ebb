"""How much of a benchmark can be solved without knowing anything (``halugen audit``).

``items`` reads a benchmark (HaluEval files or the store's samples), ``classifiers`` scores
cheap classifiers that never see the knowledge (length only, the answer text alone, its
word overlap), ``generation`` adds what a generated run tells (the filter's position bias,
the share per pattern), ``report`` lays the figures out and stores them, ``balance`` picks
the largest subset whose baselines stay near chance.
"""

from __future__ import annotations

from .balance import Balanced, balance, write_balanced
from .classifiers import MEASURES, Score, answer_only, examples_of, length_only, overlap
from .generation import pattern_shares, position_bias
from .items import Item, items_from_file, items_from_store
from .report import (
    AuditRow,
    audit_items,
    audit_tables,
    csv_table,
    save,
)

__all__ = [
    "MEASURES",
    "AuditRow",
    "Balanced",
    "Item",
    "Score",
    "answer_only",
    "audit_items",
    "audit_tables",
    "balance",
    "csv_table",
    "examples_of",
    "items_from_file",
    "items_from_store",
    "length_only",
    "overlap",
    "pattern_shares",
    "position_bias",
    "save",
    "write_balanced",
]
