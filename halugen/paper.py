"""HaluEval's published recognition accuracies for ChatGPT, printed beside measured rows
as the paper's reference."""

from __future__ import annotations

from typing import Any

__all__ = [
    "PAPER_CHATGPT",
    "PAPER_FOOTNOTE",
    "PAPER_LABEL",
    "PAPER_TABLE",
    "PAPER_TABLE8_BASELINE",
    "paper_label",
    "paper_reference",
]

# HaluEval (Li et al., EMNLP 2023; arXiv 2305.11747): ChatGPT's recognition accuracy (%),
# strategy -> task. The plain row is Table 5 (accuracy of the LLMs); the strategy rows are
# Table 8 (ChatGPT with knowledge retrieval, CoT reasoning and sample contrast), whose own
# ChatGPT row gives General 86.22 where Table 5 gives 79.44 (PAPER_FOOTNOTE).
PAPER_CHATGPT: dict[str, dict[str, float]] = {
    "plain": {"qa": 62.59, "dialogue": 72.40, "summarization": 58.53, "general": 79.44},
    "knowledge": {"qa": 76.83, "dialogue": 73.80, "general": 90.73},
    "cot": {"qa": 59.58, "dialogue": 71.39, "summarization": 61.21, "general": 86.50},
    "contrast": {"qa": 49.19, "dialogue": 68.67, "summarization": 49.46},
}
PAPER_TABLE: dict[str, str] = {
    "plain": "Table 5",
    "knowledge": "Table 8",
    "cot": "Table 8",
    "contrast": "Table 8",
}
# Table 8's own row for ChatGPT without a strategy: it differs from Table 5 on General only.
PAPER_TABLE8_BASELINE: dict[str, float] = {
    "qa": 62.59,
    "dialogue": 72.40,
    "summarization": 58.53,
    "general": 86.22,
}
PAPER_LABEL = "ChatGPT (HaluEval)"
PAPER_FOOTNOTE = (
    "HaluEval Table 8 (knowledge, CoT, contrast) gives ChatGPT without a strategy "
    f"{PAPER_TABLE8_BASELINE['general']:.2f} on General, against "
    f"{PAPER_CHATGPT['plain']['general']:.2f} in Table 5 (plain): compare Table 8's General "
    "cells with 86.22."
)


def paper_label(strategy: str) -> str:
    """The label of the paper's reference row for ``strategy``, naming its table."""
    return f"ChatGPT (HaluEval {PAPER_TABLE.get(strategy, 'Table 8')})"


def paper_reference() -> list[dict[str, Any]]:
    """Every paper figure halugen prints, as records (model, strategy, task, accuracy as a
    fraction, table), for ``report --format json``."""
    return [
        {
            "model": paper_label(strategy),
            "strategy": strategy,
            "task": task,
            "accuracy": value / 100,
            "table": PAPER_TABLE[strategy],
        }
        for strategy, tasks in PAPER_CHATGPT.items()
        for task, value in tasks.items()
    ]
