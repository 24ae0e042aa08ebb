"""`halugen topics`: the figure in the format --out names, and whose failures it shows."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from halugen.analysis import choose_eval_run
from halugen.cli import main
from halugen.errors import UsageError
from halugen.store.db import open_store
from tests.export.stores import T0, add_judgement, add_run, add_sample

pytest.importorskip("sklearn", reason="needs the topics extra")
pytest.importorskip("matplotlib", reason="needs the topics extra")


@pytest.fixture
def db(tmp_path):
    """qa samples, an older plain eval run and a newer contrast one."""
    path = tmp_path / "t.duckdb"
    store = open_store(path)
    add_run(store, "gen")
    fields = [add_sample(store, "gen", "qa", i) for i in range(30)]
    add_run(store, "ev-plain", kind="eval", model="judge-a")
    add_run(store, "ev-contrast", kind="eval", model="judge-b")
    for n, f in enumerate(fields):
        add_judgement(
            store,
            "ev-plain",
            "qa",
            f,
            shown="hallucinated",
            verdict="no" if n % 2 else "yes",
            model="judge-a",
            at=T0,
        )
        add_judgement(
            store,
            "ev-contrast",
            "qa",
            f,
            shown="both",
            verdict="no",
            model="judge-b",
            strategy="contrast",
            at=T0 + timedelta(hours=1),
        )
    store.close()
    return path


def test_default_is_the_newest_plain_run_and_is_named(db, tmp_path, capsys):
    out = tmp_path / "topics.svg"
    assert (
        main(
            [
                "topics",
                "--task",
                "qa",
                "--db",
                str(db),
                "--out",
                str(out),
                "--topics",
                "3",
                "--failure-topics",
                "2",
            ]
        )
        == 0
    )
    text = out.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text  # an SVG, not PNG bytes
    assert "failures from eval run ev-plain (judge-a, plain strategy)" in text
    err = capsys.readouterr().err
    assert "failures from eval run ev-plain (judge-a, plain strategy)" in err
    assert "1 other eval run(s)" in err and "--eval-run" in err
    with open_store(db, read_only=True) as store:
        rows = store.query(
            "SELECT DISTINCT eval_run, eval_model, eval_strategy FROM topic_results "
            "WHERE topic_set = 'all'"
        )
    assert rows == [("ev-plain", "judge-a", "plain")]


@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_named_run_and_other_formats(db, tmp_path, ext, magic, capsys):
    out = tmp_path / f"t.{ext}"
    assert (
        main(
            [
                "topics",
                "--task",
                "qa",
                "--db",
                str(db),
                "--out",
                str(out),
                "--eval-run",
                "ev-contrast",
                "--topics",
                "3",
                "--failure-topics",
                "2",
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert out.read_bytes().startswith(magic)
    captured = capsys.readouterr()
    assert "ev-contrast (judge-b, contrast strategy)" in captured.err
    assert "other eval run" not in captured.err  # named, not chosen
    rows = json.loads(captured.out)  # the topics as JSON records, numbers as numbers
    assert {r["topic set"] for r in rows} <= {"all", "failures"} and len(rows) >= 3
    assert abs(sum(r["share of samples"] for r in rows if r["topic set"] == "all") - 1) < 1e-3


def test_bad_extension_fails_before_the_analysis(db, tmp_path):
    assert main(["topics", "--task", "qa", "--db", str(db), "--out", str(tmp_path / "t.jpg")]) == 2
    assert not (tmp_path / "t.jpg").exists()


def test_choose_eval_run(db):
    with open_store(db, read_only=True) as store:
        chosen = choose_eval_run(store.conn, "qa")
        assert (chosen.run_id, chosen.strategy, chosen.others) == ("ev-plain", "plain", 1)
        assert choose_eval_run(store.conn, "dialogue") is None
        with pytest.raises(UsageError, match="no qa judgements"):
            choose_eval_run(store.conn, "qa", "nope")
