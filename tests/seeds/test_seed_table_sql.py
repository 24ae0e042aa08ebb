"""``--map FIELD=EXPR``: DuckDB SQL over a table's columns. HotpotQA in the Hugging Face Hub's
Parquet layout, mapped with list functions, gives byte for byte the seeds the built-in
HotpotQA reader gives for the same records in the original layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from halugen.cli import main
from halugen.errors import UsageError
from halugen.seeds import read_seeds
from halugen.seeds.table_sql import looks_like_sql
from tests.conftest import hotpot_record

# the supporting sentences, each fact once, in the order given: HaluEval's knowledge
FACTS = "list_zip(supporting_facts.title, supporting_facts.sent_id)"
KNOWLEDGE = (
    f"list_transform(list_filter({FACTS}, lambda f, i: list_position({FACTS}, f) = i), "
    "lambda f: context.sentences[list_position(context.title, f[1])][f[2] + 1])"
)
HUB_MAP = {"knowledge": KNOWLEDGE, "right_answer": "answer", "id": "id"}


def _records() -> list[dict[str, Any]]:
    records = [hotpot_record(i) for i in range(6)]
    # the corners the built-in reader handles: a fact twice, an index past the paragraph,
    # sentences with their own spaces, a title given twice (the first paragraph counts)
    records[1]["supporting_facts"].append(records[1]["supporting_facts"][0])
    records[2]["supporting_facts"].append([records[2]["context"][0][0], 7])
    records[3]["context"][1][1] = ["  The first.  ", " The second one. "]
    records[3]["supporting_facts"] = [[records[3]["context"][1][0], 1]]
    records[4]["context"].append([records[4]["context"][0][0], ["Another paragraph."]])
    return records


def _hub_table(records: list[dict[str, Any]]) -> Any:
    """The same records as the Hub's Parquet has them: ``id``, structs of parallel lists."""
    import pyarrow as pa

    rows = [
        {
            "id": r["_id"],
            "question": r["question"],
            "answer": r["answer"],
            "type": r["type"],
            "level": r["level"],
            "supporting_facts": {
                "title": [t for t, _ in r["supporting_facts"]],
                "sent_id": [i for _, i in r["supporting_facts"]],
            },
            "context": {
                "title": [t for t, _ in r["context"]],
                "sentences": [s for _, s in r["context"]],
            },
        }
        for r in records
    ]
    return pa.Table.from_pylist(rows)


@pytest.fixture
def both_layouts(tmp_path: Path) -> tuple[Path, Path]:
    import pyarrow.parquet as pq

    records = _records()
    original = tmp_path / "hotpot_dev.json"
    original.write_bytes(orjson.dumps(records))
    hub = tmp_path / "validation-00000-of-00001.parquet"
    pq.write_table(_hub_table(records), hub)
    return original, hub


def test_hub_layout_mapped_by_sql_is_the_built_in_reader_byte_for_byte(both_layouts) -> None:
    original, hub = both_layouts
    built_in = list(read_seeds([str(original)], "qa"))
    mapped = list(read_seeds([str(hub)], "qa", mapping=HUB_MAP))
    assert len(built_in) == len(mapped) == 6
    for a, b in zip(built_in, mapped, strict=True):
        assert a.fields == b.fields
        assert orjson.dumps(a.fields) == orjson.dumps(b.fields)
        assert a.seed_id == b.seed_id
    assert built_in[3].fields["knowledge"] == "The second one."
    # without SQL the same file gives every paragraph: not what HaluEval gave the model
    columns = {"knowledge": "context.sentences", "right_answer": "answer"}
    whole = next(iter(read_seeds([str(hub)], "qa", mapping=columns)))
    assert len(whole.fields["knowledge"]) > len(built_in[0].fields["knowledge"])


def test_sql_over_json_lines_and_csv(tmp_path: Path) -> None:
    lines = tmp_path / "t.jsonl"
    rows = [{"q": "Where?", "a": "Here", "facts": ["One.", "Two."]}]
    lines.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    mapping = {"question": "q", "right_answer": "upper(a)", "knowledge": "list_reverse(facts)"}
    (seed,) = read_seeds([str(lines)], "qa", mapping=mapping)
    assert seed.fields == {"knowledge": "Two. One.", "question": "Where?", "right_answer": "HERE"}
    table = tmp_path / "t.csv"
    table.write_text("Question,Answer,Fact\nWhere?,Here,It is here.\n")
    mapping = {"question": "Question", "right_answer": "Answer || '!'", "knowledge": "Fact"}
    (seed,) = read_seeds([str(table)], "qa", mapping=mapping)
    assert seed.fields["right_answer"] == "Here!" and seed.fields["knowledge"] == "It is here."


def test_a_bad_expression_names_the_map_item(both_layouts) -> None:
    _, hub = both_layouts
    with pytest.raises(UsageError, match=r"--map knowledge=list_reverse\(nope\): DuckDB"):
        read_seeds([str(hub)], "qa", mapping={"knowledge": "list_reverse(nope)"})
    assert looks_like_sql("upper(a)") and not looks_like_sql("context.sentences")


def test_run_with_an_sql_map(both_layouts, simulator, tmp_path) -> None:
    _, hub = both_layouts
    sim = simulator()
    argv = ["run", "--seeds", str(hub), "--base-url", sim.base_url, "--api-key", "k"]
    argv += ["--model", "gpt-4o-mini", "--db", str(tmp_path / "h.duckdb"), "--no-progress"]
    for field, value in HUB_MAP.items():
        argv += ["--map", f"{field}={value}"]
    assert main(argv) == 0
    out = tmp_path / "unnamed.jsonl"
    assert (
        main(["export", "--format", "jsonl", "--db", str(tmp_path / "h.duckdb"), "--out", str(out)])
        == 0
    )
    card = (tmp_path / "unnamed.jsonl.README.md").read_text(encoding="utf-8")
    assert "license: other" in card and "extended|other-table" in card
    assert "| table | table | unknown | — |" in card


def test_the_card_names_table_seeds_as_the_run_named_them(both_layouts, simulator, tmp_path):
    _, hub = both_layouts
    sim = simulator()
    db = tmp_path / "h.duckdb"
    argv = ["run", "--seeds", str(hub), "--base-url", sim.base_url, "--api-key", "k"]
    argv += ["--model", "gpt-4o-mini", "--db", str(db), "--no-progress"]
    argv += ["--source-name", "hotpotqa/hotpot_qa", "--license", "cc-by-sa-4.0"]
    for field, value in HUB_MAP.items():
        argv += ["--map", f"{field}={value}"]
    assert main(argv) == 0
    out = tmp_path / "named.jsonl"
    assert main(["export", "--format", "jsonl", "--db", str(db), "--out", str(out)]) == 0
    card = (tmp_path / "named.jsonl.README.md").read_text(encoding="utf-8")
    assert 'license:\n- "cc-by-sa-4.0"' in card or "license:\n- cc-by-sa-4.0" in card
    assert "hotpotqa/hotpot_qa" in card and "extended|other-table" not in card
    assert (
        "| table | hotpotqa/hotpot_qa | cc-by-sa-4.0 | "
        "https://huggingface.co/datasets/hotpotqa/hotpot_qa |" in card
    )
