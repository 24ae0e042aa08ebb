"""Task folders: the built-in tasks are folders, a user's folder is read the same way, and
every problem with one is one line naming the file and the key (``halugen task check``,
exit 2), found before any command makes a call."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from halugen.cli import main
from halugen.errors import UsageError
from halugen.tasks import BUILTIN_DIR, BUILTIN_TASKS, TASK_NAMES, steps
from halugen.tasks.checks import LengthRatio, MetaTalk
from halugen.tasks.folder import check_folder, load_folder
from halugen.tasks.problems import TaskFolderError
from halugen.tasks.scaffold import new_folder
from halugen.tasks.stored import recall, remember
from halugen.tasks.templates import task_template
from tests.task_specs import task_spec

GLOSSARY = Path(__file__).with_name("folders") / "glossary"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


def copy_of(folder: Path, tmp_path: Path, name: str = "glossary") -> Path:
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# -- the built-in tasks are folders ---------------------------------------------------------


@pytest.mark.parametrize("task", BUILTIN_TASKS)
def test_builtin_tasks_are_folders_that_check_clean(task: str) -> None:
    spec, problems = check_folder(BUILTIN_DIR / task, builtin=True)
    assert problems == [] and spec is not None
    assert task_spec(task).folder == BUILTIN_DIR / task
    # every template the task names is in its folder and parsed from there
    assert {stem for stem, _ in spec.templates} == {
        p.stem for p in (BUILTIN_DIR / task / "prompts").glob("*.txt")
    }


@pytest.mark.parametrize("task", TASK_NAMES)
def test_each_pattern_definition_is_what_the_prompts_teach(task: str) -> None:
    """task.toml's definition of a pattern is the sentence its one-pass prompt teaches."""
    spec = task_spec(task)
    text = (BUILTIN_DIR / task / "prompts" / "sample_onepass.txt").read_text(encoding="utf-8")
    assert len(spec.definitions) == len(spec.patterns) > 0
    for pattern, definition in zip(spec.patterns, spec.definitions, strict=True):
        assert f"{pattern}: {definition}" in text, pattern
        assert spec.definition(pattern) == definition


# What HaluEval's generation instructions make each QA and summarization pattern (their
# meaning, in our words; dialogue's entity relations: test_prompts_dialogue.py).
HALUEVAL_MEANING = {
    ("qa", "comprehension"): ("misreads the question",),
    ("qa", "factualness"): ("false fact",),
    ("qa", "specificity"): ("too vague or too precise",),
    ("qa", "inference"): ("reasoning step", "does not justify"),
    ("summarization", "factual"): ("true in the world", "neither stated in the document nor"),
    ("summarization", "non-factual"): ("false", "the document does not say"),
    ("summarization", "intrinsic"): ("contradicts the document",),
}


@pytest.mark.parametrize(("task", "pattern"), list(HALUEVAL_MEANING))
def test_qa_and_summarization_definitions_mean_what_halueval_says(task, pattern) -> None:
    definition = task_spec(task).definition(pattern)
    for phrase in HALUEVAL_MEANING[task, pattern]:
        assert phrase in definition, (pattern, definition)
    assert {p for t, p in HALUEVAL_MEANING if t == task} == set(task_spec(task).patterns)


def test_a_template_the_declaration_does_not_name_is_found_in_its_folder(tmp_path: Path) -> None:
    folder = copy_of(GLOSSARY, tmp_path, "extra")
    (folder / "prompts" / "judge_extra.txt").write_text(
        "=== user\nOnce more, Yes or No.\n\nReply format:\nVerdict: <Yes or No>\n",
        encoding="utf-8",
    )
    spec = task_spec(str(folder))
    assert "judge_extra" not in dict(spec.templates)
    extra = task_template(spec, "judge_extra")
    assert extra.name == "glossary/judge_extra"
    assert extra.render({})[-1]["content"].startswith("Once more")
    with pytest.raises(Exception, match=r"judge_twice\.txt not found"):
        task_template(spec, "judge_twice")


