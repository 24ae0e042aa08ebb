"""Seeds from any table: JSONL, CSV, Parquet (file, glob, a folder of Hub shards) and a saved
HF dataset, with --map naming which column fills which seed field, nested columns included."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from halugen.errors import InputError, UsageError
from halugen.records import BadRecord, Seed
from halugen.seeds import expand_paths, formats_by_task, read_seeds
from halugen.seeds.table import parse_map

# HF hotpot_qa's shape: context is a struct of parallel lists, sentences a list of lists
MAP = {
    "question": "query",
    "right_answer": "answer.text",
    "knowledge": "context.sentences",
    "id": "qid",
}


def row(i: int, **changes: Any) -> dict[str, Any]:
    base = {
        "qid": f"q{i}",
        "query": f"Which river flows through Vallona{i}?",
        "answer": {"text": f"Serin{i}", "start": i},
        "context": {
            "title": ["Vallona", "Serin"],
            "sentences": [[f"Vallona{i} is a town.", " The Serin flows through it."], ["It ends."]],
        },
    }
    base.update(changes)
    return base


KNOWLEDGE = "Vallona{i} is a town. The Serin flows through it. It ends."


def write_shards(folder: Path, rows: list[dict[str, Any]], shards: int, split: str = "train"):
    folder.mkdir(parents=True, exist_ok=True)
    per = -(-len(rows) // shards)
    for k in range(shards):
        part = rows[k * per : (k + 1) * per]
        name = f"{split}-{k:05d}-of-{shards:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(part), folder / name)


def seeds_of(items: list[Seed | BadRecord]) -> list[Seed]:
    return [x for x in items if isinstance(x, Seed)]


def test_a_folder_of_hub_parquet_shards_with_nested_columns(tmp_path: Path) -> None:
    repo = tmp_path / "hotpot_qa"
    write_shards(repo / "data", [row(i) for i in range(7)], shards=3)
    (repo / "README.md").write_text("# a dataset card\n")
    out = list(read_seeds([str(repo)], "qa", mapping=MAP))
    assert len(out) == 7 and all(isinstance(s, Seed) for s in out)
    first = out[0]
    assert isinstance(first, Seed)
    assert dict(first.fields) == {
        "question": "Which river flows through Vallona0?",
        "right_answer": "Serin0",
        "knowledge": KNOWLEDGE.format(i=0),  # list of lists flattened, joined with spaces
    }
    assert [s.seed_id for s in seeds_of(out)] == [f"q{i}" for i in range(7)]  # the id column
    assert [Path(s.source_file).name for s in seeds_of(out)][:4] == [
        "train-00000-of-00003.parquet"
    ] * 3 + ["train-00001-of-00003.parquet"]
    assert [s.source_line for s in seeds_of(out)][:4] == [1, 2, 3, 1]
    assert {s.dataset for s in seeds_of(out)} == {"table"}


def test_a_glob_of_parquet_files_and_ids_from_file_and_row(tmp_path: Path) -> None:
    write_shards(tmp_path, [row(i) for i in range(4)], shards=2)
    mapping = {k: v for k, v in MAP.items() if k != "id"}
    out = seeds_of(list(read_seeds([str(tmp_path / "*.parquet")], "qa", mapping=mapping)))
    assert [s.seed_id for s in out] == [
        "train-00000-of-00002.parquet:1",
        "train-00000-of-00002.parquet:2",
        "train-00001-of-00002.parquet:1",
        "train-00001-of-00002.parquet:2",
    ]
    # ids and keys are the same when read again: resume and request keys depend on them
    again = seeds_of(list(read_seeds([str(tmp_path / "*.parquet")], "qa", mapping=mapping)))
    assert [(s.seed_id, s.key) for s in again] == [(s.seed_id, s.key) for s in out]


def test_jsonl_with_a_list_of_structs_and_numbers(tmp_path: Path) -> None:
    path = tmp_path / "rag.jsonl"
    lines = [
        {"q": "Who wrote it?", "passages": [{"text": "Ana wrote it."}, {"text": " In 1901. "}],
         "a": 1901},
        {"q": "Where?", "passages": [], "a": "Lisbon"},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    mapping = {"question": "q", "knowledge": "passages.text", "right_answer": "a"}
    out = list(read_seeds([str(path)], "qa", mapping=mapping))
    assert isinstance(out[0], Seed)
    assert dict(out[0].fields) == {
        "question": "Who wrote it?",
        "knowledge": "Ana wrote it. In 1901.",
        "right_answer": "1901",
    }
    assert out[1] == BadRecord(str(path), 2, "column passages.text is empty")


def test_csv_with_mapped_columns_and_a_missing_cell(tmp_path: Path) -> None:
    path = tmp_path / "support.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Ticket", "Article", "Reply"])
        w.writerow(["1", "Resets are free.\nAsk support.", "It is free."])
        w.writerow(["2", "Refunds take 5 days.", ""])
    mapping = {"document": "Article", "right_summary": "reply", "id": "ticket"}
    out = list(read_seeds([str(path)], "summarization", mapping=mapping))
    assert isinstance(out[0], Seed) and out[0].seed_id == "1"
    assert out[0].fields["document"] == "Resets are free.\nAsk support."  # as written
    assert out[1] == BadRecord(str(path), 4, "column reply is empty")  # the line it starts on


def test_columns_named_as_the_fields_need_no_mapping(tmp_path: Path) -> None:
    path = tmp_path / "qa.parquet"
    pq.write_table(
        pa.Table.from_pylist([{"knowledge": "K.", "question": "Q?", "right_answer": "A"}]), path
    )
    (seed,) = read_seeds([str(path)], "qa")
    assert isinstance(seed, Seed) and dict(seed.fields)["right_answer"] == "A"
    # a CSV of the same columns is no dataset layout: it is read as a table, for the qa task
    plain = tmp_path / "qa.csv"
    plain.write_text("knowledge,question,right_answer\nK.,Q?,A\n")
    assert formats_by_task([str(plain)]) == {"qa": [(str(plain), "table")]}


def test_missing_and_null_values_are_bad_records_with_their_reason(tmp_path: Path) -> None:
    rows = [row(0), row(1, query=None), row(2, answer={"start": 3, "text": "  "}), row(3)]
    path = tmp_path / "x.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    out = list(read_seeds([str(path)], "qa", mapping=MAP))
    assert [type(x) for x in out] == [Seed, BadRecord, BadRecord, Seed]
    assert out[1] == BadRecord(str(path), 2, "column query is empty")
    assert out[2] == BadRecord(str(path), 3, "column answer.text is empty")
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text(
        json.dumps(row(0)) + "\n" + json.dumps({**row(1), "answer": {"start": 0}}) + "\n"
    )
    out = list(read_seeds([str(jsonl)], "qa", mapping=MAP))
    assert out[1] == BadRecord(str(jsonl), 2, "missing column answer.text")


@pytest.mark.parametrize(
    ("change", "error", "says"),
    [
        ({"question": "qury"}, UsageError, "--map question=qury: {p} has no column qury "
         "(its columns are: qid, query, answer, context)"),
        ({"knowledge": "context.sentence"}, UsageError, "has no column context.sentence "
         "(context has fields: title, sentences)"),
        ({"knowledge": "context"}, UsageError, "column context holds a struct, not text: name "
         "one of its fields (context.title, context.sentences)"),
        ({"answer": "query"}, UsageError, "answer is not a seed field of task qa (its fields: "
         "knowledge, question, right_answer; and id"),
    ],
)  # fmt: skip
def test_a_column_no_record_has_fails_before_reading(
    tmp_path: Path, change: dict[str, str], error: type[Exception], says: str
) -> None:
    for name in ("t.parquet", "t.jsonl"):
        path = tmp_path / name
        if name.endswith(".parquet"):
            pq.write_table(pa.Table.from_pylist([row(0), row(1)]), path)
        else:
            path.write_text("".join(json.dumps(row(i)) + "\n" for i in range(2)))
        with pytest.raises(error) as err:
            read_seeds([str(path)], "qa", mapping={**MAP, **change})  # raises before iterating
        assert says.format(p=path) in str(err.value)
        assert "\n" not in str(err.value)


def test_an_unmapped_field_without_its_column_names_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist([row(0)]), path)
    with pytest.raises(InputError) as err:
        read_seeds([str(path)], "qa", mapping={"question": "query"})
    message = str(err.value)
    assert "has no column right_answer" in message or "has no column knowledge" in message
    assert "--map" in message and "qid, query, answer, context" in message


def _save_to_disk(folder: Path, rows: list[dict[str, Any]], shards: int) -> None:
    """The layout datasets.Dataset.save_to_disk writes: Arrow IPC stream shards named in
    state.json, the features in dataset_info.json (and the schema's metadata)."""
    folder.mkdir(parents=True)
    table = pa.Table.from_pylist(rows)
    features = {"_type": "Value"}  # enough for a reader that does not import datasets
    schema = table.schema.with_metadata(
        {"huggingface": json.dumps({"info": {"features": features}})}
    )
    per = -(-len(rows) // shards)
    names = []
    for k in range(shards):
        name = f"data-{k:05d}-of-{shards:05d}.arrow"
        names.append(name)
        part = table.slice(k * per, per).cast(schema)
        with pa.OSFile(str(folder / name), "wb") as sink, pa.ipc.new_stream(sink, schema) as w:
            for batch in part.to_batches(max_chunksize=2):
                w.write_batch(batch)
    state = {
        "_data_files": [{"filename": n} for n in names],
        "_fingerprint": "0123456789abcdef",
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": "train",
    }
    (folder / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True))
    (folder / "dataset_info.json").write_text(json.dumps({"features": {}, "splits": {}}))


def test_a_dataset_saved_with_save_to_disk(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    _save_to_disk(folder, [row(i) for i in range(5)], shards=2)
    assert [Path(p).name for p in expand_paths([str(folder)])] == [
        "data-00000-of-00002.arrow",
        "data-00001-of-00002.arrow",
    ]
    out = seeds_of(list(read_seeds([str(folder)], "qa", mapping=MAP)))
    assert [s.seed_id for s in out] == [f"q{i}" for i in range(5)]
    assert out[4].fields["knowledge"] == KNOWLEDGE.format(i=4)
    assert out[3].source_line == 1  # the second shard's first row


def test_a_saved_datasetdict_asks_for_a_split(tmp_path: Path) -> None:
    folder = tmp_path / "dd"
    for split in ("train", "test"):
        _save_to_disk(folder / split, [row(0)], shards=1)
    (folder / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    with pytest.raises(InputError, match=r"DatasetDict .*\(splits: train, test\): name one split"):
        read_seeds([str(folder)], "qa", mapping=MAP)
    assert len(list(read_seeds([str(folder / "test")], "qa", mapping=MAP))) == 1


def test_a_folder_of_several_splits_asks_for_one(tmp_path: Path) -> None:
    write_shards(tmp_path / "data", [row(0), row(1)], shards=1, split="train")
    write_shards(tmp_path / "data", [row(2)], shards=1, split="test")
    with pytest.raises(InputError, match=r"several splits \(test, train\): name one split's"):
        read_seeds([str(tmp_path)], "qa", mapping=MAP)


def test_with_datasets_itself(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list([row(i) for i in range(3)])
    ds.save_to_disk(str(tmp_path / "saved"), num_shards=2)
    out = seeds_of(list(read_seeds([str(tmp_path / "saved")], "qa", mapping=MAP)))
    assert [s.seed_id for s in out] == ["q0", "q1", "q2"]
    assert out[2].fields["knowledge"] == KNOWLEDGE.format(i=2)


def test_a_mapping_reads_a_dataset_layout_as_a_table(tmp_path: Path) -> None:
    # HaluEval's own QA lines, but the user says which column is which
    path = tmp_path / "qa.jsonl"
    path.write_bytes(orjson.dumps({"knowledge": "K.", "question": "Q?", "right_answer": "A"}))
    (seed,) = read_seeds([str(path)], "qa", mapping={"right_answer": "question"})
    assert isinstance(seed, Seed) and seed.dataset == "table"
    assert seed.fields["right_answer"] == "Q?"
    with pytest.raises(UsageError, match="seed format halueval-qa has its own fields"):
        read_seeds([str(path)], "qa", fmt="halueval-qa", mapping={"question": "q"})
    with pytest.raises(UsageError, match="run one task at a time"):
        formats_by_task([str(path)], mapping={"question": "q"})


def test_parse_map() -> None:
    assert parse_map(["question=q", " knowledge = context.sentences "]) == {
        "question": "q",
        "knowledge": "context.sentences",
    }
    for bad in ("question", "=q", "question="):
        with pytest.raises(UsageError, match="write FIELD=COLUMN"):
            parse_map([bad])
    with pytest.raises(UsageError, match="names field question twice"):
        parse_map(["question=a", "question=b"])


def test_a_damaged_parquet_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.parquet"
    pq.write_table(pa.Table.from_pylist([row(0)]), path)
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(InputError, match=r"cannot read .*cut\.parquet as Parquet"):
        read_seeds([str(path)], "qa", mapping=MAP)


def test_a_key_literally_named_with_a_dot_wins_over_the_nested_path(tmp_path: Path) -> None:
    # JSONL lets a record hold both {"answer.text": ...} and {"answer": {"text": ...}}; the
    # column the user named is the literal key, so the nested path must not shadow it
    path = tmp_path / "both.jsonl"
    record = row(0, **{"answer.text": "Literal0"})
    path.write_bytes(orjson.dumps(record) + b"\n")
    (seed,) = seeds_of(list(read_seeds([str(path)], "qa", mapping=MAP)))
    assert seed.fields["right_answer"] == "Literal0"
