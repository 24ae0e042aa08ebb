"""The topic figure is a real PNG, with or without failure information."""

from __future__ import annotations

from pathlib import Path

import pytest

from halugen.analysis import Topic, TopicReport, plot
from halugen.analysis.figure import _bars
from halugen.errors import UsageError

pytest.importorskip("matplotlib", reason="needs the topics extra")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _report(topic_set: str, k: int, failures: bool) -> TopicReport:
    topics = tuple(
        Topic(
            index=i,
            top_words=tuple(f"word{i}_{j}" for j in range(10)),
            share_samples=(k - i) / sum(range(1, k + 1)),
            share_failures=(1.0 if i == k - 1 else 0.0) if failures else None,
            coherence=-1.0 - i / 10,
        )
        for i in range(k)
    )
    return TopicReport(
        task="qa",
        topic_set=topic_set,
        topics=topics,
        n_documents=120,
        n_failures=12 if failures else 0,
    )


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_two_panels_with_failures(tmp_path):
    path = plot(
        [_report("all", 10, True), _report("failures", 5, True)], tmp_path / "out" / "topics.png"
    )
    assert path == tmp_path / "out" / "topics.png"
    width, height = _png_size(path)
    one_width, one_height = _png_size(plot([_report("all", 10, True)], tmp_path / "one.png"))
    assert width == one_width and height > one_height * 1.4  # a second panel below


def test_one_panel_without_failures(tmp_path):
    path = plot([_report("all", 4, False)], tmp_path / "t.png")
    width, height = _png_size(path)
    assert path.stat().st_size > 1000 and width > height > 0


def test_bar_series_per_panel():
    assert [label for label, _, _ in _bars(_report("all", 3, True))] == [
        "share of samples",
        "share of failures",
    ]
    assert [label for label, _, _ in _bars(_report("all", 3, False))] == ["share of samples"]
    ((label, _, values),) = _bars(_report("failures", 3, True))
    assert label == "share of failures" and values == [3 / 6, 2 / 6, 1 / 6]


def test_nothing_to_plot(tmp_path):
    with pytest.raises(UsageError):
        plot([], tmp_path / "t.png")