def test_a_builtin_template_is_the_one_its_declaration_holds() -> None:
    spec = task_spec("qa")
    assert task_template(spec, "filter") is dict(spec.templates)["filter"]


def test_general_is_a_judged_only_folder() -> None:
    spec = task_spec("general")
    assert not spec.generated and spec.strategies == ("plain", "cot")
    assert spec.record_fields == ("user_query", "chatgpt_response", "hallucination")
    with pytest.raises(UsageError, match="judged only"):
        from halugen.engine import generated_tasks

        generated_tasks([spec])


# -- a user's folder ------------------------------------------------------------------------


def test_a_folder_is_read_by_path_then_known_by_name() -> None:
    from halugen.tasks.catalog import read_tasks

    (spec,), catalog = read_tasks([str(GLOSSARY)])
    assert spec.name == "glossary" and not spec.builtin
    assert catalog["glossary"] is spec
    assert spec.sample_templates == ("write_direct", "write_taught")
    assert spec.filter_template == "pick"
    assert spec.record_fields == ("term", "domain", "right_definition", "hallucinated_definition")
    assert task_template(spec, "pick").name == "glossary/pick"
    # its guards, with their settings, do what they say
    assert isinstance(spec.checks[0], LengthRatio) and spec.checks[0].max_ratio == 1.8
    assert isinstance(spec.checks[1], MetaTalk)
    right = {"right_definition": "A small knife used in surgery."}
    assert steps.check(spec, right, "A small saw used in surgery.") == ""
    assert steps.check(spec, right, "A knife " * 20) == "too_long"
    assert steps.check(spec, right, "The correct definition: a saw.") == "meta_talk"
    # the pattern named without its words, and with them
    assert spec.pattern_of("Pattern: wrong genus") == "wrong-genus"
    assert spec.pattern_of("Pattern: a different feature") == "wrong-difference"
    # task.toml's path works as well as its folder's
    assert task_spec(str(GLOSSARY / "task.toml")).name == "glossary"


@pytest.mark.parametrize("name", ["science_qa", "rag"])
def test_the_example_tasks_check_clean(name: str, capsys) -> None:
    assert main(["task", "check", str(EXAMPLES / name)]) == 0
    assert f"task {name} is ready" in capsys.readouterr().out
    spec = task_spec(str(EXAMPLES / name))
    assert (EXAMPLES / name / "seeds.jsonl").is_file()
    for pattern in spec.patterns:
        text = (EXAMPLES / name / "prompts" / "sample_onepass.txt").read_text(encoding="utf-8")
        assert f"{pattern}: {spec.definition(pattern)}" in text


def test_two_folders_of_one_name_in_one_run_are_refused(tmp_path: Path) -> None:
    from halugen.engine import generated_tasks

    other = copy_of(GLOSSARY, tmp_path)
    with pytest.raises(UsageError, match="both declare the task 'glossary'"):
        generated_tasks([task_spec(GLOSSARY), task_spec(other)])


def test_a_builtin_name_is_refused_for_a_user_folder(tmp_path: Path) -> None:
    folder = copy_of(GLOSSARY, tmp_path)
    edit(folder / "task.toml", 'name = "glossary"', 'name = "qa"')
    _, problems = check_folder(folder, reserved=BUILTIN_TASKS)
    assert [(p.file, p.key) for p in problems] == [("task.toml", "name")]


# -- every problem is one line naming the file and the key ------------------------------------

