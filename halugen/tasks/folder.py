"""A task folder: ``task.toml`` declares the task, ``prompts/`` holds its templates.

``load_folder`` reads one into a ``TaskSpec``; ``check_files`` finds every problem with
it first, without calling anything: a missing or unknown key, a value of the wrong kind, a
field named nowhere, a guard or shape that does not exist, a pattern without a definition,
a template that lacks a placeholder its fields need or names one no field gives. Each
problem is one line naming the file and the key. The built-in tasks are folders read the
same way (``halugen/tasks/builtin/``), so there is one way to define a task.

A folder is read into ``{relative path: text}`` first (``read_files``); a store keeps that
mapping for the tasks its runs used, so a task can be read back from there as well.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError
from ..prompts import Template, parse_template
from .base import TaskSpec
from .checks import GUARDS, Check
from .shapes import SHAPES

__all__ = [
    "KINDS",
    "STRATEGIES",
    "TASK_FILE",
    "Problem",
    "TaskFolderError",
    "check_folder",
    "load_folder",
    "read_files",
    "spec_from_files",
    "spec_template_fields",
    "template_fields",
]

TASK_FILE = "task.toml"
PROMPTS = "prompts"
KINDS = ("generated", "annotated")
STRATEGIES = ("plain", "knowledge", "cot", "contrast")
# The template fields the engine fills besides the record's own.
CANDIDATES_FIELD = "answers"  # the filter's numbered candidates
COUNT_FIELD = "count"  # filter_again: how many candidates were shown
CONTRAST_FIELDS = ("answer_1", "answer_2")
AGAIN_TEMPLATE = "filter_again"

# A task's name becomes file names, SQL values and Python identifiers (the Inspect export).
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# A field's name is a template placeholder, a JSON key and a column name.
_FIELD = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
_PATTERN = re.compile(r"^[a-z0-9][a-z0-9 _-]{0,39}$")
_STEM = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_FILE = 1_000_000  # bytes: a template or declaration larger than this is a mistake

# key -> kind of value: str, strs (list of strings), name / names (field names),
# table, tables (array of tables), texts (table of strings)
_TOP = {
    "name": "str",
    "title": "str",
    "description": "str",
    "kind": "str",
    "fields": "table",
    "patterns": "tables",
    "reply": "table",
    "filter": "table",
    "guards": "tables",
    "evaluate": "table",
    "seeds": "table",
    "templates": "table",
}
_SECTIONS = {
    "fields": {
        "seed": "names",
        "item": "names",
        "right": "name",
        "hallucinated": "name",
        "label": "name",
        "question": "name",
        "knowledge": "name",
        "long": "name",
        "topic": "names",
        "about": "texts",
    },
    "patterns": {"name": "str", "definition": "str", "words": "strs"},
    "reply": {"labels": "strs", "stop": "strs", "shape": "str"},
    "filter": {"label": "str", "context": "names", "words": "strs"},
    "evaluate": {"strategies": "strs", "shown": "name", "context": "names"},
    "seeds": {"map": "texts"},
    "templates": {"sample": "strs", "filter": "str"},
}
_REQUIRED = {
    "": ("name", "fields", "evaluate"),
    "fields": ("right",),
    "evaluate": ("strategies", "shown", "context"),
    "patterns": ("name", "definition"),
    "reply": ("labels", "shape"),
    "filter": ("label", "context"),
}
# what only a generated task has; and what an annotated one needs instead
_GENERATED_ONLY = ("patterns", "reply", "filter", "guards", "seeds", "templates")
_GENERATED_FIELDS = ("seed", "hallucinated", "long")
_ANNOTATED_FIELDS = ("item", "label")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a task folder: the file, the key (or placeholder), why."""

    file: str  # relative to the folder: "task.toml", "prompts/filter.txt"
    key: str  # "fields.right", "patterns[2].definition", "{{answers}}"; "" for the file
    message: str

    def line(self, folder: str) -> str:
        where = f"{folder.rstrip('/')}/{self.file}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class TaskFolderError(UsageError):
    """A task folder that cannot be used; ``problems`` holds one entry per problem."""

    def __init__(self, folder: str, problems: Sequence[Problem]) -> None:
        self.folder = folder
        self.problems = tuple(problems)
        lines = "\n".join(p.line(folder) for p in self.problems)
        n = len(self.problems)
        super().__init__(
            f"task folder {folder} has {n} problem{'s' if n != 1 else ''} "
            f"(fix, then check with: halugen task check {folder}):\n{lines}"
        )


