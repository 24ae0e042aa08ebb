"""Figures: the file's extension picks the format; the content is what the data says."""

from __future__ import annotations

from datetime import timedelta

import pytest

from halugen.cli import main
from halugen.errors import UsageError
from halugen.figures.accuracy import AccuracyRow, plot_accuracy, rows_from_report
from halugen.figures.canvas import figure_format
from halugen.figures.cost import CostData, cost_data, plot_cost
from halugen.store.db import open_store
from tests.export.stores import T0, TRICKY, add_judgement, add_run, add_sample, insert

pytest.importorskip("matplotlib", reason="needs the topics extra")

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-"}


def svg_text(path) -> str:
    text = path.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    return text


def rows() -> list[AccuracyRow]:
    base = {"always_no": 0.5, "always_yes": 0.5, "length_only": 0.61}
    return [
        AccuracyRow("qa", "model-a", "plain", 0.7, (0.65, 0.75), 400, base),
        AccuracyRow("qa", "model-a", "knowledge", 0.8, (0.76, 0.84), 400, base),
        AccuracyRow("dialogue", "model-a", "plain", 0.66, (0.6, 0.7), 300, base),
        AccuracyRow("qa", "ChatGPT (paper)", "plain", 0.6259, reference=True),
    ]


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_the_extension_picks_the_format(tmp_path, ext):
    path = plot_accuracy(rows(), tmp_path / f"a.{ext}")
    if ext == "svg":
        svg_text(path)
    else:
        assert path.read_bytes().startswith(MAGIC[ext])


def test_accuracy_figure_content(tmp_path):
    text = svg_text(plot_accuracy(rows(), tmp_path / "a.svg"))
    for expected in (
        "model-a · plain",
        "model-a · knowledge",
        "ChatGPT (paper) · plain",
        "HaluEval paper (ChatGPT)",
        "always No",
        "always Yes",
        "length only",
        "Wilson 95% interval",
        "QA",
        "Dialogue",
        "70.0",  # the accuracy is written by its dot
    ):
        assert expected in text, expected


def test_same_data_same_bytes(tmp_path):
    a = plot_accuracy(rows(), tmp_path / "a.svg").read_bytes()
    b = plot_accuracy(rows(), tmp_path / "b.svg").read_bytes()
    assert a == b


def test_bad_extension_and_nothing_measured(tmp_path):
    with pytest.raises(UsageError, match=r"\.png, \.svg or \.pdf"):
        figure_format(tmp_path / "a.jpg")
    with pytest.raises(UsageError, match="halugen eval"):
        plot_accuracy([rows()[-1]], tmp_path / "a.png")


def eval_store(path):
    store = open_store(path)
    add_run(store, "gen")
    fields = [add_sample(store, "gen", "qa", i) for i in range(6)]
    add_run(store, "ev", kind="eval", model=f"judge {TRICKY} $5")
    for n, f in enumerate(fields):
        add_judgement(
            store, "ev", "qa", f, shown="hallucinated", verdict="yes", model=f"judge {TRICKY} $5"
        )
        add_judgement(
            store,
            "ev",
            "qa",
            f,
            shown="right",
            verdict="no" if n % 2 else "yes",
            model=f"judge {TRICKY} $5",
        )
    # ledger: reserve then settle per call, commits spread over 90 s
    for call in range(12):
        at = T0 + timedelta(seconds=call * 8)
        stage = "sample" if call % 3 else "filter"
        for event, pusd in (("reserve", 9_000_000_000), ("settle", 2_000_000_000)):
            insert(
                store,
                "ledger",
                {
                    "call_id": call,
                    "res_no": 0,
                    "run_id": "gen",
                    "event": event,
                    "pusd": pusd,
                    "stage": stage,
                    "task": "qa",
                    "model": "m",
                    "created_at": at,
                },
            )
    # one call still open (in flight, or left by a crash): counted at its reservation
    insert(
        store,
        "ledger",
        {
            "call_id": 99,
            "res_no": 0,
            "run_id": "gen",
            "event": "reserve",
            "pusd": 5_000_000_000,
            "stage": "sample",
            "task": "qa",
            "model": "m",
            "created_at": T0 + timedelta(seconds=95),
        },
    )
    store.conn.execute(
        "UPDATE sample_rows SET created_at = ? + to_seconds(CAST(source_line * 15 AS BIGINT))",
        [T0],
    )
    store.close()
    return path


