"""``export --format lm-eval``: a task directory EleutherAI's lm-evaluation-harness runs as is.

For each task in the store (``qa``, ``dialogue``, ``summarization``; ``general`` when
annotated items have resolved labels), the directory holds

- ``<task>.jsonl``: one item per shown text with its label (see ``recognition``);
- ``halugen_<task>.yaml``: ``output_type: multiple_choice`` over ``doc_to_choice: [No,
  Yes]``, scored by comparing the log-likelihood of " No" and " Yes" after the prompt
  (metric ``acc``; no ``f1``: lm-eval bootstraps its stderr, minutes per task), for
  models that give log-likelihoods (``hf``, ``vllm``, ``local-completions``);
- ``halugen_<task>_gen.yaml``: ``output_type: generate_until``: the model writes its
  verdict, a regex filter takes the last ``Verdict:`` answer (else a leading Yes/No as a
  whole word: "Not" is not "No"), ``exact_match`` against the label; for chat APIs;
- the same two with ``_knowledge`` for qa and dialogue: the knowledge is in the prompt;
- ``halugen_data.py``: the loader the YAML files name as ``custom_dataset``. lm-eval
  resolves a relative ``dataset_kwargs.data_files`` against the working directory, not the
  YAML's; the loader resolves it against its own directory, so the directory works from
  anywhere and can be moved.

``doc_to_text`` is halugen's judge template (``prompts/<task>/judge_<strategy>.txt``) as
one text: the system message, the demonstrations as "record / Verdict" blocks, the record,
then ``Verdict:``. Tags: ``halugen`` (every multiple-choice task of the plain strategy),
``halugen_gen``, ``halugen_knowledge``, ``halugen_knowledge_gen``. Run it with
``lm_eval --include_path DIR --tasks halugen --model hf --model_args pretrained=...``.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from ..version import __version__
from .recognition import TaskData, harness_strategies, prompt_messages

__all__ = ["VERDICT_PATTERN", "export_lm_eval", "flat_prompt", "jinja_template"]

# The last "Verdict: <Yes|No>" (the greedy .* runs to the last label), else a Yes/No opening
# the reply; markdown around it is fine, and "Not", "None", "No-one" are not "No". A
# one-regex version of halugen's parser (evaluate/verdicts.py), which harnesses can run;
# it does not flag a reply that states both answers, as halugen's parser does.
VERDICT_PATTERN = "(?is)(?:.*verdict[\\s*_#`]*:|^)[\\s>*_#`'\"(\\[-]*(yes|no)(?![\\w'\u2019-])"

_FIELD = re.compile(r"\{\{(\w+)\}\}")

_LOADER = '''"""Loads halugen's exported items for lm-evaluation-harness (from halugen export).