# -- reading ------------------------------------------------------------------------------


def read_files(folder: Path) -> tuple[dict[str, str], list[Problem]]:
    """``{relative path: text}`` of ``task.toml`` and ``prompts/*.txt``, and what could not
    be read. A folder without ``task.toml`` is one problem."""
    files: dict[str, str] = {}
    problems: list[Problem] = []
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        return files, [Problem(TASK_FILE, "", f"the task folder {what}")]
    paths = [folder / TASK_FILE]
    prompts = folder / PROMPTS
    if prompts.is_dir():
        paths += sorted(prompts.glob("*.txt"))
    for path in paths:
        rel = path.relative_to(folder).as_posix()
        try:
            if path.stat().st_size > _MAX_FILE:
                problems.append(Problem(rel, "", f"larger than {_MAX_FILE:,} bytes"))
                continue
            files[rel] = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if rel == TASK_FILE:
                problems.append(
                    Problem(
                        rel,
                        "",
                        "missing (a task folder declares its task there; "
                        "'halugen task new NAME --like qa' writes one)",
                    )
                )
        except UnicodeDecodeError:
            problems.append(Problem(rel, "", "not UTF-8 text"))
        except OSError as exc:
            problems.append(Problem(rel, "", f"cannot be read ({exc.strerror or exc})"))
    return files, problems


def check_folder(
    folder: Path, *, builtin: bool = False, reserved: Sequence[str] = ()
) -> tuple[TaskSpec | None, list[Problem]]:
    """(the spec, []) or (None, every problem) for the task folder at ``folder``.

    ``reserved`` are names another task owns (the built-in ones, for a user's folder).
    """
    files, problems = read_files(folder)
    spec = None
    if TASK_FILE in files:
        spec, more = spec_from_files(files, folder=folder, builtin=builtin, reserved=reserved)
        problems += more
    return (None if problems else spec), problems


def load_folder(folder: Path, *, builtin: bool = False, reserved: Sequence[str] = ()) -> TaskSpec:
    """The task declared in ``folder``; ``TaskFolderError`` listing every problem."""
    spec, problems = check_folder(folder, builtin=builtin, reserved=reserved)
    if spec is None:
        raise TaskFolderError(str(folder), problems)
    return spec


def spec_from_files(
    files: Mapping[str, str],
    *,
    folder: Path | None = None,
    builtin: bool = False,
    reserved: Sequence[str] = (),
) -> tuple[TaskSpec | None, list[Problem]]:
    """(the spec, []) or (None, the problems) for a task folder's files."""
    text = files.get(TASK_FILE)
    if text is None:
        return None, [Problem(TASK_FILE, "", "missing")]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [Problem(TASK_FILE, "", f"not valid TOML: {exc}")]
    reader = _Reader(data, files, builtin=builtin, reserved=reserved)
    spec = reader.spec(folder)
    return (spec if not reader.problems else None), reader.problems


# -- the declaration, checked ---------------------------------------------------------------


