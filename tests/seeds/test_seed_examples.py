"""The bundled demo seeds: 12 HotpotQA-shaped records that read without a bad record."""

from __future__ import annotations

from importlib import resources

import orjson

from halugen.records import Seed
from halugen.seeds import detect_format, read_seeds


def test_bundled_examples_read_as_twelve_seeds() -> None:
    with resources.as_file(resources.files("halugen.examples") / "qa_seeds.json") as path:
        assert detect_format(str(path)) == "hotpotqa"
        seeds = list(read_seeds([str(path)], "qa"))
        raw = orjson.loads(path.read_bytes())
    assert len(seeds) == 12
    assert all(isinstance(s, Seed) for s in seeds)
    assert len({s.seed_id for s in seeds}) == 12
    assert len({s.key for s in seeds}) == 12
    for record, seed in zip(raw, seeds, strict=True):
        assert set(record) == {
            "_id",
            "question",
            "answer",
            "supporting_facts",
            "context",
            "type",
            "level",
        }
        assert record["type"] in {"bridge", "comparison"}
        assert record["level"] in {"easy", "medium", "hard"}
        assert len(record["context"]) == 2
        assert all(2 <= len(sentences) <= 4 for _, sentences in record["context"])
        assert len(record["answer"].split()) <= 5  # short spans, as HotpotQA's
        # every supporting fact points at a sentence that exists
        paragraphs = dict(record["context"])
        for title, index in record["supporting_facts"]:
            assert 0 <= index < len(paragraphs[title])
        assert "  " not in seed.fields["knowledge"]
    answers = {s.fields["right_answer"] for s in seeds}
    assert {"yes", "no"} <= answers
