"""The dataset card written beside Parquet / JSON-lines / CSV exports of samples.

A ``README.md`` whose YAML header is the one the Hugging Face Hub reads (``configs`` with
``data_files`` per task, ``dataset_info`` with features and splits, licences, tags), and a
body that says what the data is, how it was made (runs, model, settings, templates), the
licences of the seed datasets, and the figures a user checks first: the accuracy of judges
that never read the text (always-Yes, always-No, length only) over the exported samples,
and the recognition results stored for them. Every scalar in the header is written as a
JSON string, which YAML reads as the same string.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

import orjson

from .. import __version__
from ..errors import UsageError
from ..records import fingerprint
from ..store.db import Store
from ..tasks import get_task
from ..tasks.base import TaskSpec

__all__ = ["SEED_LICENCES", "CardFile", "card_text", "write_card"]


@dataclass(frozen=True)
class CardFile:
    path: Path
    tasks: tuple[str, ...]
    runs: tuple[str, ...]
    rows: int
    query: str  # the rows written to the file
    params: tuple[Any, ...]


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

_FIELD_NOTES = {
    "run_id": "the generation run that made the sample",
    "task": "the task: qa, dialogue, summarization or a task folder's name",
    "seed_id": "the seed's id in its dataset (else file:line)",
    "seed_key": "fingerprint of the seed record",
    "pattern": "hallucination pattern the chosen candidate says it used",
    "template": "sampling template of the chosen candidate",
    "template_hash": "hash of that template's text",
    "filter_template_hash": "hash of the filter (judge) template",
    "selected_by": "how the candidate was chosen (judge, only_valid, ...)",
    "model": "model that sampled and filtered",
    "dataset": "seed reader (hotpotqa, opendialkg, cnndm, halueval-*)",
    "source_file": "seed file's name (its sha256 is listed under How it was made)",
    "source_line": "line (or record number) in the seed file",
    "knowledge": "background knowledge (QA: supporting facts; dialogue: KG paths)",
    "question": "the question (QA)",
    "right_answer": "the dataset's answer (QA)",
    "hallucinated_answer": "the generated plausible but wrong answer (QA)",
    "dialogue_history": "the turns before the response (dialogue)",
    "right_response": "the dataset's response (dialogue)",
    "hallucinated_response": "the generated response (dialogue)",
    "document": "the article (summarization)",
    "right_summary": "the reference summary (summarization)",
    "hallucinated_summary": "the generated summary (summarization)",
    "length_ratio": "characters of the hallucinated text / of the right text",
    "truncated_tokens": "tokens cut from the document to fit the context window",
    "created_at": "when the sample was stored",
    "run_model": "model of the run",
    "calls_for_seed": "LLM calls made for the seed",
    "cost_usd_for_seed": "what those calls cost (USD)",
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


def _source_dataset(reader: str) -> str:
    """A seed reader's ``source_datasets`` entry (one the card does not know: "other-NAME")."""
    if reader in _HUB_SOURCES:
        return _HUB_SOURCES[reader]
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in reader.lower())
    return f"extended|other-{name}"


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
    with _batches(store, file) as reader:
        for batch in reader:
            for column in pa.Table.from_batches([batch]).cast(schema).columns:
                for chunk in column.chunks:
                    total += chunk.nbytes
                    validity = chunk.buffers()[0]
                    if chunk.null_count == 0 and validity is not None:
                        total -= validity.size  # as datasets holds it: no bitmap without nulls
    return total


@contextlib.contextmanager
def _batches(store: Store, file: CardFile) -> Iterator[Any]:
    """A pyarrow RecordBatchReader over the file's rows (also on a store another process
    holds: its live route answers in Arrow)."""
    if store.is_live:
        with store.conn.open_reader(file.query, list(file.params)) as reader:
            yield reader
        return
    cur = store.conn.cursor()
    try:
        yield cur.sql(file.query, params=list(file.params) or None).to_arrow_reader(10_000)
    finally:
        cur.close()


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
    cur = store.conn.execute(f"SELECT * FROM ({file.query}) LIMIT 0", list(file.params))
    return [(d[0], _dtype(str(d[1]))) for d in cur.description]


