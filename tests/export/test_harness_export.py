"""lm-evaluation-harness and Inspect AI exports: layout always; the real packages when installed.

The layout tests check the files against the documented formats (lm-eval's task YAML
fields, Inspect's Task / Sample / json_dataset). The tests marked with the package names
load and run the exported tasks with lm-eval's own TaskManager and evaluator and with
Inspect's own eval(); they are skipped when the packages are absent (they are not in the
``test`` extra; ``pip install 'halugen[harnesses]'`` adds them).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys

import pytest

from halugen.cli import main
from halugen.evaluate.verdicts import parse_verdict
from halugen.export.lm_eval import VERDICT_PATTERN, flat_prompt, jinja_template
from tests.export.stores import TRICKY, two_runs_store


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "h.duckdb"
    two_runs_store(path).close()
    return path


def _yaml_load(path):
    yaml = pytest.importorskip("yaml")

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: ("!function", node.value))
    return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_lm_eval_layout(db, tmp_path):
    out = tmp_path / "lm"
    assert main(["export", "--format", "lm-eval", "--db", str(db), "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "README.md",
        "dialogue.jsonl",
        "halugen_data.py",
        "halugen_dialogue.yaml",
        "halugen_dialogue_gen.yaml",
        "halugen_dialogue_knowledge.yaml",
        "halugen_dialogue_knowledge_gen.yaml",
        "halugen_qa.yaml",
        "halugen_qa_gen.yaml",
        "halugen_qa_knowledge.yaml",
        "halugen_qa_knowledge_gen.yaml",
        "qa.jsonl",
    ]
    rows = _rows(out / "qa.jsonl")
    assert len(rows) == 8  # one item per shown answer of the 4 samples of the newest run
    assert sorted(r["label"] for r in rows) == ["No"] * 4 + ["Yes"] * 4
    assert {r["run_id"] for r in rows} == {"new"}
    right = next(r for r in rows if r["shown"] == "right")
    assert right["label"] == "No" and right["answer"] == "Serin0" and TRICKY in right["question"]

    mc = _yaml_load(out / "halugen_qa.yaml")
    assert mc["task"] == "halugen_qa" and mc["tag"] == ["halugen"]
    assert mc["custom_dataset"] == ("!function", "halugen_data.load")
    assert mc["dataset_path"] == "json"
    assert mc["dataset_kwargs"] == {"data_files": {"test": "qa.jsonl"}}
    assert mc["test_split"] == "test"
    assert mc["output_type"] == "multiple_choice"
    assert mc["doc_to_choice"] == ["No", "Yes"] and mc["doc_to_target"] == "label"
    assert [m["metric"] for m in mc["metric_list"]] == ["acc"]
    gen = _yaml_load(out / "halugen_qa_gen.yaml")
    assert gen["output_type"] == "generate_until" and gen["tag"] == ["halugen_gen"]
    assert gen["filter_list"][0]["filter"][0]["regex_pattern"] == VERDICT_PATTERN
    assert [m["metric"] for m in gen["metric_list"]] == ["exact_match"]
    knowledge = _yaml_load(out / "halugen_qa_knowledge.yaml")
    assert "{{ knowledge }}" in knowledge["doc_to_text"]

    jinja2 = pytest.importorskip("jinja2")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    text = env.from_string(mc["doc_to_text"]).render(**right)
    assert text.endswith("Answer: Serin0\n\nReply format:\nVerdict: <Yes or No>\n\nVerdict:")
    assert TRICKY in text and "Sistine Chapel" in text  # the record and the demonstrations


def test_jinja_template_keeps_other_braces_literal():
    jinja2 = pytest.importorskip("jinja2")
    template = jinja_template("Use {% and {# as is; {{question}} is the field; }} too")
    assert jinja2.Template(template).render(question="Q?") == (
        "Use {% and {# as is; Q? is the field; }} too"
    )
    assert flat_prompt([("system", "S"), ("user", "U1"), ("assistant", "A1"), ("user", "U2")]) == (
        "S\n\nU1\nA1\n\nU2\n\nVerdict:"
    )


@pytest.mark.parametrize(
    "reply",
    [
        "Yes",
        "No.",
        " Yes",
        "Verdict: Yes",
        "**Verdict:** No",
        "Reasoning: there is no support.\nVerdict: Yes",
        "Verdict: No\nVerdict: Yes",
        "Not hallucinated",
        "None",
        "Note: yes",
        "I think yes",
        "No-one knows",
    ],
)
def test_the_harness_verdict_rule_agrees_with_halugens_parser(reply):
    # the one-regex rule is stricter: where it reads a verdict, halugen's parser reads the
    # same one; halugen's may also read what the regex cannot ("Not hallucinated" is No)
    m = re.search(VERDICT_PATTERN, reply)
    if m:
        assert m.group(1).lower() == parse_verdict(reply)
    else:
        assert parse_verdict(reply) in ("invalid", "yes", "no")


def test_inspect_layout(db, tmp_path):
    out = tmp_path / "ins"
    assert (
        main(["export", "--format", "inspect", "--task", "qa", "--db", str(db), "--out", f"{out}/"])
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == ["halugen_tasks.py", "qa.jsonl"]
    source = (out / "halugen_tasks.py").read_text(encoding="utf-8")
    compile(source, "halugen_tasks.py", "exec")  # valid Python
    assert "def halugen_qa():" in source and "def halugen_qa_knowledge():" in source
    assert "json_dataset(" in source and "Sample(" in source and "@task" in source


def test_general_items_from_annotations(tmp_path):
    from halugen.store.db import open_store
    from tests.export.stores import insert

    path = tmp_path / "g.duckdb"
    store = open_store(path)
    for n, label in enumerate(("yes", "no")):
        item = f"g{n}"
        insert(
            store,
            "annotation_items",
            {"item_id": item, "source": "jsonl", "query": "Q?", "response": f"R{n} {TRICKY}"},
        )
        for annotator in "abc":
            insert(
                store,
                "annotations",
                {
                    "item_id": item,
                    "annotator": annotator,
                    "label": label,
                    "spans_json": "[]",
                    "source": "web",
                },
            )
    # g2 has one label of three: left out unless --allow-partial
    insert(
        store,
        "annotation_items",
        {"item_id": "g2", "source": "jsonl", "query": "Q?", "response": "R2"},
    )
    insert(
        store,
        "annotations",
        {"item_id": "g2", "annotator": "a", "label": "yes", "spans_json": "[]", "source": "web"},
    )
    store.close()
    out = tmp_path / "lm"
    assert main(["export", "--format", "lm-eval", "--db", str(path), "--out", str(out)]) == 0
    rows = _rows(out / "general.jsonl")
    assert [(r["label"], r["response"]) for r in rows] == [
        ("Yes", f"R0 {TRICKY}"),
        ("No", f"R1 {TRICKY}"),
    ]
    assert "n_labels" not in rows[0]
    partial = tmp_path / "lm-partial"
    args = ["export", "--format", "lm-eval", "--db", str(path), "--out", str(partial)]
    assert main([*args, "--allow-partial"]) == 0
    rows = _rows(partial / "general.jsonl")
    assert [(r["seed_id"], r["label"], r["n_labels"]) for r in rows] == [
        ("g0", "Yes", 3),
        ("g1", "No", 3),
        ("g2", "Yes", 1),
    ]
    assert (out / "halugen_general.yaml").exists()
    assert not (out / "halugen_general_knowledge.yaml").exists()


# -- with the real packages -----------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("lm_eval") is None, reason="lm-eval not installed")
def test_lm_eval_runs_the_exported_tasks(db, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    out = tmp_path / "lm"
    assert main(["export", "--format", "lm-eval", "--db", str(db), "--out", str(out)]) == 0
    monkeypatch.chdir(tmp_path.parent)  # the loader finds its data from anywhere

    class Oracle(LM):
        """Knows every label: answers right, so the scoring must give 100%."""

        def loglikelihood(self, requests):
            return [(0.0 if r.args[1].strip() == r.doc["label"] else -5.0, False) for r in requests]

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

        def generate_until(self, requests):
            return [f"Verdict: {r.doc['label']}" for r in requests]

    class AlwaysYes(Oracle):
        def loglikelihood(self, requests):
            return [(0.0 if r.args[1].strip() == "Yes" else -5.0, False) for r in requests]

        def generate_until(self, requests):
            return ["Yes, it does." for _ in requests]

    manager = TaskManager(include_path=str(out))
    assert {"halugen", "halugen_gen", "halugen_qa", "halugen_dialogue_knowledge_gen"} <= set(
        manager.all_tasks
    )
    tasks = ["halugen", "halugen_gen"]
    right = simple_evaluate(model=Oracle(), tasks=tasks, task_manager=manager, bootstrap_iters=0)
    yes = simple_evaluate(model=AlwaysYes(), tasks=tasks, task_manager=manager, bootstrap_iters=0)
    for name in ("halugen_qa", "halugen_dialogue"):
        assert right["results"][name]["acc,none"] == 1.0
        assert yes["results"][name]["acc,none"] == 0.5  # half the items are labelled Yes
        assert right["results"][f"{name}_gen"]["exact_match,verdict"] == 1.0
        assert yes["results"][f"{name}_gen"]["exact_match,verdict"] == 0.5
    assert right["results"]["halugen_qa"]["sample_len"] == 8


@pytest.mark.skipif(
    importlib.util.find_spec("inspect_ai") is None, reason="inspect-ai not installed"
)
def test_inspect_runs_the_exported_task(db, tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessageSystem, ModelOutput, ModelUsage, get_model

    out = tmp_path / "ins"
    assert main(["export", "--format", "inspect", "--db", str(db), "--out", str(out)]) == 0
    spec = importlib.util.spec_from_file_location("halugen_tasks_export", out / "halugen_tasks.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "halugen_tasks_export", module)
    spec.loader.exec_module(module)
    task = module.halugen_qa()
    samples = list(task.dataset)
    assert len(samples) == 8 and sorted(s.target for s in samples) == ["No"] * 4 + ["Yes"] * 4
    first = samples[0]
    assert isinstance(first.input[0], ChatMessageSystem) and first.input[-1].role == "user"
    assert "Answer: Serin0" in first.input[-1].text and TRICKY in first.input[-1].text
    assert first.metadata["shown"] == "right"

    replies = ["Verdict: Yes", "**Verdict:** No", "Not sure", "Yes"] * 2
    outputs = []
    for reply in replies:
        output = ModelOutput.from_content("mockllm/model", reply)
        # with usage given, mockllm counts no tokens (tiktoken would download its files)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        outputs.append(output)
    model = get_model("mockllm/model", custom_outputs=outputs)
    (log,) = inspect_eval(
        task, model=model, log_dir=str(tmp_path / "logs"), display="none", max_samples=1
    )
    assert log.status == "success", log.error
    scores = {s.id: s.scores["pattern"].value for s in log.samples}
    expected = {}
    for sample, reply in zip(samples, replies, strict=True):
        verdict = parse_verdict(reply)
        expected[sample.id] = "C" if verdict == sample.target.lower() else "I"
    assert scores == expected


@pytest.mark.skipif(importlib.util.find_spec("datasets") is None, reason="datasets not installed")
@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_datasets_loads_the_exported_card_without_a_warning(db, tmp_path, monkeypatch, fmt):
    import logging
    import warnings

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    out = tmp_path / "hub"
    assert main(["export", "--format", fmt, "--db", str(db), "--out", f"{out}/"]) == 0
    heard: list[str] = []

    class Ear(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                heard.append(record.getMessage())

    ear = Ear()
    logger = logging.getLogger("datasets")  # its own handler, not propagated: listen to it
    logger.addHandler(ear)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # any warning fails the load
            loaded = {
                name: datasets.load_dataset(str(out), name, cache_dir=str(tmp_path / "cache"))
                for name in ("qa", "dialogue")
            }
    finally:
        logger.removeHandler(ear)
    assert heard == []
    meta = _yaml_load_text((out / "README.md").read_text(encoding="utf-8"))
    info = {c["config_name"]: c for c in meta["dataset_info"]}
    for name, dataset in loaded.items():
        split = dataset["test"]
        (declared,) = info[name]["splits"]
        assert split.num_rows == declared["num_examples"]
        # num_bytes is what datasets itself holds in memory for the split
        assert split.data.nbytes == declared["num_bytes"]
        assert split.info.splits["test"].num_bytes == declared["num_bytes"]


def _yaml_load_text(text: str) -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(text.split("---\n", 2)[1])
