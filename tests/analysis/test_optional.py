"""The topics extra is optional: halugen imports without it, and asking for it says how."""

from __future__ import annotations

import builtins
import subprocess
import sys
from pathlib import Path

import pytest

from halugen.analysis import TopicReport, analyse, plot
from halugen.errors import UsageError


@pytest.fixture
def without(monkeypatch):
    """Make the named top-level packages fail to import, as if not installed."""
    real_import = builtins.__import__

    def block(*names: str) -> None:
        def fake(name, *args, **kwargs):
            if name.split(".")[0] in names:
                raise ImportError(f"No module named {name!r}")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", fake)

    return block


def test_analysis_without_scikit_learn(without):
    without("sklearn", "numpy")
    with pytest.raises(UsageError, match=r"pip install 'halugen\[topics\]'"):
        analyse(["comet orbit"], None, task="qa")


def test_gensim_backend_without_gensim(without):
    pytest.importorskip("sklearn", reason="needs the topics extra")
    without("gensim")
    with pytest.raises(UsageError, match="pip install gensim"):
        analyse(["comet orbit"], None, task="qa", backend="gensim")


def test_figure_without_matplotlib(without, tmp_path: Path):
    without("matplotlib")
    report = TopicReport(task="qa", topic_set="all", topics=(), n_documents=0, n_failures=0)
    with pytest.raises(UsageError, match=r"halugen\[topics\]"):
        plot([report], tmp_path / "t.png")
    assert not (tmp_path / "t.png").exists()


def test_importing_halugen_needs_no_extra():
    code = (
        "import sys, halugen, halugen.analysis; "
        "bad = [m for m in ('sklearn', 'matplotlib', 'gensim') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
