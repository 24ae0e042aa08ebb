"""One table renderer for every command: formats, escaping, never markup, full width in pipes."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from halugen.tables import FORMATS, TableData, render_table, render_tables

TRICKY = "[/] [bold]x[/bold] :ID: a|b"
LONG = "word " * 60  # 300 characters: far past 80 columns


def rendered(fmt: str, tables=None, stream=None) -> str:
    stream = stream or io.StringIO()
    render_tables(
        tables
        or [TableData("Title [/]", ["name", "n", "ratio", "empty"], [[TRICKY, 3, 0.125, None]])],
        fmt,
        stream,
    )
    return stream.getvalue()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("fmt", FORMATS)
def test_markup_and_emoji_codes_are_printed_as_they_are(fmt):
    text = rendered(fmt)
    expected = TRICKY
    if fmt == "markdown":
        expected = TRICKY.replace("|", "\\|")
    elif fmt == "latex":
        expected = "[/] [bold]x[/bold] :ID: a|b"
    elif fmt == "json":
        expected = json.dumps(TRICKY)[1:-1]
    assert expected in text
    assert "🆔" not in text and "\x1b[" not in text


def test_table_is_full_width_when_not_a_terminal():
    text = rendered("table", [TableData(None, ["a", "b"], [[LONG.strip(), 1]])])
    assert LONG.strip() in text  # one line, not folded at 80 columns
    assert max(len(line) for line in text.splitlines()) > 300


def test_table_fits_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = rendered("table", [TableData(None, ["a", "b"], [[LONG.strip(), 1]])], Terminal())
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # a terminal gets styles
    assert max(len(line) for line in text.splitlines()) <= 80


def test_markdown():
    text = rendered("markdown")
    lines = text.splitlines()
    assert lines[0] == "### Title [/]"
    assert lines[2] == "| name | n | ratio | empty |"
    assert lines[3] == "| --- | ---: | ---: | --- |"  # numbers right-aligned
    assert lines[4] == "| [/] [bold]x[/bold] :ID: a\\|b | 3 | 0.125 |  |"


def test_csv_and_json_keep_values():
    rows = list(csv.reader(io.StringIO(rendered("csv"))))
    assert rows == [["name", "n", "ratio", "empty"], [TRICKY, "3", "0.125", ""]]
    assert json.loads(rendered("json")) == [{"name": TRICKY, "n": 3, "ratio": 0.125, "empty": None}]


def test_several_tables():
    tables = [
        TableData("Runs", ["a"], [[1]], name="runs"),
        TableData("Spend per stage", ["b"], [["x"]]),
    ]
    assert json.loads(rendered("json", tables)) == {
        "runs": [{"a": 1}],
        "spend_per_stage": [{"b": "x"}],
    }
    assert rendered("csv", tables) == "# runs\na\n1\n\n# spend_per_stage\nb\nx\n"
    assert rendered("markdown", tables).count("### ") == 2
    assert rendered("latex", tables).count(r"\begin{table}") == 2


def test_latex_is_booktabs_and_escaped():
    text = rendered(
        "latex",
        [
            TableData(
                "Cost & 100% of $5_x",
                ["model", "acc"],
                [["a_b & c % d $ # { } ~ ^ \\", 0.5]],
                caption="note",
            )
        ],
    )
    assert r"\begin{tabular}{lr}" in text
    assert text.index(r"\toprule") < text.index(r"\midrule") < text.index(r"\bottomrule")
    assert r"\caption{Cost \& 100\% of \$5\_x}" in text
    assert (
        r"a\_b \& c \% d \$ \# \{ \} \textasciitilde{} \textasciicircum{} \textbackslash{} & 0.5 \\"
        in text
    )
    assert "note" in text


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown table format"):
        render_table(None, ["a"], [], "html", io.StringIO())


def test_only_the_renderer_and_the_live_view_build_tables():
    """Command output goes through halugen/tables.py (laid out for a terminal by
    table_layout.py, which the live view (progress.py) uses too). No other module builds a
    Rich table or writes CSV or Markdown tables itself."""
    import halugen

    root = Path(halugen.__file__).parent
    allowed = {root / "tables.py", root / "table_layout.py", root / "progress.py"}
    builders = re.compile(r"from rich\.table import|rich\.table\.Table|csv\.writer\(|\| ---")
    found = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path not in allowed and builders.search(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "--model", "gpt-4o-mini"],
        ["report"],
        ["audit"],
        ["batch", "status"],
        ["status"],
        ["sql", "SELECT 1"],
        ["topics", "-t", "qa"],
        ["annotate", "resolve"],
    ],
)
def test_every_command_that_prints_tables_takes_every_format(argv):
    from halugen.cli import build_parser

    for fmt in FORMATS:
        assert build_parser().parse_args([*argv, "--format", fmt]).format == fmt


def test_estimate_prints_through_the_renderer(hotpot_file, capsys):
    from halugen.cli import main

    seeds = str(hotpot_file(7))
    assert main(["estimate", "--seeds", seeds, "--model", "gpt-4o-mini", "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)  # two tables: the run, and ways to pay
    (row,) = tables["estimate"]
    assert (row["task"], row["seeds"], row["calls"], row["bad records"]) == ("qa", 7, 21, 0)
    assert {r["way"] for r in tables["ways"]} >= {"interactive", "batch", "most it can cost"}
    assert main(["estimate", "--seeds", seeds, "--model", "gpt-4o-mini", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "# estimate"
    assert lines[1].startswith("task,seeds,bad records,calls") and lines[2].startswith("qa,7,0,21")