# (what to change, the file and key of the one line it gives)
BAD = {
    "missing key": (
        ("task.toml", 'right = "right_definition"\n', ""),
        "task.toml: fields.right: missing",
    ),
    "unknown key": (
        ("task.toml", 'shape = "lines"', 'shape = "lines"\nlables = ["X"]'),
        "task.toml: reply.lables: unknown key",
    ),
    "template lacks a placeholder its fields need": (
        (
            "prompts/judge_plain.txt",
            "Domain: {{domain}}\nDefinition: {{definition}}",
            "Domain: {{domain}}",
        ),
        "prompts/judge_plain.txt: {{definition}}: missing",
    ),
    "template names a placeholder no field gives": (
        ("prompts/pick.txt", "Domain: {{domain}}", "Domain: {{domain}}\nSource: {{source}}"),
        "prompts/pick.txt: {{source}}: no field gives it",
    ),
    "sampling template lacks the right text": (
        ("prompts/write_direct.txt", "Right definition: {{right_definition}}\n", ""),
        "prompts/write_direct.txt: {{right_definition}}: missing",
    ),
    "guard that does not exist": (
        ("task.toml", 'check = "meta_talk"', 'check = "meta_chat"'),
        "task.toml: guards[1].check: no guard 'meta_chat' (did you mean meta_talk?)",
    ),
    "guard setting it does not have": (
        ("task.toml", "slack = 10", "slak = 10"),
        "task.toml: guards[0] (length_ratio).slak: unknown setting",
    ),
    "guard setting of the wrong kind": (
        ("task.toml", "max_ratio = 1.8", 'max_ratio = "long"'),
        "task.toml: guards[0] (length_ratio).max_ratio: must be a number",
    ),
    "pattern without a definition": (
        ("task.toml", 'definition = "the definition keeps the right class', '# "'),
        "task.toml: patterns[1] (wrong-difference).definition: missing",
    ),
    "guard setting missing": (
        ("task.toml", "max_ratio = 1.8\n", ""),
        "task.toml: guards[0] (length_ratio).max_ratio: missing",
    ),
    "shape that does not exist": (
        ("task.toml", 'shape = "lines"', 'shape = "paragraph"'),
        "task.toml: reply.shape: no shape 'paragraph'",
    ),
    "strategy that does not exist": (
        ("task.toml", '"plain", "cot"', '"plain", "cott"'),
        "task.toml: evaluate.strategies: no strategy 'cott'",
    ),
    "field named nowhere": (
        ("task.toml", 'context = ["term", "domain"]\nwords', 'context = ["term", "area"]\nwords'),
        "task.toml: filter.context: 'area' is not in fields.seed",
    ),
    "template file missing": (
        ("prompts/judge_cot.txt", None, None),
        "prompts/judge_cot.txt: missing: the cot judge template",
    ),
    "judge template that does not ask for the verdict line": (
        ("prompts/judge_plain.txt", "Verdict: <Yes or No>", "Answer yes or no."),
        "prompts/judge_plain.txt: the plain judge template does not ask for the reply "
        'contract: end its last user message with the line "Verdict: <Yes or No>"',
    ),
    "contrast template that asks for another label": (
        (
            "prompts/judge_contrast.txt",
            "Choice: <1 or 2, the one that contains hallucination>",
            "Hallucinated: <1 or 2>",
        ),
        "prompts/judge_contrast.txt: the contrast judge template does not ask for the reply "
        'contract: end its last user message with the line "Choice: <1 or 2',
    ),
    "filter template without the choice line": (
        ("prompts/pick.txt", "Choice: <the number of the definition you pick>", "Pick: <n>"),
        "prompts/pick.txt: the filter template does not ask for the reply contract",
    ),
    "not TOML": (
        ("task.toml", 'title = "Glossary"', "title = Glossary"),
        "task.toml: not valid TOML",
    ),
}


def _break(folder: Path, file: str, old: str | None, new: str | None) -> None:
    if old is None:
        (folder / file).unlink()
    else:
        edit(folder / file, old, new or "")


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_each_bad_folder_gets_its_one_line_and_exit_2(case: str, tmp_path: Path, capsys) -> None:
    (file, old, new), expected = BAD[case]
    folder = copy_of(GLOSSARY, tmp_path)
    _break(folder, file, old, new)
    assert main(["task", "check", str(folder)]) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{folder}/{expected}"), lines[0]


def test_several_problems_are_all_listed(tmp_path: Path, capsys) -> None:
    folder = copy_of(GLOSSARY, tmp_path)
    cases = [
        "unknown key",
        "guard that does not exist",
        "pattern without a definition",
        "template names a placeholder no field gives",
    ]
    for case in cases:
        _break(folder, *BAD[case][0])
    assert main(["task", "check", str(folder)]) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert sorted(line.split(": ", 2)[:2] for line in lines) == sorted(
        [f"{folder}/{BAD[case][1].split(': ')[0]}", BAD[case][1].split(": ")[1]] for case in cases
    )