def _config_name(file: CardFile) -> str:
    return file.tasks[0] if len(file.tasks) == 1 else "default"


def _spec(task: str) -> TaskSpec | None:
    """The task's declaration, or None for a task the store does not describe."""
    try:
        return get_task(task)
    except UsageError:
        return None


def _field_note(name: str, files: Sequence[CardFile]) -> str:
    """What a column means: the card's own notes, else the task folder's ``[fields.about]``."""
    if name in _FIELD_NOTES:
        return _FIELD_NOTES[name]
    for task in dict.fromkeys(t for f in files for t in f.tasks):
        spec = _spec(task)
        if spec is not None and name in dict(spec.field_notes):
            return dict(spec.field_notes)[name]
    return ""


def _fields_table(
    files: Sequence[CardFile], features: Sequence[Sequence[tuple[str, str]]]
) -> list[str]:
    """Every config's fields, in order of first appearance; with several configs, which
    configs have each field."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for f, feats in zip(files, features, strict=True):
        for name, dtype in feats:
            seen.setdefault(name, (dtype, []))[1].append(_config_name(f))
    if len(files) <= 1:
        rows = [[n, dtype, _field_note(n, files)] for n, (dtype, _) in seen.items()]
        return _md_table(["field", "type", "meaning"], rows)
    everywhere = len(files)
    rows = [
        [n, dtype, "all" if len(c) == everywhere else ", ".join(c), _field_note(n, files)]
        for n, (dtype, c) in seen.items()
    ]
    return _md_table(["field", "type", "configs", "meaning"], rows)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _baselines(store: Store, file: CardFile) -> list[list[str]]:
    """Per task: judges that never read the text, over both sides of every sample."""
    from ..evaluate.metrics import Judged, baselines

    lines = []
    for task in file.tasks:
        spec = _spec(task)
        if spec is None:
            continue
        right, hallucinated = spec.right_field, spec.hallucinated_field
        judged: list[Judged] = []
        for r, h in store.conn.execute(
            f"SELECT {right}, {hallucinated} FROM ({file.query}) WHERE task = ?",
            [*file.params, task],
        ).fetchall():
            judged.append(Judged(False, "invalid", len(r or "")))
            judged.append(Judged(True, "invalid", len(h or "")))
        if not judged:
            continue
        b = baselines(judged)
        lines.append(
            [
                task,
                f"{len(judged):,}",
                _pct(b["always_yes"]),
                _pct(b["always_no"]),
                _pct(b["length_only"]),
            ]
        )
    return lines


def _recognition(store: Store, file: CardFile) -> list[list[str]]:
    """Recognition results stored for these samples: eval runs that judged them."""
    from ..evaluate.metrics import Judged, compute

    lines = []
    for task in file.tasks:
        spec = _spec(task)
        if spec is None:
            continue
        fields = spec.record_fields  # what `halugen eval` fingerprints into an item key
        keys = set()
        for row in store.conn.execute(
            f"SELECT {', '.join(fields)} FROM ({file.query}) WHERE task = ?",
            [*file.params, task],
        ).fetchall():
            keys.add(fingerprint({"task": task, "fields": dict(zip(fields, row, strict=True))}))
        if not keys:
            continue
        groups: dict[tuple[str, str, str], list[Judged]] = {}
        for run_id, model, strategy, item_key, truth, verdict in store.conn.execute(
            "SELECT run_id, model, strategy, item_key, truth, verdict FROM judgements "
            "WHERE task = ? QUALIFY row_number() OVER (PARTITION BY run_id, item_key, shown "
            "ORDER BY created_at DESC) = 1 ORDER BY run_id, item_key",
            [task],
        ).fetchall():
            if item_key in keys:
                groups.setdefault((run_id, model, strategy), []).append(
                    Judged(bool(truth), verdict)
                )
        for (run_id, model, strategy), judged in sorted(groups.items()):
            m = compute(judged)
            ci = (
                f" [{_pct(m.accuracy_ci[0])}, {_pct(m.accuracy_ci[1])}]"
                if m.accuracy_ci is not None
                else ""
            )
            lines.append([task, model, strategy, run_id, f"{m.n:,}", _pct(m.accuracy) + ci])
    return lines


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(value: str) -> str:
        return " ".join(str(value).split()).replace("|", "\\|")

    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def _runs(store: Store, runs: Sequence[str]) -> list[dict[str, Any]]:
    if not runs:
        return []
    marks = ", ".join("?" for _ in runs)
    cur = store.conn.execute(
        f"SELECT run_id, model, status, halugen_version, config_json, "
        f"strftime(created_at, '%Y-%m-%d %H:%M') FROM runs WHERE run_id IN ({marks}) "
        f"ORDER BY created_at",
        list(runs),
    )
    out = []
    for run_id, model, status, version, config_json, created in cur.fetchall():
        try:
            config = orjson.loads(config_json) if config_json else {}
        except orjson.JSONDecodeError:
            config = {}
        out.append(
            {
                "run_id": run_id,
                "model": model,
                "status": status,
                "version": version,
                "created": created,
                "config": config if isinstance(config, dict) else {},
            }
        )
    return out


def _seed_stamps(store: Store, run_id: str) -> list[tuple[str, int, str]]:
    """The run's seed files as it recorded them: name, size and sha256 (never the path)."""
    rows = store.conn.execute(
        "SELECT path, size, sha256 FROM seed_files WHERE run_id = ? ORDER BY rowid", [run_id]
    ).fetchall()
    return [(PureWindowsPath(path).name, size, sha) for path, size, sha in rows]


