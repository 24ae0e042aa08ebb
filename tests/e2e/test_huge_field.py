"""One enormous field (50 MB without whitespace) costs only its own seed: the run never
encodes it whole on the event loop, cuts it to fit, and serves every other seed."""

from __future__ import annotations

import random
import string
from pathlib import Path

import orjson
import pytest
import tiktoken.core

from halugen.tokens import EXACT_LIMIT, get_counter
from tests.e2e.test_generate import config, query, run


def write_summaries(path: Path, huge_at: int, n: int = 6) -> Path:
    rng = random.Random(2)
    block = "".join(rng.choices(string.ascii_letters, k=1 << 16))
    with path.open("wb") as f:
        for i in range(n):
            doc = (
                (block * 800)[: 50 << 20]
                if i == huge_at
                else f"The harbour of Sollen{i} reopened on Monday after two years of repairs."
            )
            f.write(
                orjson.dumps({"document": doc, "right_summary": f"Sollen{i}'s harbour reopened."})
                + b"\n"
            )
    return path


def test_a_50_mb_field_is_cut_and_the_others_are_served(
    simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    longest = [0]
    real = tiktoken.core.Encoding.encode_ordinary

    def spy(self: tiktoken.core.Encoding, text: str) -> list[int]:
        longest[0] = max(longest[0], len(text))
        return real(self, text)

    monkeypatch.setattr(tiktoken.core.Encoding, "encode_ordinary", spy)
    get_counter.cache_clear()  # counters made from now on use the spy
    try:
        if get_counter("o200k_base")._encoding is None:
            pytest.skip("no tiktoken encoding file here")
        sim = simulator()
        seeds = write_summaries(tmp_path / "summarization_data.json", huge_at=2)
        db = tmp_path / "h.duckdb"
        outcome = run(config(sim.base_url, seeds, db, tasks=("summarization",)))
    finally:
        get_counter.cache_clear()
    assert outcome.exit_code == 0, outcome.message
    assert longest[0] <= EXACT_LIMIT  # the 50 MB field was never encoded whole
    sampled = query(db, "SELECT source_line FROM samples")
    assert sorted(r[0] for r in sampled) == [1, 2, 4, 5, 6]  # every other seed was served
    [(status, truncated, length)] = query(
        db,
        "SELECT p.outcome, s.truncated_tokens, length(s.fields_json) FROM seed_progress p "
        "JOIN seeds s USING (run_id, task, seed_key) WHERE p.source_line = 3",
    )
    # the big one was cut to fit and went through sampling (the simulator's echo of random
    # letters runs past max_tokens, a content outcome)
    assert status in ("sampled", "rejected")
    assert truncated > 1_000_000 and 10_000 < length < EXACT_LIMIT
    assert sim.stats()["by_status"].get(400, 0) == 0  # nothing sent was too long
