"""Each setting's default is written once, in its declaration: the flags declare none of their
own, and the run objects (RunConfig, EvalConfig, PreselectConfig) take theirs from it."""

from __future__ import annotations

import argparse
import ast
import inspect
import re
from pathlib import Path

import pytest

from halugen.cli import build_parser
from halugen.cli.common import run_config
from halugen.cli.flags import TAKES, resolve_settings
from halugen.config import RunConfig
from halugen.evaluate.config import EvalConfig
from halugen.options.table import SETTINGS, setting
from halugen.preselect.run import PreselectConfig
from halugen.settings.build import assemble, fills
from halugen.settings.resolve import resolve
from tests.python_source import parse_source

RUN_OBJECTS = (RunConfig, EvalConfig, PreselectConfig)
ENV = ("HALUGEN_DB", "OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory without halugen.toml and an environment without halugen's variables."""
    monkeypatch.chdir(tmp_path)
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    found = []

    def walk(p: argparse.ArgumentParser, prefix: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found.append((f"{prefix} {name}".strip(), child))
                    walk(child, f"{prefix} {name}")

    walk(build_parser(), "")
    return found


# flags named as a setting that mean something else in their command
OWN_MEANING = {
    ("compare", "seed"),  # the paired bootstrap's seed, not a run's
    ("demo", "db"),  # the demo's own store, replaced at each demo
    # the simulated provider's own prices and seed, not a run's
    ("simulate", "price_in"),
    ("simulate", "price_out"),
    ("simulate", "seed"),
}


def test_a_settings_flag_has_no_default_of_its_own():
    """The parser leaves every setting's flag at None: the value comes from resolving. A flag
    named as a setting is made from it (in the command's list of settings it takes)."""
    names = {s.name for s in SETTINGS}
    checked = 0
    for command, parser in _commands():
        taken = parser.get_default(TAKES) or ()
        for action in parser._actions:
            if action.dest not in names or not action.option_strings:
                continue
            if action.default is None and action.dest in taken:
                checked += 1
                continue
            if (command, action.dest) in OWN_MEANING or action.default is None:
                continue
            pytest.fail(f"{command} {action.option_strings}: default {action.default!r}")
    assert checked > 100


def test_every_command_resolves_to_the_declared_defaults(here: Path):
    for command, parser in _commands():
        taken = parser.get_default(TAKES) or ()
        resolved = resolve(taken, {})
        for name in taken:
            assert resolved[name] == setting(name).default, f"{command}: {name}"
            assert resolved.origin[name] == "default"


def test_the_run_objects_defaults_are_the_settings(here: Path):
    resolved = resolve([], {})
    assert assemble(RunConfig, resolved) == RunConfig()
    run = RunConfig()
    assert assemble(EvalConfig, resolved, run=run, task="qa") == EvalConfig(run=run, task="qa")
    assert assemble(PreselectConfig, resolved, run=run, queries=("q",)) == PreselectConfig(
        run=run, queries=("q",)
    )


@pytest.mark.parametrize("cls", [EvalConfig, PreselectConfig], ids=lambda c: c.__name__)
def test_eval_and_preselect_write_no_default_of_their_own(cls: type):
    """A field a setting fills takes its default from the setting (``default("<name>")``),
    never a literal of its own."""
    filled = {path.split(".", 1)[0] for _, path in fills(cls)}
    tree = parse_source(inspect.getsource(cls))
    fields = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    ]
    checked = 0
    for node in fields:
        assert isinstance(node.target, ast.Name)
        name, value = node.target.id, node.value
        if name not in filled or value is None:
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id == "default":
                checked += 1
                continue
            if value.args or value.keywords:  # ScorerSpec(): its parts are settings' too
                pytest.fail(f"{cls.__name__}.{name}: built with arguments of its own")
            continue
        pytest.fail(f"{cls.__name__}.{name} = {ast.unparse(value)}: a default of its own")
    assert checked >= 5


def test_the_label_rule_takes_its_defaults_from_the_settings():
    from halugen.annotate.resolve import LabelRule

    source = inspect.getsource(LabelRule)
    for name in ("per_item", "allow_partial"):
        assert re.search(rf'{name}: \w+ = default\("{name}"\)', source), name
    assert LabelRule() == LabelRule(per_item=setting("per_item").default)


def test_the_topic_analysis_takes_its_defaults_from_the_settings():
    from halugen.analysis.topics import analyse

    parameters = inspect.signature(analyse).parameters
    for parameter, name in (
        ("n_topics_all", "topics"),
        ("n_topics_failures", "failure_topics"),
        ("backend", "backend"),
    ):
        assert parameters[parameter].default == setting(name).default, parameter
    source = inspect.getsource(analyse)
    for parameter in ("n_topics_all", "n_topics_failures", "backend"):
        assert re.search(rf'{parameter}: \w+ = default\("', source), parameter


def test_every_setting_fills_a_field_that_exists():
    filled = {s.name for cls in RUN_OBJECTS for s, _ in fills(cls)}
    for s in SETTINGS:
        if s.to:
            assert s.name in filled, f"{s.name}: no run object has a field {s.to}"
    for cls in RUN_OBJECTS:
        targets = [path for _, path in fills(cls)]
        assert len(targets) == len(set(targets)), f"{cls.__name__}: a field filled twice"


def test_eval_flags_make_the_eval_config(here: Path):
    argv = ["eval", "-t", "qa", "--strategy", "cot", "--scoring", "logprobs", "--read"]
    argv += ["lenient", "--gen-run", "r1", "--data", "a.json", "b.json", "-n", "7"]
    argv += ["--structured", "off", "--base-url", "http://127.0.0.1:1/v1"]
    args = build_parser().parse_args(argv)
    cfg = run_config(args)
    ecfg = assemble(EvalConfig, resolve_settings(args), run=cfg, task="qa")
    assert (ecfg.strategy, ecfg.scoring, ecfg.read, ecfg.gen_run) == (
        "cot",
        "logprobs",
        "lenient",
        "r1",
    )
    assert (ecfg.data, ecfg.limit, ecfg.structured) == (("a.json", "b.json"), 7, "off")


def test_preselect_flags_make_the_preselect_config(here: Path):
    argv = ["preselect", "--queries", "q.json", "--responses", "4", "--keep", "9"]
    argv += ["--use-n", "never", "--query-format", "csv", "--bertscore-model", "m"]
    argv += ["--bertscore-layers", "5", "--bertscore-batch", "8", "--device", "cpu"]
    argv += ["--base-url", "http://127.0.0.1:1/v1"]
    args = build_parser().parse_args(argv)
    pcfg = assemble(
        PreselectConfig, resolve_settings(args), run=run_config(args), queries=("q.json",)
    )
    assert (pcfg.responses, pcfg.keep, pcfg.use_n, pcfg.query_format) == (4, 9, "never", "csv")
    scorer = pcfg.scorer
    assert (scorer.model, scorer.num_layers, scorer.batch_size, scorer.device) == ("m", 5, 8, "cpu")