def _datasets(store: Store, files: Sequence[CardFile]) -> list[str]:
    found: set[str] = set()
    for f in files:
        found.update(
            str(d)
            for (d,) in store.conn.execute(
                f"SELECT DISTINCT dataset FROM ({f.query}) WHERE dataset IS NOT NULL",
                list(f.params),
            ).fetchall()
        )
    return sorted(found)


def card_text(store: Store, card_path: Path, files: Sequence[CardFile], *, fmt: str) -> str:
    """The card's text (``card_path`` fixes the relative paths of the data files)."""
    datasets = _datasets(store, files)
    licences = sorted({SEED_LICENCES[d][1] for d in datasets if d in SEED_LICENCES})
    unknown = [d for d in datasets if d not in SEED_LICENCES]
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
    sources = sorted({_source_dataset(d) for d in datasets})
    if sources:
        head += ["source_datasets:", *(f"- {_q(s)}" for s in sources)]
    head.append("configs:")
    for f in files:
        rel = os.path.relpath(f.path, card_path.parent)
        head += [
            f"- config_name: {_q(_config_name(f))}",
            "  data_files:",
            "  - split: test",
            f"    path: {_q(Path(rel).as_posix())}",
        ]
    features = [_features(store, f) for f in files]
    head.append("dataset_info:")
    for f, feats in zip(files, features, strict=True):
        head += [f"- config_name: {_q(_config_name(f))}", "  features:"]
        for name, dtype in feats:
            head += [f"  - name: {_q(name)}", f"    dtype: {_q(dtype)}"]
        num_bytes = _num_bytes(store, f, feats)
        head += ["  splits:", "  - name: test", f"    num_bytes: {num_bytes}"]
        head += [f"    num_examples: {f.rows}"]
        head += [f"  download_size: {f.path.stat().st_size}", f"  dataset_size: {num_bytes}"]
    head.append("---")

    body = [
        "",
        "# halugen hallucination benchmark",
        "",
        "Pairs of a right and a hallucinated answer (QA), response (dialogue) or summary "
        "(summarization), made the way HaluEval (Li et al., EMNLP 2023) made its benchmark: "
        "an LLM samples hallucinated candidates from each seed record with one-pass and "
        "conversational instructions, and a judge that never sees the right answer keeps "
        f"the most plausible one. Exported by halugen {__version__} as {fmt}.",
        "",
        "## Files",
        "",
        *_md_table(
            ["config", "file", "rows", "runs"],
            [
                [
                    _config_name(f),
                    Path(os.path.relpath(f.path, card_path.parent)).as_posix(),
                    f"{f.rows:,}",
                    ", ".join(f.runs),
                ]
                for f in files
            ],
        ),
        "",
        "Each config has one split, `test`: HaluEval is a benchmark, not training data.",
        "",
        "## Fields",
        "",
        *_fields_table(files, features),
        "",
        "## How it was made",
        "",
    ]
    for run in _runs(store, sorted({r for f in files for r in f.runs})):
        config = run["config"]
        seeds = ", ".join(PureWindowsPath(str(s)).name for s in config.get("seeds", [])) or "—"
        sampling = config.get("sampling") or []
        judge = config.get("judge") or []
        templates = config.get("templates") or {}
        body += [
            f"- run `{run['run_id']}` ({run['created']}, status {run['status']}, halugen "
            f"{run['version'] or '?'}): model `{run['model']}`; seeds {seeds}; run seed "
            f"{config.get('run_seed', '?')}; sampling temperature "
            f"{sampling[0] if sampling else '?'}, max tokens "
            f"{sampling[1] if len(sampling) > 1 else '?'}; judge temperature "
            f"{judge[0] if judge else '?'}; long documents: "
            f"{config.get('long_documents', '?')}",
        ]
        if templates:
            body.append(
                "  - templates: " + ", ".join(f"`{k}` {v}" for k, v in sorted(templates.items()))
            )
        stamps = _seed_stamps(store, run["run_id"])
        if stamps:
            read = [f"`{n}` ({size:,} bytes, sha256 `{sha}`)" for n, size, sha in stamps]
            body.append("  - seed files: " + "; ".join(read))
    body += [
        "",
        "Candidates equal to (or containing) the right answer, unparseable ones and ones "
        "whose form gives them away (a sentence where the right answer is a short span, a "
        "summary far longer or shorter than the reference) were rejected before the judge "
        "saw them; every text is whitespace-trimmed.",
        "",
        "## Seed datasets and their licences",
        "",
    ]
    if datasets:
        body += _md_table(
            ["seed reader", "dataset", "licence", "source"],
            [
                [d, *SEED_LICENCES[d]] if d in SEED_LICENCES else [d, d, "unknown", "—"]
                for d in datasets
            ],
        )
    else:
        body.append("No seed dataset is recorded for these rows.")
    body += [
        "",
        "The licence of each seed dataset applies to the text taken from it. The "
        "hallucinated texts are model outputs: check the model provider's terms as well.",
        "",
        "## Baselines: judges that never read the text",
        "",
        "Each sample is counted twice, once per shown side (right: No, hallucinated: Yes), "
        "as a recognition experiment shows it. A length-only judge fits a length threshold "
        "on half of the items and is scored on the other half, both ways round. Near 50% "
        "means the length gives the label away no better than chance.",
        "",
    ]
    base_lines = [line for f in files for line in _baselines(store, f)]
    body += (
        _md_table(["task", "items", "always Yes", "always No", "length only"], base_lines)
        if base_lines
        else ["No QA, dialogue or summarization rows to measure."]
    )
    recognition = [line for f in files for line in _recognition(store, f)]
    if recognition:
        body += [
            "",
            "## Recognition results stored for these samples",
            "",
            "Accuracy with invalid replies counted wrong, with its Wilson 95% interval.",
            "",
            *_md_table(["task", "model", "strategy", "eval run", "items", "accuracy"], recognition),
        ]
    body += [
        "",
        "## Citation",
        "",
        "The method is HaluEval's:",
        "",
        "```bibtex",
        "@inproceedings{li2023halueval,",
        "  title = {HaluEval: A Large-Scale Hallucination Evaluation Benchmark for Large "
        "Language Models},",
        "  author = {Li, Junyi and Cheng, Xiaoxue and Zhao, Wayne Xin and Nie, Jian-Yun and "
        "Wen, Ji-Rong},",
        "  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural "
        "Language Processing},",
        "  year = {2023}",
        "}",
        "```",
    ]
    return "\n".join(head + body) + "\n"


def write_card(store: Store, path: Path, files: Sequence[CardFile], *, fmt: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(card_text(store, path, files, fmt=fmt), encoding="utf-8")
    return path