def test_report_plot_from_the_store(tmp_path, capsys):
    db = eval_store(tmp_path / "e.duckdb")
    out = tmp_path / "fig" / "report.svg"
    assert main(["report", "--db", str(db), "--plot", str(out)]) == 0
    text = svg_text(out)
    assert "ChatGPT (HaluEval Table 5) · plain" in text and TRICKY in text
    assert "$5" in text  # a dollar sign in data is text, not mathtext
    assert f"figure: {out}" in capsys.readouterr().err
    # the accuracy drawn is the report's: 6 of 6 hallucinated + 3 of 6 right = 75.0
    assert "75.0" in text
    assert main(["report", "--db", str(db), "--plot", str(tmp_path / "r.gif")]) == 2


def test_rows_from_report_adds_the_papers_rows_for_what_was_measured(tmp_path):
    from halugen.evaluate.results import results_from_store

    db = eval_store(tmp_path / "e.duckdb")
    with open_store(db, read_only=True) as store:
        results = results_from_store(store.conn)
    made = rows_from_report(results)
    assert [(r.task, r.strategy, r.reference) for r in made] == [
        ("qa", "plain", False),
        ("qa", "plain", True),
    ]
    assert made[0].ci is not None and made[0].ci[0] < 0.75 < made[0].ci[1]
    assert made[1].accuracy == pytest.approx(0.6259)


def test_cost_data_and_figure(tmp_path, capsys):
    db = eval_store(tmp_path / "e.duckdb")
    with open_store(db, read_only=True) as store:
        data = cost_data(store)  # the newest generation run
    assert data.run_id == "gen" and data.unit == "accepted sample"
    assert sorted(data.spend) == [("qa", "filter"), ("qa", "sample")]
    assert data.spend[("qa", "filter")][-1] == (72.0, pytest.approx(4 * 0.002))
    assert data.spend[("qa", "sample")][-1] == (95.0, pytest.approx(8 * 0.002 + 0.005))
    spent = store_spent(db, "gen")
    assert sum(s[-1][1] for s in data.spend.values()) == pytest.approx(spent)  # = run_spend
    assert [n for _, n in data.accepted["qa"]] == [1, 2, 3, 4, 5, 6]
    out = tmp_path / "cost.svg"
    assert main(["status", "--db", str(db), "--plot", str(out)]) == 0
    text = svg_text(out)
    assert "Spend per task and stage" in text and "Cost per accepted sample" in text
    assert "qa / sample: $0.0210" in text and "qa / filter: $0.0080" in text
    # at the end: $0.029 over 6 samples
    assert "qa: $0.00483 over 6" in text
    assert "figure of run gen" in capsys.readouterr().err
    for ext in ("png", "pdf"):
        path = plot_cost(data, tmp_path / f"c.{ext}")
        assert path.read_bytes().startswith(MAGIC[ext])


def store_spent(db, run_id: str) -> float:
    with open_store(db, read_only=True) as store:
        return store.query("SELECT spent_usd FROM run_spend WHERE run_id = ?", [run_id])[0][0]


def test_cost_figure_errors(tmp_path):
    db = tmp_path / "empty.duckdb"
    store = open_store(db)
    add_run(store, "r")
    with pytest.raises(UsageError, match="no spend"):
        cost_data(store)
    with pytest.raises(UsageError, match="no run 'x'"):
        cost_data(store, "x")
    store.close()
    empty = CostData("r", "generate", "m", "accepted sample", {("qa", "s"): [(1.0, 0.5)]}, {})
    assert plot_cost(empty, tmp_path / "c.png").exists()  # no samples yet: said in the panel
