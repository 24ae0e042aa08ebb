"""The wheel carries the built-in task folders and budgets/, and the public API is what
__all__ says."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import halugen

ROOT = Path(__file__).resolve().parents[1]


def test_public_api():
    assert set(halugen.__all__) >= {
        "RunConfig",
        "generate",
        "parse_budget",
        "HalugenError",
        "Simulator",
        "SimConfig",
    }
    for name in halugen.__all__:
        assert hasattr(halugen, name), name


@pytest.mark.timeout(600)
def test_wheel_ships_prompts_and_price_cards(tmp_path):
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = tmp_path.glob("halugen-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    for task in ("qa", "dialogue", "summarization", "general"):
        assert f"halugen/_data/prompts/{task}/task.toml" in names
        assert f"halugen/_data/prompts/{task}/prompts/judge_plain.txt" in names
    assert "halugen/_data/prompts/qa/prompts/sample_onepass.txt" in names
    assert "halugen/_data/budgets/openai.toml" in names
    assert "halugen/examples/qa_seeds.json" in names
    assert "halugen/view/static/view.js" in names  # the view page ships with the package
    # load a prompt and a price card from the unpacked wheel, not from the checkout
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    code = (
        "import halugen, halugen.prompts as p, halugen.cost.prices as b;"
        f"assert halugen.__file__.startswith({str(target)!r}), halugen.__file__;"
        "from halugen.tasks import builtin_task; from halugen.tasks.templates import task_template;"
        "t = task_template(builtin_task('qa'), 'filter'); assert t.hash;"
        "assert all(builtin_task(n).templates for n in ('qa', 'dialogue', 'summarization',"
        " 'general'));"
        f"assert str(builtin_task('qa').folder).startswith({str(target)!r});"
        "assert b.find_price('gpt-4o-mini').card == 'openai'; print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(target), "PATH": ""},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
