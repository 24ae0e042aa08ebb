"""``task.toml`` and its templates read into a ``TaskSpec``: every problem noted, one line
each, before anything is built."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..prompts import Template, parse_template
from .base import TaskSpec
from .contract_lines import missing_contract
from .guard_settings import read_guards
from .problems import PROMPTS, TASK_FILE, Problem
from .schema import (
    ANNOTATED_FIELDS,
    GENERATED_FIELDS,
    GENERATED_ONLY,
    KINDS,
    PATTERN_NAME,
    REQUIRED_KEYS,
    SECTION_KEYS,
    STRATEGIES,
    TASK_NAME,
    TEMPLATE_STEM,
    TOP_KEYS,
    TableReader,
)
from .shapes import SHAPES
from .template_fields import CANDIDATES_FIELD, CONTRAST_FIELDS, OPTIONAL, template_fields

__all__ = ["spec_from_files"]


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


class _Reader(TableReader):
    """Walks the declaration once, noting every problem, then builds the spec."""

    def __init__(
        self,
        data: dict[str, Any],
        files: Mapping[str, str],
        *,
        builtin: bool,
        reserved: Sequence[str],
    ) -> None:
        super().__init__(data)
        self.files = files
        self.builtin = builtin
        self.reserved = tuple(reserved)

    def spec(self, folder: Path | None) -> TaskSpec | None:
        top = self.table("", self.data, TOP_KEYS)
        self.require("", self.data, REQUIRED_KEYS[""])
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
        if "name" in top and not TASK_NAME.match(name):
            self.problem(
                "name",
                f"{name!r}: a task's name is lower-case letters, digits and _ "
                "(it names files and columns), starting with a letter",
            )
        elif name and not self.builtin and name in self.reserved:
            self.problem("name", f"{name!r} is a built-in task's name: choose another")
        if not generated:
            for key in GENERATED_ONLY:
                if key in self.data:
                    self.problem(key, "an annotated task is never generated: remove it")

        # a template is checked only when what it depends on is sound: one mistake, one line
        before = len(self.problems)
        fields = self.section("fields", top)
        seed = tuple(fields.get("seed", ()))
        if generated:
            self.require("fields", self.data.get("fields", {}), ("seed", "hallucinated"))
            for key in ANNOTATED_FIELDS:
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
            self.require("fields", self.data.get("fields", {}), ANNOTATED_FIELDS)
            for key in GENERATED_FIELDS:
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
        checks = read_guards(self.data.get("guards", []), self.problem)
        before = len(self.problems)
        strategies, shown, judge_context = self.evaluation(top, generated, fields, record)
        judge_ok = len(self.problems) == before
        seed_map, seed_source = self.seeds(top, seed)
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
            seed_source_name=seed_source[0],
            seed_license=seed_source[1],
            templates=tuple(templates.items()),
            folder=folder,
            sources=tuple(sorted(self.files.items())),
            builtin=self.builtin,
        )

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
            got = self.table(where, entry, SECTION_KEYS["patterns"])
            name = got.get("name", "")
            label = f"{where} ({name})" if name else where
            if "name" not in entry:
                self.problem(f"{where}.name", "missing")
            elif not PATTERN_NAME.match(name):
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

    def seeds(
        self, top: Mapping[str, Any], seed: tuple[str, ...]
    ) -> tuple[dict[str, str], tuple[str, str]]:
        """``[seeds]``: the table columns of the seed fields, and (source name, licence)."""
        section = self.section("seeds", top, required=False)
        mapping = dict(section.get("map", {}))
        source = (str(section.get("source_name", "")), str(section.get("license", "")))
        for key, column in mapping.items():
            if seed and key not in seed:
                self.problem(f"seeds.map.{key}", f"not in fields.seed ({', '.join(seed)})")
            if not column.strip():
                self.problem(f"seeds.map.{key}", "empty: name the column that fills the field")
        return mapping, source

    def template_names(self, top: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
        section = self.section("templates", top, required=False)
        sample = tuple(section.get("sample", ("sample_onepass", "sample_conversation")))
        filt = section.get("filter", "filter")
        if not sample:
            self.problem("templates.sample", "empty: name at least one sampling template")
        for i, stem in enumerate((*sample, filt)):
            if not TEMPLATE_STEM.match(stem):
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
                if stem not in OPTIONAL:
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
            no_contract = missing_contract(template, what)
            if no_contract:
                self.problem("", no_contract, file=rel)
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
