"""CNN/DailyMail summarization seeds: the article as document, its highlights as summary.

Two layouts of the same data are read:

- ``cnndm``: the Hugging Face / Kaggle export, a CSV with columns ``id, article, highlights``
  (often with an unnamed pandas index column first), or JSON lines / a JSON array of objects
  with those keys. ``highlights`` holds one highlight sentence per line.
- ``cnndm-story``: the original ``.story`` files, one article per file: its paragraphs, then
  blocks of a line ``@highlight`` followed by one highlight. One seed per file.

The document is the article exactly as given (a story file's text before its first
``@highlight`` line, its surrounding blank lines left out). The right summary is not a text
of the dataset but made from the highlights: each made a sentence and joined with one space.
The released highlights end in a detached " ." (tokenised text); it is reattached, because a
right summary that looks tokenised while generated ones do not would give the answer away by
its form alone.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import InputError
from ..records import BadRecord, Seed, kind_of
from .csvfile import iter_csv
from .jsonl import (
    RecordProblem,
    check_text,
    clean_text,
    first_char,
    iter_records,
    one_line,
    open_seed_file,
    record_id,
    seeds_of,
    text_field,
)

__all__ = [
    "DESCRIPTION",
    "FORMAT",
    "KEYS",
    "LAYOUTS",
    "STORY_DESCRIPTION",
    "STORY_FORMAT",
    "STORY_KEYS",
    "STORY_LAYOUTS",
    "TASK",
    "as_sentence",
    "cnndm_fields",
    "read_cnndm",
    "read_cnndm_story",
    "story_fields",
    "summary_of",
]

FORMAT = "cnndm"
STORY_FORMAT = "cnndm-story"
TASK = "summarization"
KEYS = frozenset({"article", "highlights"})  # JSON keys or CSV columns
LAYOUTS = frozenset({"csv", "json"})
DESCRIPTION = "CNN/DailyMail CSV or JSON lines with id, article, highlights"
STORY_KEYS = frozenset({"@highlight"})  # the marker lines of a story file
STORY_LAYOUTS = frozenset({"story"})
STORY_DESCRIPTION = "CNN/DailyMail .story files: the article, then @highlight blocks"

STORY_MARKER = "@highlight"
_SENTENCE_ENDS = ".!?…"
_CLOSERS = "\"'”’)]»"
_DETACHED_END = re.compile(r" ([.!?…]+)$")
_MAX_STORY = 64 * 1024 * 1024  # a story is a news article; more than this is not one


def read_cnndm(path: str) -> Iterator[Seed | BadRecord]:
    """Seeds of a CNN/DailyMail CSV or JSON file, lazily; unusable records as ``BadRecord``."""
    with open_seed_file(path) as f:
        first = first_char(f, path)
    if not first:
        raise InputError(f"{path} is empty")
    records: Iterator[tuple[int, Any]]
    if first in (b"[", b"{"):
        records = iter_records(path)
    else:
        records = iter_csv(path, required=("article", "highlights"), optional=("id",))
    yield from seeds_of(
        path, records, task=TASK, dataset=FORMAT, fields=cnndm_fields, seed_id=record_id("id")
    )


def read_cnndm_story(path: str) -> Iterator[Seed | BadRecord]:
    """The one seed of a ``.story`` file (or a ``BadRecord`` when it has none)."""
    with open_seed_file(path) as f:
        try:
            data = f.read(_MAX_STORY + 1)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(f"cannot read seed file {path}: {one_line(err)}") from None
    if not data.strip():
        # one story per file: an empty one in a glob of thousands costs only itself
        yield BadRecord(path, 1, "empty file (no article, no highlights)")
        return
    if len(data) > _MAX_STORY:
        yield BadRecord(path, 1, f"larger than {_MAX_STORY >> 20} MB, not a story file")
        return
    try:
        text = data.decode("utf-8")
        fields = story_fields(text)
    except UnicodeDecodeError as err:
        yield BadRecord(path, 1, f"not UTF-8 text (byte {err.start + 1})")
        return
    except RecordProblem as problem:
        yield BadRecord(path, 1, str(problem))
        return
    yield Seed(
        task=TASK,
        fields=fields,
        seed_id=_story_id(path),
        source_file=path,
        source_line=1,
        dataset=STORY_FORMAT,
    )


def cnndm_fields(record: Any) -> dict[str, str]:
    """``document`` and ``right_summary`` of one CSV row or JSON object."""
    if not isinstance(record, Mapping):
        raise RecordProblem(f"not a JSON object ({kind_of(record)})")
    document = text_field(record, "article")
    if "highlights" not in record:
        raise RecordProblem("missing field highlights")
    highlights = record["highlights"]
    if isinstance(highlights, str):
        lines = highlights.splitlines()
    elif isinstance(highlights, list) and all(isinstance(h, str) for h in highlights):
        lines = highlights
    else:
        raise RecordProblem(
            f"field highlights is {kind_of(highlights)}, not a string or a list of strings"
        )
    summary = summary_of(lines)
    if not summary:
        raise RecordProblem("field highlights is empty")
    check_text("highlights", summary)
    return {"document": document, "right_summary": summary}


def story_fields(text: str) -> dict[str, str]:
    """``document`` and ``right_summary`` of one ``.story`` file's text."""
    article = 0  # characters of text before the first @highlight line
    highlights: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped == STORY_MARKER:
            highlights.append([])
        elif highlights:
            highlights[-1].append(stripped)  # the highlight (its lines, if it wraps)
        else:
            article += len(line)
    document = text[:article].strip()  # as written, without the blank lines around it
    check_text("article", document)
    if not document:
        raise RecordProblem("no article text before the first @highlight")
    summary = summary_of(" ".join(lines) for lines in highlights)
    if not summary:
        raise RecordProblem("no highlights (no non-empty line after an @highlight line)")
    check_text("highlights", summary)
    return {"document": document, "right_summary": summary}


def summary_of(highlights: Any) -> str:
    """Highlight texts made sentences and joined with one space; "" when all are blank."""
    return " ".join(s for h in highlights if (s := as_sentence(h)))


def as_sentence(text: str) -> str:
    """``text`` trimmed, a detached final mark reattached, and a period added when it does
    not end a sentence already (a closing quote or bracket after the mark counts)."""
    text = _DETACHED_END.sub(r"\1", clean_text(text))
    if not text:
        return ""
    core = text.rstrip(_CLOSERS)
    return text if core and core[-1] in _SENTENCE_ENDS else f"{text}."


def _story_id(path: str) -> str:
    name = os.path.basename(path)
    if name.endswith(".gz"):
        name = name[:-3]
    stem, _ = os.path.splitext(name)
    return stem or name