def _kind_of(value: Any) -> str:
    return {
        str: "a string",
        bool: "true/false",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


class _Reader:
    """Walks the declaration once, noting every problem, then builds the spec."""

    def __init__(
        self,
        data: dict[str, Any],
        files: Mapping[str, str],
        *,
        builtin: bool,
        reserved: Sequence[str],
    ) -> None:
        self.data = data
        self.files = files
        self.builtin = builtin
        self.reserved = tuple(reserved)
        self.problems: list[Problem] = []

    def problem(self, key: str, message: str, file: str = TASK_FILE) -> None:
        self.problems.append(Problem(file, key, message))

    # -- values ------------------------------------------------------------------------------

    def _value(self, where: str, kind: str, value: Any) -> Any:
        """``value`` if it is of ``kind``, else None (and a problem)."""
        want = {
            "str": "a string",
            "name": "a field name",
            "strs": "a list of strings",
            "names": "a list of field names",
            "table": "a table",
            "tables": "a list of tables ([[...]])",
            "texts": "a table of strings",
        }[kind]
        ok = {
            "str": lambda v: isinstance(v, str),
            "name": lambda v: isinstance(v, str),
            "strs": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "names": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "table": lambda v: isinstance(v, dict),
            "tables": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
            "texts": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        }[kind]
        if not ok(value):
            self.problem(where, f"must be {want}, not {_kind_of(value)}")
            return None
        if kind == "name" and not _FIELD.match(value):
            self.problem(where, f"{value!r} is not a field name (lower-case letters, digits, _)")
            return None
        if kind == "names":
            bad = [v for v in value if not _FIELD.match(v)]
            if bad:
                self.problem(
                    where, f"{bad[0]!r} is not a field name (lower-case letters, digits, _)"
                )
                return None
            if len(set(value)) != len(value):
                self.problem(where, "names a field twice")
                return None
        return value

    def table(self, where: str, data: dict[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
        """The known keys of ``data`` with values of the right kind; unknown keys noted."""
        out: dict[str, Any] = {}
        for key, value in data.items():
            at = f"{where}.{key}" if where else key
            kind = keys.get(key)
            if kind is None:
                close = difflib.get_close_matches(key, list(keys), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]}?)" if close else ""
                self.problem(at, f"unknown key{hint}; known: {', '.join(keys)}")
                continue
            checked = self._value(at, kind, value)
            if checked is not None:
                out[key] = checked
        return out

    def require(self, where: str, raw: Any, keys: Sequence[str]) -> None:
        if not isinstance(raw, Mapping):
            return  # its kind is already a problem
        for key in keys:
            if key not in raw:
                self.problem(f"{where}.{key}" if where else key, "missing")

    # -- the whole declaration -------------------------------------------------------------------

    def spec(self, folder: Path | None) -> TaskSpec | None:
        top = self.table("", self.data, _TOP)
        self.require("", self.data, _REQUIRED[""])
        kind = top.get("kind", "generated")
        if kind not in KINDS:
            self.problem("kind", f"{kind!r} is not a kind of task; known: {', '.join(KINDS)}")
            kind = "generated"
        if kind == "annotated" and not self.builtin:
            self.problem(
                "kind",
                "annotated is the general track's own (its items come from "
                "halugen annotate); a task folder's items are generated",
            )
            kind = "generated"
        generated = kind == "generated"
        name = top.get("name", "")
        if "name" in top and not _NAME.match(name):
            self.problem(
                "name",
                f"{name!r}: a task's name is lower-case letters, digits and _ "
                "(it names files and columns), starting with a letter",
            )
        elif name and not self.builtin and name in self.reserved:
            self.problem("name", f"{name!r} is a built-in task's name: choose another")
        if not generated:
            for key in _GENERATED_ONLY:
                if key in self.data:
                    self.problem(key, "an annotated task is never generated: remove it")

        # a template is checked only when what it depends on is sound: one mistake, one line
        before = len(self.problems)
        fields = self.section("fields", top)
        seed = tuple(fields.get("seed", ()))
        if generated:
            self.require("fields", self.data.get("fields", {}), ("seed", "hallucinated"))
            for key in _ANNOTATED_FIELDS:
                if key in fields:
                    self.problem(f"fields.{key}", "only an annotated task has it: remove it")
            hallucinated = fields.get("hallucinated", "")
            record = (*seed, hallucinated) if hallucinated else seed
            if hallucinated and hallucinated in seed:
                self.problem(
                    "fields.hallucinated",
                    f"{hallucinated!r} is a seed field: the hallucinated text is made, never read",
                )
        else:
            self.require("fields", self.data.get("fields", {}), _ANNOTATED_FIELDS)
            for key in _GENERATED_FIELDS:
                if key in fields:
                    self.problem(f"fields.{key}", "an annotated task is never generated: remove it")
            record = tuple(fields.get("item", ()))
            hallucinated = fields.get("right", "")
        right = fields.get("right", "")
        known = seed if generated else record
        where_known = "fields.seed" if generated else "fields.item"
        for key in ("right", "question", "knowledge", "long", "label"):
            value = fields.get(key)
            if value and known and value not in known:
                self.problem(
                    f"fields.{key}", f"{value!r} is not in {where_known} ({', '.join(known)})"
                )
        fields_ok = len(self.problems) == before
        for key in ("topic",):
            for value in fields.get(key, ()):
                if record and value not in record:
                    self.problem(
                        f"fields.{key}",
                        f"{value!r} is not a field of the task ({', '.join(record)})",
                    )
        notes = fields.get("about", {})
        for value in notes:
            if record and value not in record:
                self.problem(
                    f"fields.about.{value}", f"not a field of the task ({', '.join(record)})"
                )

        patterns, words, definitions = self.patterns(generated)
        reply = self.section("reply", top, required=generated)
        shape = reply.get("shape", "one_line")
        if "shape" in reply and shape not in SHAPES:
            self.problem("reply.shape", f"no shape {shape!r}; known: {', '.join(SHAPES)}")
            shape = "one_line"
        if "labels" in reply and not reply["labels"]:
            self.problem("reply.labels", "empty: name the label the reply gives the text under")
        before = len(self.problems)
        filt = self.section("filter", top, required=generated)
        for value in filt.get("context", ()):
            if seed and value not in seed:
                self.problem(
                    "filter.context", f"{value!r} is not in fields.seed ({', '.join(seed)})"
                )
        filter_ok = len(self.problems) == before
        checks = self.guards()
        before = len(self.problems)
        strategies, shown, judge_context = self.evaluation(top, generated, fields, record)
        judge_ok = len(self.problems) == before
        seed_map = self.seeds(top, seed)
        sample_stems, filter_stem = self.template_names(top)

        templates = self.templates(
            generated=generated,
            seed=seed,
            fields=fields,
            sample_stems=sample_stems if generated else (),
            filter_stem=filter_stem if generated else "",
            filter_context=tuple(filt.get("context", ())),
            patterns=patterns,
            strategies=strategies,
            shown=shown,
            judge_context=judge_context,
            checked={
                "sampling": fields_ok,
                "filter": fields_ok and filter_ok,
                "filter re-ask": True,
                "judge": fields_ok and judge_ok,
            },
        )
        if self.problems:
            return None
        return TaskSpec(
            name=name,
            seed_fields=seed,
            right_field=right,
            hallucinated_field=hallucinated,
            patterns=patterns,
            pattern_words=words,
            reply_labels=tuple(reply.get("labels", ())),
            stop_labels=tuple(reply.get("stop", ())),
            shape=SHAPES[shape],
            candidate_label=filt.get("label", ""),
            filter_context=tuple(filt.get("context", ())),
            checks=checks,
            candidate_words=tuple(filt.get("words", ())),
            sample_templates=sample_stems if generated else (),
            filter_template=filter_stem if generated else "",
            long_field=fields.get("long"),
            kind=kind,
            title=top.get("title", ""),
            description=top.get("description", ""),
            definitions=definitions,
            item_fields=() if generated else record,
            question_field=fields.get("question", ""),
            knowledge_field=fields.get("knowledge", ""),
            label_field=fields.get("label", ""),
            topic_fields=tuple(fields.get("topic", ()))
            or tuple(f for f in (fields.get("knowledge"), fields.get("question")) if f),
            field_notes=tuple(notes.items()),
            strategies=strategies,
            judge_shown=shown,
            judge_context=judge_context,
            seed_map=tuple(seed_map.items()),
            templates=tuple(templates.items()),
            folder=folder,
            sources=tuple(sorted(self.files.items())),
            builtin=self.builtin,
        )

    def section(self, key: str, top: Mapping[str, Any], *, required: bool = True) -> dict[str, Any]:
        raw = top.get(key)
        if raw is None:
            if required and key not in self.data:
                self.problem(key, "missing")
            return {}
        got = self.table(key, raw, _SECTIONS[key])
        self.require(key, raw, _REQUIRED.get(key, ()))
        return got

    def patterns(
        self, generated: bool
    ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...]]:
        raw = self.data.get("patterns")
        if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
            if generated and raw is None:
                self.problem(
                    "patterns",
                    "missing: declare each pattern as [[patterns]] with its name and definition",
                )
            return (), (), ()
        names: list[str] = []
        words: list[tuple[str, str]] = []
        definitions: list[str] = []
        for i, entry in enumerate(raw):
            where = f"patterns[{i}]"
            got = self.table(where, entry, _SECTIONS["patterns"])
            name = got.get("name", "")
            label = f"{where} ({name})" if name else where
            if "name" not in entry:
                self.problem(f"{where}.name", "missing")
            elif not _PATTERN.match(name):
                self.problem(f"{where}.name", f"{name!r}: lower-case letters, digits, '-', '_'")
            elif name in names:
                self.problem(f"{where}.name", f"{name!r} is declared twice")
            definition = got.get("definition", "")
            if not definition.strip():
                self.problem(
                    f"{label}.definition",
                    "missing: a pattern needs a definition (what "
                    "kind of wrong it is), the one its prompts teach",
                )
            for j, rx in enumerate(got.get("words") or [_default_words(name)]):
                try:
                    re.compile(rx)
                except re.error as exc:
                    self.problem(f"{where}.words[{j}]", f"not a regular expression: {exc}")
                    continue
                words.append((rx, name))
            names.append(name)
            definitions.append(definition.strip())
        if generated and not raw:
            self.problem("patterns", "empty: a generated task has at least one pattern")
        return tuple(names), tuple(words), tuple(definitions)

    def guards(self) -> tuple[Check, ...]:
        raw = self.data.get("guards", [])
        if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
            return ()  # noted by the top-level table check
        out: list[Check] = []
        for i, entry in enumerate(raw):
            where = f"guards[{i}]"
            name = entry.get("check")
            if not isinstance(name, str):
                self.problem(
                    f"{where}.check",
                    "missing: which guard (" + ", ".join(GUARDS) + ")"
                    if name is None
                    else f"must be a string, not {_kind_of(name)}",
                )
                continue
            cls = GUARDS.get(name)
            if cls is None:
                close = difflib.get_close_matches(name, list(GUARDS), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]}?)" if close else ""
                self.problem(
                    f"{where}.check", f"no guard {name!r}{hint}; known: {', '.join(GUARDS)}"
                )
                continue
            guard = self.guard(
                f"{where} ({name})", cls, {k: v for k, v in entry.items() if k != "check"}
            )
            if guard is not None:
                out.append(guard)
        return tuple(out)

    def guard(self, where: str, cls: type, settings: dict[str, Any]) -> Check | None:
        params = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "problem"}
        values: dict[str, Any] = {}
        ok = True
        for key, value in settings.items():
            f = params.get(key)
            if f is None:
                self.problem(
                    f"{where}.{key}",
                    "unknown setting; "
                    + (f"known: {', '.join(params)}" if params else "this guard has none"),
                )
                ok = False
                continue
            converted = _setting(str(f.type), value)
            if converted is None:
                self.problem(
                    f"{where}.{key}",
                    f"must be {_SETTING_KINDS.get(str(f.type), f.type)}, not {_kind_of(value)}",
                )
                ok = False
                continue
            values[key] = converted
        for key, f in params.items():
            no_default = (
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            )
            if no_default and key not in values and key not in settings:
                self.problem(f"{where}.{key}", "missing")
                ok = False
        if not ok:
            return None
        try:
            guard: Check = cls(**values)
        except (re.error, ValueError, TypeError) as exc:
            self.problem(where, f"cannot be made: {exc}")
            return None
        return guard

    def evaluation(
        self,
        top: Mapping[str, Any],
        generated: bool,
        fields: Mapping[str, Any],
        record: tuple[str, ...],
    ) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
        ev = self.section("evaluate", top)
        strategies = tuple(ev.get("strategies", ()))
        for s in strategies:
            if s not in STRATEGIES:
                self.problem(
                    "evaluate.strategies", f"no strategy {s!r}; known: {', '.join(STRATEGIES)}"
                )
        if "strategies" in ev and not strategies:
            self.problem("evaluate.strategies", "empty: name at least plain")
        if len(set(strategies)) != len(strategies):
            self.problem("evaluate.strategies", "names a strategy twice")
        if "knowledge" in strategies and not fields.get("knowledge"):
            self.problem(
                "evaluate.strategies",
                "knowledge needs fields.knowledge (what the strategy shows the judge)",
            )
        if "contrast" in strategies and not generated:
            self.problem(
                "evaluate.strategies",
                "contrast needs two texts to compare; an annotated task has one",
            )
        context = tuple(ev.get("context", ()))
        for value in context:
            if record and value not in record:
                self.problem(
                    "evaluate.context",
                    f"{value!r} is not a field of the task ({', '.join(record)})",
                )
        shown = ev.get("shown", "")
        if shown and shown in record:
            self.problem(
                "evaluate.shown",
                f"{shown!r} is a field of the task: the judged text "
                "needs a placeholder of its own (e.g. answer)",
            )
        return strategies, shown, context

    def seeds(self, top: Mapping[str, Any], seed: tuple[str, ...]) -> dict[str, str]:
        section = self.section("seeds", top, required=False)
        mapping = dict(section.get("map", {}))
        for key, column in mapping.items():
            if seed and key not in seed:
                self.problem(f"seeds.map.{key}", f"not in fields.seed ({', '.join(seed)})")
            if not column.strip():
                self.problem(f"seeds.map.{key}", "empty: name the column that fills the field")
        return mapping

    def template_names(self, top: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
        section = self.section("templates", top, required=False)
        sample = tuple(section.get("sample", ("sample_onepass", "sample_conversation")))
        filt = section.get("filter", "filter")
        if not sample:
            self.problem("templates.sample", "empty: name at least one sampling template")
        for i, stem in enumerate((*sample, filt)):
            if not _STEM.match(stem):
                key = "templates.filter" if i == len(sample) else "templates.sample"
                self.problem(key, f"{stem!r}: a file name under prompts/ without .txt")
        return sample, filt

    # -- the templates -----------------------------------------------------------------------

    def templates(
        self,
        *,
        generated: bool,
        seed: tuple[str, ...],
        fields: Mapping[str, Any],
        sample_stems: tuple[str, ...],
        filter_stem: str,
        filter_context: tuple[str, ...],
        patterns: tuple[str, ...],
        strategies: tuple[str, ...],
        shown: str,
        judge_context: tuple[str, ...],
        checked: Mapping[str, bool],
    ) -> dict[str, Template]:
        """Every template the declaration uses, parsed, with its placeholders checked;
        ``checked`` says which kinds of template to check (sampling, filter, judge)."""
        wanted = template_fields(
            generated=generated,
            seed=seed,
            roles=tuple(fields.get(k, "") for k in ("right", "question", "knowledge")),
            sample_stems=sample_stems,
            filter_stem=filter_stem,
            filter_context=filter_context,
            strategies=tuple(s for s in strategies if s in STRATEGIES),
            shown=shown,
            judge_context=judge_context,
        )
        out: dict[str, Template] = {}
        for stem, need, allowed, what in wanted:
            if not checked.get(what.split()[-1] if what.endswith("judge") else what, True):
                continue
            rel = f"{PROMPTS}/{stem}.txt"
            text = self.files.get(rel)
            if text is None:
                self.problem("", f"missing: the {what} template", file=rel)
                continue
            try:
                template = parse_template(f"{self.data.get('name', '')}/{stem}", text)
            except ConfigError as exc:
                self.problem("", re.sub(r"^prompt template \S+ ", "", str(exc)), file=rel)
                continue
            have = template.fields
            for missing in sorted(need - have):
                self.problem(
                    "{{" + missing + "}}",
                    f"missing: the {what} template must show {_why(missing, fields, shown)}",
                    file=rel,
                )
            for extra in sorted(have - allowed):
                self.problem(
                    "{{" + extra + "}}",
                    f"no field gives it (the {what} template may "
                    f"use: {', '.join(sorted(allowed)) or 'none'})",
                    file=rel,
                )
            if what == "sampling":
                low = text.casefold()
                for p in patterns:
                    if p.casefold() not in low:
                        self.problem(
                            f"patterns.{p}",
                            "not named in the template: a model can "
                            "only use the patterns its prompt teaches",
                            file=rel,
                        )
            out[stem] = template
        return out


def template_fields(
    *,
    generated: bool,
    seed: Sequence[str],
    roles: Sequence[str],
    sample_stems: Sequence[str],
    filter_stem: str,
    filter_context: Sequence[str],
    strategies: Sequence[str],
    shown: str,
    judge_context: Sequence[str],
) -> list[tuple[str, set[str], set[str], str]]:
    """(stem, the placeholders it must have, those it may have, what it is for) of every
    template a task uses. ``roles``: the right, question and knowledge fields ("": none).

    A sampling template shows the right text and the question and knowledge fields (the
    other seed fields it may show); the filter lays out ``{{answers}}`` beside its context
    fields; a judge template shows its context fields and the judged text (contrast: both,
    as ``{{answer_1}}`` and ``{{answer_2}}``; knowledge: also the knowledge field).
    """
    right, question, knowledge = roles
    wanted: list[tuple[str, set[str], set[str], str]] = []
    if generated:
        shows = {f for f in (right, question, knowledge) if f}
        for stem in sample_stems:
            wanted.append((stem, shows, set(seed), "sampling"))
        candidates = {CANDIDATES_FIELD, *filter_context}
        wanted.append((filter_stem, candidates, candidates, "filter"))
        wanted.append((AGAIN_TEMPLATE, set(), {COUNT_FIELD}, "filter re-ask"))
    for strategy in strategies:
        judged = set(CONTRAST_FIELDS) if strategy == "contrast" else {shown}
        need = {*judge_context, *judged}
        if strategy == "knowledge" and knowledge:
            need.add(knowledge)
        wanted.append((f"judge_{strategy}", need, need, f"{strategy} judge"))
    # the one follow-up after an unreadable verdict (contrast: after an unreadable pick);
    # sent in the same conversation, so it shows no field of its own
    for strategy in ("contrast", "") if strategies else ():
        if not strategy or strategy in strategies:
            stem = f"judge_{strategy}_again" if strategy else "judge_again"
            if strategy or any(s != "contrast" for s in strategies):
                wanted.append((stem, set(), set(), f"{strategy or 'verdict'} re-ask judge"))
    return wanted


def spec_template_fields(spec: TaskSpec) -> list[tuple[str, set[str], set[str], str]]:
    """``template_fields`` of a task read already."""
    return template_fields(
        generated=spec.generated,
        seed=spec.seed_fields,
        roles=(spec.right_field, spec.question_field, spec.knowledge_field),
        sample_stems=spec.sample_templates,
        filter_stem=spec.filter_template,
        filter_context=spec.filter_context,
        strategies=spec.strategies,
        shown=spec.judge_shown,
        judge_context=spec.judge_context,
    )


def _why(placeholder: str, fields: Mapping[str, Any], shown: str) -> str:
    if placeholder == CANDIDATES_FIELD:
        return "the candidates, laid out as numbered lines"
    if placeholder == shown:
        return "the judged text (evaluate.shown)"
    if placeholder in CONTRAST_FIELDS:
        return "both texts, in the order shown"
    roles = {fields.get(k): k for k in ("right", "question", "knowledge")}
    role = roles.get(placeholder)
    return f"fields.{role} ({placeholder})" if role else f"the field {placeholder}"


def _default_words(name: str) -> str:
    """A pattern named by its own words, whatever separates them ("non factual")."""
    return r"[\s_–—-]*".join(re.escape(part) for part in re.split(r"[\s_-]+", name) if part)


_SETTING_KINDS = {
    "int": "a whole number",
    "float": "a number",
    "str": "a string",
    "tuple[str, ...]": "a list of strings",
}


def _setting(kind: str, value: Any) -> Any:
    """``value`` as the guard's setting of type ``kind``; None when it is not one."""
    if isinstance(value, bool):
        return None
    if kind == "int":
        return value if isinstance(value, int) else None
    if kind == "float":
        return float(value) if isinstance(value, int | float) else None
    if kind == "str":
        return value if isinstance(value, str) else None
    if kind == "tuple[str, ...]":
        ok = isinstance(value, list) and all(isinstance(x, str) for x in value)
        return tuple(value) if ok else None
    return None
