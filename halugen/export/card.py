"""The dataset card written beside Parquet / JSON-lines / CSV exports of samples.

A ``README.md`` whose YAML header is the one the Hugging Face Hub reads (``configs`` with
``data_files`` per task, ``dataset_info`` with features and splits, licences, tags), and a
body that says what the data is, how it was made (runs, model, settings, templates), the
licences of the seed datasets, and the figures a user checks first: the accuracy of judges
that never read the text (always-Yes, always-No, length only) over the exported samples,
and the recognition results stored for them. The header is made in card_header.py, the
figures in card_figures.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PureWindowsPath
from typing import Any

import orjson

from ..cut_note import cut_note, window_phrase
from ..store.db import Store
from ..store.export_queries import file_datasets, run_settings
from ..store.queries import cut_counts
from ..store.run_queries import seed_files
from ..tasks.catalog import TaskCatalog
from ..version import __version__
from .card_checks import label_check_section
from .card_figures import baseline_lines, recognition_lines
from .card_hard import hard_split_section, splits_sentence
from .card_header import (
    SEED_LICENCES,
    CardFile,
    card_header,
    config_name,
    md_table,
    named_table_sources,
)

__all__ = ["card_text", "write_card"]

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


def _field_note(name: str, files: Sequence[CardFile], tasks: TaskCatalog) -> str:
    """What a column means: the card's own notes, else the task folder's ``[fields.about]``."""
    if name in _FIELD_NOTES:
        return _FIELD_NOTES[name]
    for task in dict.fromkeys(t for f in files for t in f.tasks):
        spec = tasks.get(task)
        if spec is not None and name in dict(spec.field_notes):
            return dict(spec.field_notes)[name]
    return ""


def _fields_table(
    files: Sequence[CardFile], features: Sequence[Sequence[tuple[str, str]]], tasks: TaskCatalog
) -> list[str]:
    """Every config's fields, in order of first appearance; with several configs, which
    configs have each field."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for f, feats in zip(files, features, strict=True):
        for name, dtype in feats:
            seen.setdefault(name, (dtype, []))[1].append(config_name(f))
    if len(files) <= 1:
        rows = [[n, dtype, _field_note(n, files, tasks)] for n, (dtype, _) in seen.items()]
        return md_table(["field", "type", "meaning"], rows)
    everywhere = len(files)
    rows = [
        [n, dtype, "all" if len(c) == everywhere else ", ".join(c), _field_note(n, files, tasks)]
        for n, (dtype, c) in seen.items()
    ]
    return md_table(["field", "type", "configs", "meaning"], rows)


def _folder_sources(files: Sequence[CardFile], tasks: TaskCatalog) -> list[tuple[str, str]]:
    """(source name, licence) of each task folder's ``[seeds]``, for the files' tasks."""
    names = dict.fromkeys(t for f in files for t in f.tasks)
    specs = [tasks[t] for t in names if t in tasks]
    return [(s.seed_source_name, s.seed_license) for s in specs]


def _tasks_section(files: Sequence[CardFile], tasks: TaskCatalog) -> list[str]:
    """What each task is, as its task.toml says (``title``, ``description``)."""
    rows = []
    for task in dict.fromkeys(t for f in files for t in f.tasks):
        spec = tasks.get(task)
        if spec is not None and spec.description:
            rows.append([task, spec.display_name, spec.description])
    if not rows:
        return []
    return ["## Tasks", "", *md_table(["task", "title", "what an item is"], rows), ""]


def _runs(store: Store, runs: Sequence[str]) -> list[dict[str, Any]]:
    if not runs:
        return []
    out = []
    for run_id, model, status, version, config_json, created in run_settings(store, runs):
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
    rows = seed_files(store, run_id)
    return [(PureWindowsPath(path).name, size, sha) for path, size, sha in rows]


def _datasets(store: Store, files: Sequence[CardFile]) -> list[str]:
    found: set[str] = set()
    for f in files:
        found.update(str(d) for d in file_datasets(store, f.query, f.params))
    return sorted(found)


def card_text(
    store: Store, card_path: Path, files: Sequence[CardFile], *, fmt: str, tasks: TaskCatalog
) -> str:
    """The card's text (``card_path`` fixes the relative paths of the data files; ``tasks``
    declares the files' tasks)."""
    datasets = _datasets(store, files)
    runs = _runs(store, sorted({r for f in files for r in f.runs}))
    named = named_table_sources([r["config"] for r in runs], _folder_sources(files, tasks))
    head, features = card_header(store, card_path, files, datasets, named)

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
        *md_table(
            ["config", "split", "file", "rows", "runs"],
            [
                [
                    config_name(f),
                    split,
                    Path(os.path.relpath(file.path, card_path.parent)).as_posix(),
                    f"{file.rows:,}",
                    ", ".join(file.runs),
                ]
                for f in files
                for split, file in (("test", f), ("hard", f.hard))
                if file is not None
            ],
        ),
        "",
        splits_sentence(files),
        "",
        *hard_split_section(store, card_path, files),
        *_tasks_section(files, tasks),
        "## Fields",
        "",
        *_fields_table(files, features, tasks),
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
        cut, records, fitted = cut_counts(store, run["run_id"])
        if cut:
            said = cut_note(cut, records, fitted or window_phrase(None))
            body.append(f"  - long documents: {said}")
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
        body += md_table(
            ["seed reader", "dataset", "licence", "source"],
            [
                [d, *SEED_LICENCES[d]]
                if d in SEED_LICENCES
                else [d, *named[d]]
                if d in named
                else [d, d, "unknown", "—"]
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
    base_lines = [line for f in files for line in baseline_lines(store, f, tasks)]
    body += (
        md_table(["task", "items", "always Yes", "always No", "length only"], base_lines)
        if base_lines
        else ["No QA, dialogue or summarization rows to measure."]
    )
    body += ["", *label_check_section(store, sorted({r for f in files for r in f.runs}))]
    recognition = [line for f in files for line in recognition_lines(store, f, tasks)]
    if recognition:
        body += [
            "",
            "## Recognition results stored for these samples",
            "",
            "Accuracy with invalid replies counted wrong, with its Wilson 95% interval.",
            "",
            *md_table(["task", "model", "strategy", "eval run", "items", "accuracy"], recognition),
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


def write_card(
    store: Store, path: Path, files: Sequence[CardFile], *, fmt: str, tasks: TaskCatalog
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(card_text(store, path, files, fmt=fmt, tasks=tasks), encoding="utf-8")
    return path
