"""Tables on stdout in the formats people paste elsewhere: one renderer for every command.

``render_tables(tables, fmt, stream)`` writes one or more ``TableData`` as

- ``table``: Rich box tables. On a terminal they fit its width without cutting a figure
  (``table_layout.py``: text wraps, a table too wide is split into several repeating its
  key columns, or stacked one row at a time); anywhere else (a pipe, a file) they keep
  their full width;
- ``markdown``: GitHub pipe tables, each under a ``### title`` line;
- ``csv``: a header line and the rows. Several tables are written one after another, each
  introduced by a ``# name`` line and separated by a blank line;
- ``json``: one table is a JSON array of objects (column -> value, numbers as numbers);
  several are an object of such arrays keyed by table name;
- ``jsonl``: one object per line (several tables: each object names its table);
- ``latex``: a ``table`` float per table with a booktabs ``tabular`` (``\\toprule``,
  ``\\midrule``, ``\\bottomrule``), special characters escaped.

Text that comes from data or from a provider is never read as Rich markup or emoji codes:
every cell, title and caption is written as plain text (``[/]`` stays ``[/]``, ``:ID:``
stays ``:ID:``). ``plain(text)`` gives the same guarantee to a message printed with a
Rich console.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, SupportsFloat, TextIO, cast

# csv, orjson and rich are imported by the writers that need them: ``--help`` stays quick

__all__ = [
    "FORMATS",
    "TableData",
    "plain",
    "render_table",
    "render_tables",
]

FORMATS = ("table", "markdown", "csv", "json", "latex")
# also accepted where a command offered it before (``halugen sql``)
EXTRA_FORMATS = ("jsonl",)

# wide enough for any table a store can hold on one line; Rich lays a table out at its
# natural width when the console is wider than that
_UNLIMITED_WIDTH = 1_000_000


@dataclass(frozen=True)
class TableData:
    """One table: plain values in, the renderer decides how they look.

    ``name`` keys the table in JSON output and names it in CSV sections (default: the
    title, or ``table<N>``); ``caption`` is a note printed under the table; ``align`` is
    "l" or "r" per column (default: right for columns of numbers, else left).
    """

    title: str | None
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    name: str | None = None
    caption: str | None = None
    align: Sequence[str] | None = None
    total_rows: int = 0  # the last rows are totals (a terminal sets them off, in bold)


def plain(text: object) -> Any:
    """``text`` as a Rich ``Text``: printed as is, never parsed for markup or emoji."""
    from rich.text import Text

    return Text(str(text))


def render_table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str = "table",
    stream: TextIO | None = None,
    *,
    caption: str | None = None,
    name: str | None = None,
) -> None:
    """Write one table to ``stream`` (default: stdout) in ``fmt`` (see ``FORMATS``)."""
    render_tables([TableData(title, columns, rows, name=name, caption=caption)], fmt, stream)


def render_tables(
    tables: Sequence[TableData], fmt: str, stream: TextIO | None = None, *, width: int | None = None
) -> None:
    """Write ``tables`` to ``stream`` (default: stdout) in ``fmt``; ``width``: the columns a
    ``table`` must fit in (default: the terminal's, or any width when not a terminal)."""
    stream = sys.stdout if stream is None else stream
    writer = _WRITERS.get(fmt)
    if writer is None:
        raise ValueError(f"unknown table format {fmt!r}; known: {', '.join(FORMATS)}")
    if fmt == "table":
        _write_rich(list(tables), stream, width)
    else:
        writer(list(tables), stream)


# -- cells ---------------------------------------------------------------------------------


def _text(value: Any) -> str:
    """A cell as display text: None empty, floats to 6 significant digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _is_number(value: Any) -> bool:
    """int, float, Decimal (a registered Number), not bool or complex."""
    return isinstance(value, numbers.Number) and not isinstance(value, bool | complex)


def _right_aligned(table: TableData) -> list[bool]:
    """Columns whose every non-empty cell is a number are right-aligned."""
    if table.align is not None:
        return [a == "r" for a in table.align]
    flags = []
    for i in range(len(table.columns)):
        cells = [r[i] for r in table.rows if i < len(r) and r[i] is not None]
        flags.append(bool(cells) and all(_is_number(c) for c in cells))
    return flags


def _names(tables: Sequence[TableData]) -> list[str]:
    names: list[str] = []
    for n, t in enumerate(tables, 1):
        base = t.name or (_slug(t.title) if t.title else f"table{n}")
        name, k = base, 2
        while name in names:
            name, k = f"{base}_{k}", k + 1
        names.append(name)
    return names


def _slug(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_") or "table"


# -- writers -------------------------------------------------------------------------------


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _write_rich(tables: list[TableData], stream: TextIO, width: int | None = None) -> None:
    from rich.console import Console

    from .table_layout import fit_table

    options: dict[str, Any] = {"file": stream, "markup": False, "emoji": False}
    if width is not None:
        options["width"] = width
    elif not _isatty(stream):
        options["width"] = _UNLIMITED_WIDTH  # full width in a pipe or a file
    console = Console(highlight=False, **options)
    if width is None and _isatty(stream):
        width = console.width
    for table in tables:
        cells = [[_text(v) for v in row] for row in table.rows]
        for part in fit_table(table, cells, _right_aligned(table), width):
            console.print(part)


def _md_cell(value: Any) -> str:
    text = _text(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.split("\n")).replace("\r", " ")


def _write_markdown(tables: list[TableData], stream: TextIO) -> None:
    parts = []
    for table in tables:
        lines = []
        if table.title:
            lines += [f"### {' '.join(table.title.split())}", ""]
        align = ["---:" if r else "---" for r in _right_aligned(table)]
        lines.append("| " + " | ".join(_md_cell(c) for c in table.columns) + " |")
        lines.append("| " + " | ".join(align) + " |")
        lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in table.rows]
        if table.caption:
            lines += ["", table.caption]
        parts.append("\n".join(lines))
    stream.write("\n\n".join(parts) + "\n")


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    return value


def _write_csv(tables: list[TableData], stream: TextIO) -> None:
    import csv

    w = csv.writer(stream, lineterminator="\n")
    several = len(tables) > 1
    for n, (table, name) in enumerate(zip(tables, _names(tables), strict=True)):
        if several:
            if n:
                stream.write("\n")
            stream.write(f"# {name}\n")
        w.writerow(table.columns)
        w.writerows([_csv_value(v) for v in row] for row in table.rows)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _default(value: Any) -> Any:
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        return float(cast(SupportsFloat, value))  # Decimal
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _records(table: TableData) -> list[dict[str, Any]]:
    columns = [str(c) for c in table.columns]
    return [{c: _json_value(v) for c, v in zip(columns, row, strict=False)} for row in table.rows]


def _write_json(tables: list[TableData], stream: TextIO) -> None:
    import orjson

    if len(tables) == 1:
        data: Any = _records(tables[0])
    else:
        data = {name: _records(t) for t, name in zip(tables, _names(tables), strict=True)}
    stream.write(orjson.dumps(data, default=_default, option=orjson.OPT_INDENT_2).decode() + "\n")


def _write_jsonl(tables: list[TableData], stream: TextIO) -> None:
    import orjson

    several = len(tables) > 1
    for table, name in zip(tables, _names(tables), strict=True):
        for record in _records(table):
            if several:
                record = {"table": name, **record}
            stream.write(orjson.dumps(record, default=_default).decode() + "\n")


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIALS))


def latex_escape(text: str) -> str:
    """``text`` safe inside a LaTeX paragraph or table cell (newlines become spaces)."""
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group(0)], " ".join(text.split("\n")))


def _write_latex(tables: list[TableData], stream: TextIO) -> None:
    parts = []
    for table, name in zip(tables, _names(tables), strict=True):
        spec = "".join("r" if r else "l" for r in _right_aligned(table))
        lines = [r"\begin{table}[htbp]", r"\centering"]
        if table.title:
            lines.append(rf"\caption{{{latex_escape(table.title)}}}")
        lines.append(rf"\label{{tab:{_slug(name)}}}")
        lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
        lines.append(" & ".join(latex_escape(str(c)) for c in table.columns) + r" \\")
        lines.append(r"\midrule")
        lines += [" & ".join(latex_escape(_text(v)) for v in row) + r" \\" for row in table.rows]
        lines += [r"\bottomrule", r"\end{tabular}"]
        if table.caption:
            lines += [r"\par\smallskip", rf"{{\footnotesize {latex_escape(table.caption)}}}"]
        lines.append(r"\end{table}")
        parts.append("\n".join(lines))
    stream.write("\n\n".join(parts) + "\n")


_WRITERS = {
    "table": _write_rich,
    "markdown": _write_markdown,
    "csv": _write_csv,
    "json": _write_json,
    "jsonl": _write_jsonl,
    "latex": _write_latex,
}
