"""A table laid out for a terminal of a given width without cutting a figure.

Rich shrinks every column of a table wider than the terminal, and a shrunk column cuts its
cells with an ellipsis (``20…``, ``$0.0080…``). ``fit_table`` instead:

1. keeps every column at least as wide as its longest figure: a right-aligned (number)
   column as wide as its widest cell, so it never wraps; a text column as wide as its longest
   word (up to ``_TEXT_WORD``), its text wrapped between words;
2. when those widths do not fit, *splits* the table into several, each repeating the key
   columns (the text columns before the first number column) followed by as many other
   columns as fit;
3. when not even the keys and one other column fit, *stacks* it: one block per row, a
   column's name beside its value.

``halugen.tables`` uses it for every Rich table, the live view (progress.py) for its stage
table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol


class TableData(Protocol):
    """What a table to lay out must have (``tables.TableData`` has it); named here so this
    module, which ``tables`` uses, does not depend on it in turn."""

    @property
    def title(self) -> str | None: ...
    @property
    def caption(self) -> str | None: ...
    @property
    def columns(self) -> Sequence[Any]: ...
    @property
    def total_rows(self) -> int: ...


__all__ = ["fit_table"]

# a text column is never narrower than its longest word, up to this many cells; a longer
# word (a path) folds onto the next line rather than forcing the whole table apart
_TEXT_WORD = 30


def _cell_len(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _word_len(text: str) -> int:
    return max((_cell_len(w) for w in text.split()), default=0)


def _needs(
    columns: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]
) -> list[int]:
    """The narrowest each column may be without cutting a figure."""
    needs = []
    for i, (name, is_number) in enumerate(zip(columns, right, strict=True)):
        cells = [r[i] for r in rows if i < len(r)]
        if is_number:
            width = max((_cell_len(c) for c in cells), default=0)
        else:
            width = min(_TEXT_WORD, max((_word_len(c) for c in cells), default=0))
        needs.append(max(width, min(_TEXT_WORD, _word_len(name)), 1))
    return needs


def _naturals(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """How wide each column would like to be: its widest cell or header on one line."""
    return [
        max([_cell_len(name), *(_cell_len(r[i]) for r in rows if i < len(r))])
        for i, name in enumerate(columns)
    ]


def _widths(needs: Sequence[int], naturals: Sequence[int], room: int) -> list[int]:
    """Column widths within ``room`` cells: each at least its need, the room left shared a
    cell at a time among the columns that would like more. Rich is told these widths
    exactly: left to itself it may give a text column more than fits and crop the line."""
    widths = list(needs)
    spare = room - sum(widths)
    while spare > 0:
        wanting = [i for i, w in enumerate(widths) if w < naturals[i]]
        if not wanting:
            break
        for i in wanting[:spare]:
            widths[i] += 1
        spare -= min(spare, len(wanting))
    return widths


def _overhead(n: int, edge: bool) -> int:
    """Cells a table of ``n`` columns spends on borders and padding."""
    return 3 * n + 1 if edge else 3 * (n - 1)


def _groups(needs: Sequence[int], keys: int, width: int, edge: bool) -> list[list[int]] | None:
    """Column indices per table: the key columns, then as many others as fit; None when a
    key set and one other column do not fit."""
    key_width = sum(needs[:keys])
    groups: list[list[int]] = []
    current: list[int] = []
    for i in range(keys, len(needs)):
        trial = [*current, i]
        if key_width + sum(needs[j] for j in trial) + _overhead(keys + len(trial), edge) <= width:
            current = trial
            continue
        if not current:
            return None
        groups.append(current)
        current = [i]
        if key_width + needs[i] + _overhead(keys + 1, edge) > width:
            return None
    if current:
        groups.append(current)

    def fits(group: list[int]) -> bool:
        used = key_width + sum(needs[j] for j in group)
        return used + _overhead(keys + len(group), edge) <= width

    return [[*range(keys), *g] for g in _balanced(groups, needs, fits)]


def _balanced(
    groups: list[list[int]], needs: Sequence[int], fits: Callable[[list[int]], bool]
) -> list[list[int]]:
    """The same columns in as many groups, their widths evened out (a lone last column
    reads badly); the first fit is kept when evening out would need another group."""
    if len(groups) < 2:
        return groups
    columns = [i for g in groups for i in g]
    target = sum(needs[i] for i in columns) / len(groups)
    even: list[list[int]] = [[]]
    for i in columns:
        used = sum(needs[j] for j in even[-1])
        if even[-1] and used + needs[i] / 2 > target and len(even) < len(groups):
            even.append([])
        even[-1].append(i)
    return even if all(fits(g) for g in even) else groups


def fit_table(
    table: TableData,
    cells: Sequence[Sequence[str]],
    right: Sequence[bool],
    width: int | None,
    *,
    edge: bool = True,
) -> list[Any]:
    """Rich renderables showing ``table`` within ``width`` cells (None: any width).

    ``cells`` are the rows as display text, ``right`` whether each column is right-aligned
    (a column of numbers); ``edge`` False draws no outer border (the live view's style).
    The last ``table.total_rows`` rows are totals, set off by a rule and in bold.
    """
    columns = [str(c) for c in table.columns]
    needs = _needs(columns, cells, right)
    naturals = _naturals(columns, cells)
    whole = list(range(len(columns)))
    if width is None:
        return [_rich_table(table, cells, right, None, whole, edge, first=True, last=True)]

    def sized(chosen: Sequence[int]) -> list[int | None]:
        room = width - _overhead(len(chosen), edge)
        fitted = _widths([needs[i] for i in chosen], [naturals[i] for i in chosen], room)
        out: list[int | None] = [None] * len(columns)
        for i, w in zip(chosen, fitted, strict=True):
            out[i] = w
        return out

    if sum(needs) + _overhead(len(columns), edge) <= width:
        return [_rich_table(table, cells, right, sized(whole), whole, edge, first=True, last=True)]
    keys = 0
    while keys < len(columns) and not right[keys]:
        keys += 1
    if keys == len(columns):  # text only: nothing to repeat beside
        keys = 0
    groups = _groups(needs, keys, width, edge) if keys < len(columns) else None
    if groups is None:
        return [_stacked(table, cells, width)]
    return [
        _rich_table(table, cells, right, sized(g), g, edge, first=n == 0, last=n == len(groups) - 1)
        for n, g in enumerate(groups)
    ]


def _rich_table(
    table: TableData,
    cells: Sequence[Sequence[str]],
    right: Sequence[bool],
    widths: Sequence[int | None] | None,
    chosen: Sequence[int],
    edge: bool,
    *,
    first: bool,
    last: bool,
) -> Any:
    from rich.table import Table
    from rich.text import Text

    title = None
    if table.title:
        title = Text(table.title if first else f"{table.title} (continued)")
    rich_table = Table(
        title=title,
        caption=Text(table.caption) if table.caption and last else None,
        title_justify="left",
        caption_justify="left",
        show_edge=edge,
        pad_edge=edge,
    )
    for i in chosen:
        rich_table.add_column(
            Text(str(table.columns[i])),
            justify="right" if right[i] else "left",
            # never narrower than its longest figure: only words wrap, headers too
            width=None if widths is None else widths[i],
            overflow="fold",
        )
    totals = len(cells) - table.total_rows
    for n, row in enumerate(cells):
        if n == totals and n:
            rich_table.add_section()
        values = [Text(row[i]) if i < len(row) else Text("") for i in chosen]
        rich_table.add_row(*values, style="bold" if n >= totals else None)
    return rich_table


def _stacked(table: TableData, cells: Sequence[Sequence[str]], width: int) -> Any:
    """One block per row: each column's name, then its value (wrapped, never cut)."""
    from rich.console import Group
    from rich.rule import Rule
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = []
    if table.title:
        parts.append(Text(table.title, style="bold"))
    label_width = min(max((_cell_len(str(c)) for c in table.columns), default=0), width // 3)
    for n, row in enumerate(cells):
        parts.append(Rule(style="dim", characters="─"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", width=label_width, overflow="fold")
        grid.add_column(overflow="fold")
        style = "bold" if n >= len(cells) - table.total_rows else None
        for name, value in zip(table.columns, row, strict=False):
            grid.add_row(Text(str(name)), Text(value, style=style or ""))
        parts.append(grid)
    if table.caption:
        parts.append(Text(table.caption))
    return Group(*parts)
