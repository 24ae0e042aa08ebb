"""The dataset card's YAML header, the part the Hugging Face Hub reads: ``configs`` with
``data_files`` per task, ``dataset_info`` with features (as Hub dtypes) and split sizes,
licences, source datasets, size category. Every scalar is written as a JSON string, which
YAML reads as the same string."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..store.db import Store
from ..store.export_queries import file_batches, file_columns

__all__ = [
    "SEED_LICENCES",
    "TABLE_READER",
    "CardFile",
    "card_header",
    "config_name",
    "md_table",
    "named_table_sources",
]


@dataclass(frozen=True)
class CardFile:
    path: Path
    tasks: tuple[str, ...]
    runs: tuple[str, ...]
    rows: int
    query: str  # the rows written to the file
    params: tuple[Any, ...]
    # the hard split written beside it (``audit --balance``), its second split; None: none
    hard: CardFile | None = None


# seed reader -> (dataset, Hub licence id, where the licence is stated)
SEED_LICENCES: dict[str, tuple[str, str, str]] = {
    "hotpotqa": ("HotpotQA", "cc-by-sa-4.0", "https://hotpotqa.github.io/"),
    "opendialkg": ("OpenDialKG", "cc-by-nc-4.0", "https://github.com/facebookresearch/opendialkg"),
    "cnndm": (
        "CNN/DailyMail",
        "apache-2.0",
        "https://huggingface.co/datasets/abisee/cnn_dailymail (the articles remain the "
        "publishers')",
    ),
    "cnndm-story": (
        "CNN/DailyMail (.story files)",
        "apache-2.0",
        "https://github.com/abisee/cnn-dailymail (the articles remain the publishers')",
    ),
    "halueval-qa": ("HaluEval QA", "mit", "https://github.com/RUCAIBox/HaluEval"),
    "halueval-dialogue": ("HaluEval dialogue", "mit", "https://github.com/RUCAIBox/HaluEval"),
    "halueval-summarization": (
        "HaluEval summarization",
        "mit",
        "https://github.com/RUCAIBox/HaluEval",
    ),
    "alpaca": ("Stanford Alpaca", "cc-by-nc-4.0", "https://github.com/tatsu-lab/stanford_alpaca"),
}

# seed reader -> its ``source_datasets`` entry: a Hub id, else the Hub's "extended|other-NAME"
# for a dataset that is not on the Hub
_HUB_SOURCES = {
    "opendialkg": "extended|other-opendialkg",
    "alpaca": "tatsu-lab/alpaca",
    "hotpotqa": "hotpotqa/hotpot_qa",
    "cnndm": "abisee/cnn_dailymail",
    "cnndm-story": "abisee/cnn_dailymail",
    "halueval-qa": "pminervini/HaluEval",
    "halueval-dialogue": "pminervini/HaluEval",
    "halueval-summarization": "pminervini/HaluEval",
}

_HF_DTYPES = {
    "VARCHAR": "string",
    "BIGINT": "int64",
    "INTEGER": "int32",
    "SMALLINT": "int16",
    "TINYINT": "int8",
    "UBIGINT": "uint64",
    "UINTEGER": "uint32",
    "DOUBLE": "float64",
    "FLOAT": "float32",
    "BOOLEAN": "bool",
    "TIMESTAMP": "timestamp[us]",
    "TIMESTAMP WITH TIME ZONE": "timestamp[us, tz=UTC]",
    "DATE": "date32",
}


def _q(value: Any) -> str:
    """A YAML scalar: JSON's string (or number) syntax, which YAML reads the same."""
    return orjson.dumps(value).decode()


# Arrow's names (a live store answers in Arrow) that differ from the Hub's
_ARROW_DTYPES = {
    "large_string": "string",
    "double": "float64",
    "float": "float32",
    "halffloat": "float16",
}
_HUB_NAMES = {
    "string",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "date32",
}


def _dtype(type_name: str) -> str:
    """A DuckDB (or Arrow) type name as a Hub ``dtype``."""
    if type_name.startswith(("DECIMAL", "decimal")):
        return "float64"
    if type_name in _HF_DTYPES:
        return _HF_DTYPES[type_name]
    if type_name in _ARROW_DTYPES:
        return _ARROW_DTYPES[type_name]
    if type_name in _HUB_NAMES or type_name.startswith("timestamp["):
        return type_name
    return "string"


def _source_dataset(reader: str, named: str | None = None) -> str:
    """A seed reader's ``source_datasets`` entry (one the card does not know: "other-NAME");
    ``named``: the name the run gave its table seeds (``--source-name``), a Hub id as is."""
    if named and "/" in named:
        return named
    if reader in _HUB_SOURCES and not named:
        return _HUB_SOURCES[reader]
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in (named or reader).lower())
    return f"extended|other-{name}"


TABLE_READER = "table"