The task YAML files name ``load`` as their ``custom_dataset``; ``data_files`` are resolved
against this file's directory, so the task directory works from any working directory.
"""

from pathlib import Path

import datasets

HERE = Path(__file__).resolve().parent


def load(data_files=None, **_metadata):
    files = {split: str(HERE / name) for split, name in (data_files or {}).items()}
    return datasets.load_dataset("json", data_files=files)
'''


def flat_prompt(messages: list[tuple[str, str]]) -> str:
    """The chat template as one completion prompt ending in ``Verdict:``.

    The system message first, then each demonstration (a user turn and the assistant's
    reply) as a block, then the record; an assistant turn that already starts with
    "Verdict:" is kept as it is.
    """
    blocks: list[str] = []
    for role, text in messages:
        text = text.strip()
        if role == "assistant" and blocks:
            blocks[-1] = f"{blocks[-1]}\n{text}"
        else:
            blocks.append(text)
    return "\n\n".join(blocks) + "\n\nVerdict:"


def jinja_template(text: str) -> str:
    """``{{field}}`` stays a Jinja expression; every other piece is kept literal."""
    out, pos = [], 0
    for m in _FIELD.finditer(text):
        out.append(_literal(text[pos : m.start()]))
        out.append("{{ " + m.group(1) + " }}")
        pos = m.end()
    out.append(_literal(text[pos:]))
    return "".join(out)


def _literal(text: str) -> str:
    if any(mark in text for mark in ("{{", "{%", "{#", "}}", "%}", "#}")):
        return "{% raw %}" + text + "{% endraw %}"
    return text


def _q(value: object) -> str:
    return orjson.dumps(value).decode()


def task_yaml(data: TaskData, strategy: str, generate: bool, runs: str) -> str:
    name = f"halugen_{data.task}" + ("" if strategy == "plain" else f"_{strategy}")
    tag = "halugen" + ("" if strategy == "plain" else f"_{strategy}")
    if generate:
        name, tag = f"{name}_gen", f"{tag}_gen"
    prompt = jinja_template(flat_prompt(prompt_messages(data.spec, strategy)))
    lines = [
        f"# {data.task} recognition ({strategy}) written by halugen {__version__}: does the "
        f"shown text contain hallucination? Yes/No.",
        f"task: {name}",
        f"tag: [{tag}]",
        "custom_dataset: !function halugen_data.load",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {_q(data.path.name)}",
        "test_split: test",
        f"doc_to_text: {_q(prompt)}",
    ]
    if generate:
        lines += [
            "output_type: generate_until",
            "doc_to_target: label",
            "generation_kwargs:",
            '  until: ["\\n\\n"]',
            "  do_sample: false",
            "  temperature: 0.0",
            "  max_gen_toks: 16",
            "filter_list:",
            "  - name: verdict",
            "    filter:",
            "      - function: regex",
            f"        regex_pattern: {_q(VERDICT_PATTERN)}",
            "        group_select: 0",
            '        fallback: "[invalid]"',
            "      - function: take_first",
            "metric_list:",
            "  - metric: exact_match",
            "    aggregation: mean",
            "    higher_is_better: true",
            "    ignore_case: true",
            "    ignore_punctuation: true",
        ]
    else:
        lines += [
            "output_type: multiple_choice",
            'doc_to_choice: ["No", "Yes"]',
            "doc_to_target: label",
            "metric_list:",
            "  - metric: acc",
            "    aggregation: mean",
            "    higher_is_better: true",
        ]
    lines += [
        "metadata:",
        "  version: 1.0",
        f"  halugen_version: {_q(__version__)}",
        f"  halugen_runs: {_q(runs)}",
    ]
    return "\n".join(lines) + "\n"


def _readme(written: list[TaskData], names: list[str]) -> str:
    lines = [
        "# halugen tasks for lm-evaluation-harness",
        "",
        f"Written by halugen {__version__}. Run every plain multiple-choice task with",
        "",
        "```bash",
        "lm_eval --include_path . --tasks halugen --model hf --model_args pretrained=MODEL",
        "lm_eval --include_path . --tasks halugen_gen --model local-chat-completions "
        "--model_args model=MODEL,base_url=URL --apply_chat_template",
        "```",
        "",
        "| data file | items | labelled Yes | runs |",
        "|---|---|---|---|",
        *(
            f"| {d.path.name} | {d.items:,} | {d.yes:,} | {', '.join(d.runs) or '—'} |"
            for d in written
        ),
        "",
        "Tasks: " + ", ".join(f"`{n}`" for n in names) + ".",
        "",
    ]
    return "\n".join(lines)


def export_lm_eval(directory: Path, written: list[TaskData]) -> list[tuple[Path, int]]:
    """lm-eval's task YAMLs, its loader and a README beside the data ``write_task_data``
    wrote; every file written."""
    files: list[tuple[Path, int]] = []
    names: list[str] = []
    (directory / "halugen_data.py").write_text(_LOADER, encoding="utf-8")
    for data in written:
        files.append((data.path, data.items))
        runs = ",".join(data.runs)
        for strategy in harness_strategies(data.spec):
            for generate in (False, True):
                text = task_yaml(data, strategy, generate, runs)
                name = text.split("\ntask: ", 1)[1].split("\n", 1)[0]
                path = directory / f"{name}.yaml"
                path.write_text(text, encoding="utf-8")
                files.append((path, 0))
                names.append(name)
    readme = directory / "README.md"
    readme.write_text(_readme(written, names), encoding="utf-8")
    files.append((readme, 0))
    return files
