"""Small HaluEval-format benchmarks written for the audit tests, with planted artifacts.

Invented facts (towns, rivers, people); every record follows HaluEval's QA layout.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TOWNS = ["Vallona", "Brennick", "Ostra", "Marlow", "Tessin", "Kelby", "Arden", "Soll"]
RIVERS = ["Serin", "Olm", "Tamm", "Varnel", "Ebro", "Lusk", "Drava", "Inn"]
PEOPLE = ["Aldo Brun", "Ilse Varga", "Tove Marlow", "Helen Park", "Ivo Brandt", "Odile Brask"]


def record(i: int, hallucinated: str, right: str) -> dict[str, str]:
    town = TOWNS[i % len(TOWNS)] + str(i)
    return {
        "knowledge": f"The {right} flows through {town}. {PEOPLE[i % len(PEOPLE)]} was born there.",
        "question": f"Which river flows through the birthplace of {PEOPLE[i % len(PEOPLE)]} {i}?",
        "right_answer": right,
        "hallucinated_answer": hallucinated,
    }


def write(path: Path, records: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


def long_hallucinations(n: int) -> list[dict[str, str]]:
    """HaluEval's artifact: the right answer a short span, the hallucination a sentence."""
    rng = random.Random(1)
    out = []
    for i in range(n):
        right = f"{rng.choice(RIVERS)}{i}"
        wrong = f"{rng.choice(RIVERS)}{i + 1}"
        town = rng.choice(TOWNS)
        out.append(record(i, f"The river that flows there is the {wrong}, near {town}.", right))
    return out


def marked_hallucinations(n: int) -> list[dict[str, str]]:
    """Same lengths, but every hallucination uses a tell-tale word ("allegedly")."""
    rng = random.Random(2)
    out = []
    for i in range(n):
        a, b = rng.sample(RIVERS, 2)
        right = f"the {a} river {i}"
        out.append(record(i, f"allegedly {b} {i}", right))
    return out


def clean_pairs(n: int) -> list[dict[str, str]]:
    """No artifact: both texts drawn the same way, lengths and words alike."""
    rng = random.Random(3)
    out = []
    for i in range(n):
        a, b = rng.sample(RIVERS, 2)
        size_a, size_b = rng.choice(["", " river"]), rng.choice(["", " river"])
        out.append(record(i, f"the {b}{size_b} {i}", f"the {a}{size_a} {i}"))
    return out


def mixed(n: int) -> list[dict[str, str]]:
    """Half the items long-sentence hallucinations, half clean: a balanced subset exists."""
    return [*long_hallucinations(n // 2), *clean_pairs(n - n // 2)]


def shared_knowledge(n: int) -> list[dict[str, str]]:
    """No tell at all: the knowledge names both rivers (the hallucination picks the wrong
    one of the two), and both answers are drawn alike in form."""
    rng = random.Random(4)
    out = []
    for i in range(n):
        a, b = rng.sample(RIVERS, 2)
        size_a, size_b = rng.choice(["", " river"]), rng.choice(["", " river"])
        town = TOWNS[i % len(TOWNS)] + str(i)
        person = f"{PEOPLE[i % len(PEOPLE)]} {i}"
        out.append(
            {
                "knowledge": f"The {a} {i} flows through {town}, and the {b} {i} runs past it. "
                f"{person} was born in {town}.",
                "question": f"Which river flows through the birthplace of {person}?",
                "right_answer": f"the {a}{size_a} {i}",
                "hallucinated_answer": f"the {b}{size_b} {i}",
            }
        )
    return out


def balanceable(n: int) -> list[dict[str, str]]:
    """Half HaluEval-like items (a long hallucination, the right answer in the knowledge),
    half with no tell: a subset balanced on every measure, overlap included, exists."""
    return [*long_hallucinations(n // 2), *shared_knowledge(n - n // 2)]