def named_table_sources(
    configs: Sequence[Mapping[str, Any]], folders: Sequence[tuple[str, str]] = ()
) -> dict[str, tuple[str, str, str]]:
    """``{"table": (dataset, licence, source)}`` from the runs' ``--source-name`` and
    ``--license``, else the task folders' ``[seeds]`` ``source_name`` and ``license``
    (``folders``: (name, licence) per task), for seeds read from a table; {} when nothing
    names them. Different licences leave the licence unknown."""
    names = sorted({str(c["source_name"]) for c in configs if c.get("source_name")})
    licences = sorted({str(c["source_license"]) for c in configs if c.get("source_license")})
    names = names or sorted({n for n, _ in folders if n})
    licences = licences or sorted({lic for _, lic in folders if lic})
    if not names and not licences:
        return {}
    licence = licences[0] if len(licences) == 1 else "unknown"
    name = " / ".join(names) or TABLE_READER
    source = f"https://huggingface.co/datasets/{name}" if "/" in name and len(names) == 1 else "—"
    return {TABLE_READER: (name, licence, source)}


def _arrow_type(dtype: str) -> Any:
    """A Hub ``dtype`` as the Arrow type ``datasets`` holds it in."""
    import pyarrow as pa

    if dtype.startswith("timestamp[") and ", tz=" in dtype:
        unit, tz = dtype[len("timestamp[") : -1].split(", tz=")
        return pa.timestamp(unit, tz=tz)
    return pa.type_for_alias(dtype)


def _num_bytes(store: Store, file: CardFile, features: Sequence[tuple[str, str]]) -> int:
    """The rows' size in memory as ``datasets`` holds them (Arrow, in the card's types): the
    split's ``num_bytes``. Read in batches, so an export of any size fits."""
    import pyarrow as pa

    schema = pa.schema([(name, _arrow_type(dtype)) for name, dtype in features])
    total = 0
    with file_batches(store, file.query, file.params) as reader:
        for batch in reader:
            for column in pa.Table.from_batches([batch]).cast(schema).columns:
                for chunk in column.chunks:
                    total += chunk.nbytes
                    validity = chunk.buffers()[0]
                    if chunk.null_count == 0 and validity is not None:
                        total -= validity.size  # as datasets holds it: no bitmap without nulls
    return total


def _size_category(n: int) -> str:
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return label
    return "10M<n<100M"


def _features(store: Store, file: CardFile) -> list[tuple[str, str]]:
    return [(name, _dtype(kind)) for name, kind in file_columns(store, file.query, file.params)]


def config_name(file: CardFile) -> str:
    return file.tasks[0] if len(file.tasks) == 1 else "default"


def card_header(
    store: Store,
    card_path: Path,
    files: Sequence[CardFile],
    datasets: Sequence[str],
    named: Mapping[str, tuple[str, str, str]] | None = None,
) -> tuple[list[str], list[list[tuple[str, str]]]]:
    """(the header's lines, each file's (column, dtype) features); ``datasets`` are the seed
    readers of the rows, ``card_path`` fixes the relative paths of the data files, ``named``
    the runs' own names and licences of table seeds (``named_table_sources``)."""
    known = {**SEED_LICENCES, **(named or {})}
    licences = sorted({known[d][1] for d in datasets if d in known and known[d][1] != "unknown"})
    unknown = [d for d in datasets if d not in known or known[d][1] == "unknown"]
    total = sum(f.rows for f in files)
    head = ["---", f"pretty_name: {_q('halugen hallucination benchmark')}"]
    head += ["language:", "- en"]
    if licences and not unknown:
        head += ["license:", *(f"- {_q(lic)}" for lic in licences)]
    else:
        head += ["license: other", f"license_name: {_q('seed-licences')}"]
        head += [f"license_link: {_q('README.md')}"]
    head += ["task_categories:", "- text-classification"]
    head += ["tags:", "- hallucination", "- halueval", "- halugen"]
    head += ["annotations_creators:", "- machine-generated"]
    head += ["size_categories:", f"- {_q(_size_category(total))}"]
    sources = sorted({_source_dataset(d, (named or {}).get(d, (None,))[0]) for d in datasets})
    if sources:
        head += ["source_datasets:", *(f"- {_q(s)}" for s in sources)]
    head.append("configs:")
    for f in files:
        rel = os.path.relpath(f.path, card_path.parent)
        head += [
            f"- config_name: {_q(config_name(f))}",
            "  data_files:",
            "  - split: test",
            f"    path: {_q(Path(rel).as_posix())}",
        ]
        if f.hard is not None:
            hard_rel = os.path.relpath(f.hard.path, card_path.parent)
            head += ["  - split: hard", f"    path: {_q(Path(hard_rel).as_posix())}"]
    features = [_features(store, f) for f in files]
    head.append("dataset_info:")
    for f, feats in zip(files, features, strict=True):
        head += [f"- config_name: {_q(config_name(f))}", "  features:"]
        for name, dtype in feats:
            head += [f"  - name: {_q(name)}", f"    dtype: {_q(dtype)}"]
        num_bytes = _num_bytes(store, f, feats)
        head += ["  splits:", "  - name: test", f"    num_bytes: {num_bytes}"]
        head += [f"    num_examples: {f.rows}"]
        download = f.path.stat().st_size
        if f.hard is not None:
            hard_bytes = _num_bytes(store, f.hard, feats)
            head += ["  - name: hard", f"    num_bytes: {hard_bytes}"]
            head += [f"    num_examples: {f.hard.rows}"]
            num_bytes += hard_bytes
            download += f.hard.path.stat().st_size
        head += [f"  download_size: {download}", f"  dataset_size: {num_bytes}"]
    head.append("---")
    return head, features


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table (cells on one line, pipes escaped)."""

    def cell(value: str) -> str:
        return " ".join(str(value).split()).replace("|", "\\|")

    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out
