"""How a page's commands are read and what the page shell does with one it cannot play."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.page_shell import page_shell
from tests.docs.shown_commands import ShownCommand, shown_commands

PAGE = """# A page

<!-- not run "pip install": installs packages -->
<!-- not run 'python -m halugen sql "CHECKPOINT"': a race -->
```bash
pip install -e . && python -m halugen demo   # install, then the demo
python -m halugen run --seeds s.json \\
    --budget 1usd &
# a comment line
python -m halugen sql "SELECT '#' AS hash"   # refused, exit 2
python -m halugen sql "CHECKPOINT"
```

<!-- not run: this marker is for the next block only -->
Some text between: the marker above no longer holds.

```console
$ halugen status
run 1 done: 3 sampled
```

```
python -m halugen report
layout text, not a command
```

```python
print("python -m halugen is not run from here")
```

<!-- not run: every command of this block -->
```sh
halugen view --open
```
"""


def test_a_page_s_commands_with_their_markers_comments_and_exit_codes(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    shown = shown_commands(page)
    assert [(c.line, c.text, c.not_run) for c in shown] == [
        (6, "pip install -e .", "installs packages"),
        (6, "python -m halugen demo", None),
        (7, "python -m halugen run --seeds s.json --budget 1usd &", None),
        (10, "python -m halugen sql \"SELECT '#' AS hash\"", None),
        (11, 'python -m halugen sql "CHECKPOINT"', "a race"),
        (18, "halugen status", None),
        (23, "python -m halugen report", None),
        (33, "halugen view --open", "every command of this block"),
    ]
    assert [c.expected_exit for c in shown] == [0, 0, 0, 2, 0, 0, 0, 0]
    assert [c.background for c in shown] == [False, False, True, False, False, False, False, False]


def _command(text: str, not_run: str | None = None) -> ShownCommand:
    return ShownCommand("page.md", 1, text, "", not_run)


def test_a_command_neither_played_nor_marked_fails_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with page_shell(tmp_path, monkeypatch) as shell:
        shell.run(_command("pip install halugen", not_run="installs packages"))
        with pytest.raises(pytest.fail.Exception, match="not run"):
            shell.run(_command("pip install halugen"))


def test_a_marked_command_halugen_would_refuse_fails_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with page_shell(tmp_path, monkeypatch) as shell:
        shell.run(_command("python -m halugen run --budget 1usd", not_run="a hosted provider"))
        with pytest.raises(pytest.fail.Exception, match="parser refuses"):
            shell.run(_command("python -m halugen run --no-such-flag", not_run="a provider"))
