"""A deterministic corpus with planted themes: each theme has its own vocabulary."""

from __future__ import annotations

import random

THEMES: dict[str, tuple[str, ...]] = {
    "cooking": (
        "oven",
        "flour",
        "butter",
        "recipe",
        "simmer",
        "garlic",
        "onion",
        "pastry",
        "saucepan",
        "dough",
        "bake",
        "spice",
        "kitchen",
        "chef",
        "roast",
    ),
    "astronomy": (
        "telescope",
        "galaxy",
        "orbit",
        "planet",
        "nebula",
        "comet",
        "asteroid",
        "supernova",
        "stellar",
        "eclipse",
        "cosmic",
        "astronomer",
        "lunar",
        "meteor",
        "constellation",
    ),
    "football": (
        "goal",
        "striker",
        "midfielder",
        "referee",
        "penalty",
        "stadium",
        "league",
        "goalkeeper",
        "tackle",
        "offside",
        "coach",
        "kickoff",
        "defender",
        "championship",
        "dribble",
    ),
    "law": (
        "court",
        "judge",
        "statute",
        "plaintiff",
        "defendant",
        "verdict",
        "attorney",
        "lawsuit",
        "appeal",
        "contract",
        "jury",
        "testimony",
        "litigation",
        "counsel",
        "tribunal",
    ),
}
# words every document may share: they must not decide a topic
FILLER = ("today", "people", "often", "really", "think", "thing", "great", "week", "story", "new")


def corpus(per_theme: int = 60, seed: int = 7) -> tuple[list[str], list[str]]:
    """(documents, theme of each document), themes interleaved."""
    rng = random.Random(seed)
    documents, themes = [], []
    for i in range(per_theme):
        for name, words in THEMES.items():
            picked = [rng.choice(words) for _ in range(10)] + [rng.choice(FILLER) for _ in range(3)]
            rng.shuffle(picked)
            documents.append(f"Note {i}: " + " ".join(picked) + ".")
            themes.append(name)
    return documents, themes
