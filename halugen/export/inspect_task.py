"""``export --format inspect``: an Inspect AI task file over the same items as ``lm-eval``.

The directory gets ``<task>.jsonl`` (see ``recognition``) and ``halugen_tasks.py``, which
defines one ``@task`` per (task, strategy): ``halugen_qa``, ``halugen_qa_knowledge``, ...
Each reads its data file with ``json_dataset`` and a ``record_to_sample`` that builds the
chat messages of halugen's judge template (system message, demonstrations as turns, the
record), ``target`` the label (Yes / No); the solver is ``generate()`` at temperature 0 and
the scorer ``pattern()`` with the same verdict rule as halugen's parser: the last
``Verdict:`` answer, else a leading Yes/No as a whole word. The file needs nothing but
inspect_ai: ``inspect eval DIR/halugen_tasks.py@halugen_qa --model openai/gpt-4o-mini``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..tasks.base import TaskSpec
from ..version import __version__
from .lm_eval import VERDICT_PATTERN
from .recognition import TaskData, harness_strategies, prompt_messages

__all__ = ["TASK_FILE", "export_inspect"]

TASK_FILE = "halugen_tasks.py"

_HEADER = '''"""Inspect AI tasks over halugen's recognition items (written by halugen {version}).

Does the shown text contain hallucination? Each sample is one shown answer, response or
summary; its target is Yes (hallucinated) or No. Run one task with, for example,

    inspect eval halugen_tasks.py@{first} --model openai/gpt-4o-mini

Tasks: {names}.
"""

import re
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample, json_dataset
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
)
from inspect_ai.scorer import pattern
from inspect_ai.solver import generate

HERE = Path(__file__).resolve().parent

# the last "Verdict: <Yes|No>", else a leading Yes/No as a whole word ("Not" is not "No")
VERDICT = {verdict}

# (task, strategy) -> halugen's judge template: (role, text with {{{{field}}}} placeholders)
PROMPTS = {prompts}

_FIELD = re.compile(r"\\{{\\{{(\\w+)\\}}\\}}")
_MESSAGE = {{
    "system": ChatMessageSystem,
    "user": ChatMessageUser,
    "assistant": ChatMessageAssistant,
}}
_METADATA = ("task", "run_id", "seed_id", "item_key", "shown")


def _fill(text, record):
    return _FIELD.sub(lambda m: str(record.get(m.group(1)) or ""), text)


def _dataset(name, strategy):
    messages = PROMPTS[f"{{name}}/{{strategy}}"]

    def record_to_sample(record):
        return Sample(
            input=[_MESSAGE[role](content=_fill(text, record)) for role, text in messages],
            target=record["label"],
            id=record["id"],
            metadata={{k: record.get(k) for k in _METADATA}},
        )

    return json_dataset(str(HERE / f"{{name}}.jsonl"), record_to_sample)


def _task(name, strategy):
    return Task(
        dataset=_dataset(name, strategy),
        solver=generate(),
        scorer=pattern(VERDICT),
        config=GenerateConfig(temperature=0.0, max_tokens=16),
    )
'''

_TASK = '''

@task
def {function}():
    """{task}, {strategy} strategy."""
    return _task({task!r}, {strategy!r})
'''


def task_file(tasks: list[TaskSpec]) -> str:
    prompts: dict[str, list[list[str]]] = {}
    functions: list[tuple[str, str, str]] = []
    for spec in tasks:
        name = spec.name
        for strategy in harness_strategies(spec):
            prompts[f"{name}/{strategy}"] = [
                [role, text] for role, text in prompt_messages(spec, strategy)
            ]
            function = f"halugen_{name}" + ("" if strategy == "plain" else f"_{strategy}")
            functions.append((function, name, strategy))
    text = _HEADER.format(
        version=__version__,
        first=functions[0][0],
        names=", ".join(f for f, _, _ in functions),
        verdict=repr(VERDICT_PATTERN),
        prompts=json.dumps(prompts, indent=4, ensure_ascii=True),
    )
    for function, name, strategy in functions:
        text += _TASK.format(function=function, task=name, strategy=strategy)
    return text


def export_inspect(directory: Path, written: list[TaskData]) -> list[tuple[Path, int]]:
    """The Inspect task file beside the data ``write_task_data`` wrote; every file written."""
    path = directory / TASK_FILE
    path.write_text(task_file([d.spec for d in written]), encoding="utf-8")
    return [*((d.path, d.items) for d in written), (path, 0)]