def test_a_missing_folder_and_a_folder_without_task_toml(tmp_path: Path, capsys) -> None:
    assert main(["task", "check", str(tmp_path / "nothing")]) == 2
    assert "the task folder does not exist" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["task", "check", str(tmp_path / "empty")]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"{tmp_path / 'empty'}/task.toml: missing")


def test_get_task_raises_every_line_at_once(tmp_path: Path) -> None:
    folder = copy_of(GLOSSARY, tmp_path)
    _break(folder, "task.toml", 'check = "meta_talk"', 'check = "meta_chat"')
    _break(folder, "prompts/judge_cot.txt", None, None)
    with pytest.raises(TaskFolderError) as info:
        task_spec(str(folder))
    assert info.value.exit_code == 2
    assert len(info.value.problems) == 2
    assert str(folder / "task.toml") in str(info.value)


# -- every command that takes --task PATH checks it before its first call ----------------------

_SEEDS = str(GLOSSARY / "seeds.jsonl")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--seeds", _SEEDS],
        ["estimate", "--seeds", _SEEDS],
        ["batch", "export", "--seeds", _SEEDS, "--out", "b.jsonl"],
        ["eval", "--strategy", "plain"],
        ["audit"],
        ["export", "--format", "jsonl"],
        ["topics"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_every_command_checks_the_folder_before_anything(
    argv: list[str], simulator, tmp_path: Path, capsys, monkeypatch
) -> None:
    sim = simulator()
    monkeypatch.chdir(tmp_path)
    folder = copy_of(GLOSSARY, tmp_path, "broken")
    _break(folder, "task.toml", 'check = "meta_talk"', 'check = "meta_chat"')
    endpoint = ["--base-url", sim.base_url, "--api-key", "x", "-m", "gpt-4o-mini"]
    calls = argv[0] in ("run", "estimate", "eval") or argv[:2] == ["batch", "export"]
    code = main([*argv, "--task", str(folder), *(endpoint if calls else []), "--db", "h.duckdb"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{folder}/task.toml: guards[1].check: no guard 'meta_chat'" in err
    assert sim.stats()["requests"] == 0


# -- task new ---------------------------------------------------------------------------------


@pytest.mark.parametrize("like", TASK_NAMES)
def test_task_new_writes_a_folder_that_checks_clean(like: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    assert main(["task", "new", "mine", "--like", like, "--out", str(out)]) == 0
    assert main(["task", "check", str(out)]) == 0
    assert "task mine is ready" in capsys.readouterr().out
    toml = (out / "task.toml").read_text(encoding="utf-8")
    assert 'name = "mine"' in toml and "halugen task check" in toml
    spec = load_folder(out, reserved=BUILTIN_TASKS)
    builtin = task_spec(like)
    # the same messages as the task it copies: the notes are comments, never sent
    values = dict.fromkeys(builtin.seed_fields, "x")
    for stem in builtin.sample_templates:
        assert task_template(spec, stem).render(values) == task_template(builtin, stem).render(
            values
        )
        note = (out / "prompts" / f"{stem}.txt").read_text(encoding="utf-8").split("\n")[1]
        kept = set(re.findall(r"\{\{(\w+)\}\}", note))
        assert kept == {f for f in builtin.seed_fields}, note


def test_task_new_refuses_builtin_names_bad_names_and_full_folders(tmp_path: Path) -> None:
    assert main(["task", "new", "qa", "--like", "qa", "--out", str(tmp_path / "a")]) == 2
    assert main(["task", "new", "My Task", "--like", "qa", "--out", str(tmp_path / "b")]) == 2
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.txt").write_text("x")
    assert main(["task", "new", "mine", "--like", "qa", "--out", str(tmp_path / "c")]) == 2
    with pytest.raises(UsageError):
        new_folder("mine", "general", tmp_path / "d")


# -- a store keeps the folders its runs used ---------------------------------------------------


def test_a_store_reads_a_task_back_without_its_folder(tmp_path: Path) -> None:
    from halugen.store.db import open_store
    from halugen.tasks.catalog import TaskCatalog

    folder = copy_of(GLOSSARY, tmp_path, "moving")
    spec = task_spec(str(folder))
    with open_store(tmp_path / "h.duckdb") as store:
        remember(store, spec)
        store.writer.flush_blocking()
        remember(store, spec)  # once per version
        store.writer.flush_blocking()
        assert store.query("SELECT count(*) FROM task_folders")[0][0] == 1
    shutil.rmtree(folder)
    with pytest.raises(UsageError):
        task_spec("glossary")
    with open_store(tmp_path / "h.duckdb") as store:
        catalog = recall(store)
        assert catalog.names[-1] == "glossary"
        assert recall(store, catalog) == catalog  # known now: nothing added
    from halugen.tasks.stored import read_task_or_stored

    again = read_task_or_stored("glossary", tmp_path / "h.duckdb")
    assert again == catalog["glossary"]
    assert TaskCatalog().get("glossary") is None  # nothing is remembered between calls
    assert again.record_fields == spec.record_fields
    assert task_template(again, "pick").hash == task_template(spec, "pick").hash
    assert again.checks == spec.checks


# -- seeds of a task folder -----------------------------------------------------------------


def test_seeds_are_records_of_its_fields_through_its_map(tmp_path: Path) -> None:
    from halugen.records import BadRecord, Seed
    from halugen.seeds import read_seeds

    folder = copy_of(GLOSSARY, tmp_path, "mapped")
    with (folder / "task.toml").open("a", encoding="utf-8") as f:
        f.write('\n[seeds]\nmap = { term = "t", right_definition = "gloss" }\n')
    spec = task_spec(str(folder))
    assert dict(spec.seed_map) == {"term": "t", "right_definition": "gloss"}
    seeds = tmp_path / "s.jsonl"
    seeds.write_text(
        '{"t": "sonnet", "domain": "literature", "gloss": "A poem of fourteen lines."}\n'
        '{"t": "ode", "domain": "literature"}\n'
        '{"term": "haiku", "domain": "literature", "gloss": "A short poem."}\n',
        encoding="utf-8",
    )
    got = list(read_seeds([str(seeds)], spec))
    assert isinstance(got[0], Seed) and got[0].fields == {
        "term": "sonnet",
        "domain": "literature",
        "right_definition": "A poem of fourteen lines.",
    }
    assert got[0].task == "glossary" and got[0].dataset == "table"
    assert isinstance(got[1], BadRecord) and got[1].source_line == 2
    assert got[1].reason == "missing column gloss"
    assert isinstance(got[2], BadRecord) and "missing column t" in got[2].reason
    with pytest.raises(UsageError, match="reads its seeds as a table"):
        read_seeds([str(seeds)], spec, fmt="hotpotqa")


def test_seeds_section_names_the_table_seeds_source(tmp_path: Path) -> None:
    from halugen.export.card_header import named_table_sources

    folder = copy_of(GLOSSARY, tmp_path, "named")
    toml = folder / "task.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8")
        + '\n[seeds]\nsource_name = "my-lab/glossary"\nlicense = "cc-by-4.0"\n',
        encoding="utf-8",
    )
    spec = task_spec(str(folder))
    assert (spec.seed_source_name, spec.seed_license) == ("my-lab/glossary", "cc-by-4.0")
    folders = [(spec.seed_source_name, spec.seed_license)]
    assert named_table_sources([], folders) == {
        "table": ("my-lab/glossary", "cc-by-4.0", "https://huggingface.co/datasets/my-lab/glossary")
    }
    # a run's --source-name / --license win over the folder's
    runs = [{"source_name": "other", "source_license": "mit"}]
    assert named_table_sources(runs, folders) == {"table": ("other", "mit", "—")}
    # runs that disagree on the licence leave it unknown
    two = [{"source_license": "mit"}, {"source_license": "apache-2.0"}]
    assert named_table_sources(two)["table"][1] == "unknown"
    assert named_table_sources([]) == {}
