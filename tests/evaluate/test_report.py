"""Results from the judgements table, and the paper-style tables through the one renderer
(halugen/tables.py) as a terminal table, Markdown and CSV."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from halugen.evaluate.report import csv_table, report_tables
from halugen.evaluate.results import reply_shape, results_from_store
from halugen.paper import (
    PAPER_CHATGPT,
    PAPER_FOOTNOTE,
    PAPER_TABLE8_BASELINE,
    paper_label,
    paper_reference,
)
from halugen.store.db import open_store
from halugen.tables import render_tables


def render_markdown(rows) -> str:
    buf = io.StringIO()
    render_tables(report_tables(rows), "markdown", buf)
    return buf.getvalue()


def render_csv(rows) -> str:
    buf = io.StringIO()
    render_tables([csv_table(rows)], "csv", buf)
    return buf.getvalue()


T0 = datetime(2024, 5, 1, 12, 0, 0)
_INSERT = f"INSERT INTO judgements VALUES ({', '.join('?' * 19)})"


def _row(
    run: str,
    task: str,
    key: str,
    strategy: str,
    model: str,
    truth: bool,
    verdict: str,
    length: int | None = 10,
    shown: str | None = None,
    at: int = 0,
    first: str | None = None,  # the first reply's verdict when it was asked again
    raw: str | None = None,
    reader: str | None = "strict",  # None: a row written before the reader was recorded
) -> list:
    shown = shown or ("both" if strategy == "contrast" else "hallucinated" if truth else "right")
    again = first is not None
    return [
        run,
        task,
        key,
        key,
        strategy,
        model,
        shown,
        truth,
        verdict,
        None,
        length,
        raw if raw is not None else f"Verdict: {verdict}",
        None,
        None,
        T0 + timedelta(seconds=at),
        2 if again else 1,
        first if again else verdict,
        "Maybe it is." if again else None,
        reader,
    ]


@pytest.fixture
def store(tmp_path: Path):
    with open_store(tmp_path / "eval.duckdb") as s:
        rows = []
        # qa / plain / model-a: 10 items: truth alternates; 6 right, 3 wrong, 1 invalid
        verdicts = ["yes", "no", "yes", "no", "yes", "no", "no", "yes", "yes", "invalid"]
        for i, v in enumerate(verdicts):
            truth = i % 2 == 0
            # q07 and q09 were unreadable at first and asked again: q07 then read, q09 not
            first = "invalid" if i in (7, 9) else None
            rows.append(
                _row(
                    "r1",
                    "qa",
                    f"q{i:02d}",
                    "plain",
                    "model-a",
                    truth,
                    v,
                    length=60 if truth else 8,
                    first=first,
                )
            )
        # the same item written again later in the same run: counts once, the latest ("no")
        rows.append(_row("r1", "qa", "q00", "plain", "model-a", True, "no", 60, at=5))
        # dialogue / knowledge / model-a: 4 items, all right
        for i in range(4):
            truth = i < 2
            rows.append(
                _row(
                    "r1",
                    "dialogue",
                    f"d{i}",
                    "knowledge",
                    "model-a",
                    truth,
                    "yes" if truth else "no",
                )
            )
        # qa / contrast / model-b in another run: 3 right picks of 4
        for i, v in enumerate(["yes", "yes", "no", "yes"]):
            rows.append(_row("r2", "qa", f"c{i}", "contrast", "model-b", True, v, None))
        # a run left out by the filter
        rows.append(_row("r3", "summarization", "s0", "plain", "model-c", True, "yes"))
        s.conn.executemany(
            _INSERT,
            rows,
        )
        yield s


def test_results_group_pool_and_deduplicate(store) -> None:
    rows = results_from_store(store)
    assert [(r.task, r.strategy, r.model) for r in rows] == [
        ("qa", "plain", "model-a"),
        ("qa", "contrast", "model-b"),
        ("dialogue", "knowledge", "model-a"),
        ("summarization", "plain", "model-c"),
    ]
    qa = rows[0]
    m = qa.metrics
    assert m.n == 10 and m.invalid == 1
    # hallucinated (i even): no (the rewrite), yes, yes, no, yes; right: no, no, no, yes
    assert (m.tp, m.fn, m.tn, m.fp) == (3, 2, 3, 1)
    assert m.accuracy == pytest.approx(0.6)
    assert qa.baselines["always_yes"] == pytest.approx(0.5)
    assert qa.baselines["length_only"] == 1.0  # the crafted lengths give the truth away
    assert qa.runs == ("r1",)
    contrast = rows[1]
    assert contrast.metrics.accuracy == pytest.approx(0.75)
    assert all(v is None for v in contrast.baselines.values())


def test_results_filter_by_run_and_accept_a_bare_connection(store) -> None:
    rows = results_from_store(store.conn, ["r1", "r2"])
    assert {r.model for r in rows} == {"model-a", "model-b"}
    assert results_from_store(store, []) == []
    assert [r.task for r in results_from_store(store, ["r3"])] == ["summarization"]


def test_markdown_has_the_paper_table_with_reference_rows(store) -> None:
    md = render_markdown(results_from_store(store))
    assert "| Model | Strategy | QA | Dialogue | Summarization | General |" in md
    # each reference row names the paper's table it comes from
    assert "| ChatGPT (HaluEval Table 5) | plain | 62.59 | 72.40 | 58.53 | 79.44 |" in md
    assert "| ChatGPT (HaluEval Table 8) | knowledge | 76.83 | 73.80 | — | 90.73 |" in md
    assert "| ChatGPT (HaluEval Table 8) | contrast | 49.19 | 68.67 | 49.46 | — |" in md
    assert "| cot |" not in md  # no measured cot rows, no cot reference
    # Table 8's own baseline for General differs from Table 5's: the note says so
    assert "86.22" in md and "79.44 in Table 5" in md
    # measured: 6 of 10, Wilson half-width (0.8318 - 0.3127) / 2 = 26.0 points
    assert "| model-a | plain | 60.0 ±26.0 | — | — | — |" in md
    assert "| model-a | knowledge | — | 100.0 ±" in md
    lines = md.splitlines()
    # each strategy's reference row comes right after its measured rows
    plain_at = lines.index("| model-a | plain | 60.0 ±26.0 | — | — | — |")
    assert lines[plain_at + 2].startswith("| ChatGPT (HaluEval Table 5) | plain |")
    for title in ("### QA: details", "### Dialogue: details", "### Summarization: details"):
        assert title in md
    assert "### General: details" not in md
    # the details: accuracy with its interval, invalid rate, baselines
    detail = next(x for x in lines if x.startswith("| model-a | plain | parse |"))
    cells = [c.strip() for c in detail.strip("|").split("|")]
    # each row says how it was scored, by which reader and what was judged (a run the
    # store has no record of is named as unknown)
    assert cells[2:7] == ["parse", "strict", "unknown: run r1", "10", "10"]
    assert cells[7] == "60.0 [31.3, 83.2]"
    # accuracy of the valid, then first-reply invalids, re-asks and final invalids apart
    assert cells[8:12] == ["66.7", "20.0", "2", "10.0"]
    assert cells[-3:] == ["50.0", "50.0", "100.0"]
    contrast = next(x for x in lines if x.startswith("| model-b | contrast | parse |"))
    assert contrast.count("—") == 8  # Yes/No metrics and baselines do not apply


def test_csv_round_trips_the_numbers(store) -> None:
    text = render_csv(results_from_store(store))
    rows = list(csv.DictReader(io.StringIO(text)))
    measured = [r for r in rows if r["source"] == "measured"]
    paper = [r for r in rows if r["source"] == "paper"]
    assert len(measured) == 4
    assert len(paper) == sum(len(v) for v in PAPER_CHATGPT.values())
    qa = measured[0]
    assert (qa["task"], qa["model"], qa["strategy"], qa["n"]) == ("qa", "model-a", "plain", "10")
    assert float(qa["accuracy"]) == pytest.approx(0.6)
    assert float(qa["invalid_rate"]) == pytest.approx(0.1)
    assert (qa["first_invalid"], qa["reasked"], qa["invalid"]) == ("2", "2", "1")
    assert float(qa["length_only"]) == 1.0 and qa["runs"] == "r1"
    contrast = measured[1]
    assert contrast["strategy"] == "contrast" and float(contrast["accuracy"]) == 0.75
    for name in (
        "precision",
        "recall",
        "f1",
        "yes_rate",
        "balanced_accuracy",
        "always_no",
        "length_only",
    ):
        assert contrast[name] == "", name
    gen = next(r for r in paper if r["strategy"] == "plain" and r["task"] == "general")
    assert float(gen["accuracy"]) == pytest.approx(0.7944)
    assert gen["model"] == "ChatGPT (HaluEval Table 5)"
    cot = next(r for r in paper if r["strategy"] == "cot" and r["task"] == "general")
    assert float(cot["accuracy"]) == pytest.approx(0.865)
    assert cot["model"] == "ChatGPT (HaluEval Table 8)"


def test_the_terminal_table_shows_every_table(store) -> None:
    tables = report_tables(results_from_store(store))
    assert len(tables) == 5  # accuracy, QA, dialogue, summarization details, reply shapes
    buf = io.StringIO()
    render_tables(tables, "table", buf)
    out = buf.getvalue()
    assert "Recognition accuracy (%)" in out
    assert "ChatGPT (HaluEval Table 5)" in out and "62.59" in out and "60.0 ±26.0" in out
    assert "First replies: the most common shapes" in out
    assert "QA: details" in out and "Dialogue: details" in out
    assert "chance 50%" in " ".join(out.split())  # captions wrap to the table's width


def test_empty_results_still_render() -> None:
    md = render_markdown([])
    assert "| Model | Strategy | QA |" in md and "| ChatGPT (HaluEval" not in md
    assert render_csv([]).splitlines()[0].startswith("source,task,model")
    (only,) = report_tables([])
    render_tables([only], "table", io.StringIO())


def test_every_paper_figure_names_its_table_and_matches_the_paper() -> None:
    # HaluEval (arXiv 2305.11747): Table 5 for ChatGPT without a strategy, Table 8 for the
    # strategies (with its own no-strategy row, General 86.22)
    assert PAPER_CHATGPT == {
        "plain": {"qa": 62.59, "dialogue": 72.40, "summarization": 58.53, "general": 79.44},
        "knowledge": {"qa": 76.83, "dialogue": 73.80, "general": 90.73},
        "cot": {"qa": 59.58, "dialogue": 71.39, "summarization": 61.21, "general": 86.50},
        "contrast": {"qa": 49.19, "dialogue": 68.67, "summarization": 49.46},
    }
    assert PAPER_TABLE8_BASELINE["general"] == 86.22
    assert {r["table"] for r in paper_reference() if r["strategy"] == "plain"} == {"Table 5"}
    assert {r["table"] for r in paper_reference() if r["strategy"] != "plain"} == {"Table 8"}
    assert all(r["model"].endswith(f"{r['table']})") for r in paper_reference())
    assert paper_label("cot") == "ChatGPT (HaluEval Table 8)"
    assert "86.22" in PAPER_FOOTNOTE and "79.44" in PAPER_FOOTNOTE


def test_reply_shapes_show_what_the_judges_wrote_and_how_it_was_read(store) -> None:
    (qa,) = [r for r in results_from_store(store) if r.task == "qa" and r.strategy == "plain"]
    assert (qa.first_invalid, qa.reasked) == (2, 2)
    shapes = {(s.shape, s.verdict): s.count for s in qa.shapes}
    # first replies: the two asked again were "Maybe it is.", read as invalid
    assert shapes[("Maybe it is.", "invalid")] == 2
    assert shapes[("Verdict: yes", "yes")] == 3  # q02, q04, q08 (q07 was asked again)
    assert shapes[("Verdict: no", "no")] == 5
    assert sum(shapes.values()) <= qa.metrics.n
    buf = io.StringIO()
    render_tables(report_tables(results_from_store(store)), "markdown", buf)
    md = buf.getvalue()
    assert "### First replies: the most common shapes" in md
    assert "| QA | model-a | plain | Maybe it is. | invalid | 2 | 20.0 |" in md


@pytest.mark.parametrize(
    ("raw", "shape"),
    [
        ("Verdict: Yes", "Verdict: Yes"),
        ("  Verdict:\n  No ", "Verdict: No"),
        ("The year 1889 is right.", "The year 0 is right."),
        ("<think>check</think>\nVerdict: No", "<think>…</think> Verdict: No"),
        ("<think>still thinking", "<think>… (no answer)"),
        ("", "(empty)"),
        (
            "Reasoning: the knowledge names Salzburg and the answer names Vienna.\nVerdict: Yes",
            "Reasoning: the knowledge … mes Vienna. Verdict: Yes",
        ),
    ],
)
def test_reply_shape(raw: str, shape: str) -> None:
    assert reply_shape(raw) == shape


def test_every_figure_says_which_reader_produced_it(tmp_path: Path) -> None:
    """Strict and lenient verdicts are never pooled into one figure; each row, the accuracy
    table's label and the CSV name the reader; rows stored before the reader was recorded
    were read by the interpreting reader and say lenient."""
    with open_store(tmp_path / "eval.duckdb") as s:
        rows = [_row("r1", "qa", f"q{i}", "plain", "model-a", i % 2 == 0, "yes") for i in range(4)]
        rows += [
            _row("r2", "qa", f"q{i}", "plain", "model-a", i % 2 == 0, "no", reader="lenient")
            for i in range(4)
        ]
        rows += [_row("r2", "qa", "q9", "plain", "model-a", True, "yes", reader=None)]
        s.conn.executemany(
            _INSERT,
            rows,
        )
        results = results_from_store(s)
    assert [(r.reader, r.metrics.n) for r in results] == [("lenient", 5), ("strict", 4)]
    md = render_markdown(results)
    assert "| model-a | plain | 50.0 ±" in md  # strict: the default, unmarked
    assert "| model-a (lenient read) | plain |" in md
    assert "unless a label says" in md
    assert any(line.startswith("| model-a | plain | parse | lenient |") for line in md.splitlines())
    measured = [r for r in csv.DictReader(io.StringIO(render_csv(results))) if r["reader"]]
    assert [r["reader"] for r in measured] == ["lenient", "strict"]
