"""The README's tour runs as written, against the simulator, command after command.

The block is read from README.md itself, so a command edited there is the command tested.
Two lines are played by the test instead: the simulator is the fixture's (the same server,
in a thread), and `view` (which serves until Ctrl-C) is run by tests/cli/test_view.py.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from halugen.cli import main

ROOT = Path(__file__).resolve().parents[2]


def tour_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## A tour", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_tour_names_the_commands_a_newcomer_needs() -> None:
    verbs = [c.split()[3] for c in tour_commands() if c.startswith("python -m halugen ")]
    assert verbs[:3] == ["simulate", "estimate", "run"]
    assert {"status", "sql", "export", "audit", "eval", "report", "compare", "view"} <= set(verbs)


@pytest.mark.timeout(600)
def test_every_command_of_the_readme_tour_runs(simulator, tmp_path, monkeypatch, capsys) -> None:
    sim = simulator()
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "halugen" / "examples" / "qa_seeds.json", tmp_path / "qa_seeds.json")
    ran = []
    for command in tour_commands():
        if command.startswith("export "):
            for assignment in shlex.split(command)[1:]:
                name, _, value = assignment.partition("=")
                if name == "OPENAI_BASE_URL":
                    value = sim.base_url
                monkeypatch.setenv(name, value)
            continue
        argv = shlex.split(command)
        assert argv[:3] == ["python", "-m", "halugen"], command
        if argv[3] in ("simulate", "view"):
            continue
        code = main([*argv[3:], "--no-progress"] if argv[3] in ("run", "eval") else argv[3:])
        out = capsys.readouterr()
        assert code == 0, f"{command}: exit {code}\n{out.out[-2000:]}\n{out.err[-2000:]}"
        ran.append(argv[3])
    assert ran == [
        "estimate", "run", "status", "sql", "export", "audit", "eval", "report", "compare"
    ]  # fmt: skip
    assert (tmp_path / "samples.jsonl").stat().st_size > 0
