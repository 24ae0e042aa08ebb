"""One table of settings: flags, halugen.toml, `halugen init` and RunConfig agree with it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from halugen.cli import build_parser, main
from halugen.cli.common import run_config
from halugen.config import RunConfig
from halugen.errors import ConfigError
from halugen.options.spec import Setting
from halugen.options.table import SETTINGS
from halugen.settings.file import INIT_TEMPLATE, KNOWN_KEYS, load_settings, toml_value

IN_FILE = [s for s in SETTINGS if s.toml is not None and s.flags]
ENV = ("HALUGEN_DB", "OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory without halugen.toml and an environment without halugen's variables."""
    monkeypatch.chdir(tmp_path)
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _flag_argv(s: Setting) -> list[str]:
    """The example of ``s`` given on the command line."""
    flag = s.flags[-1]
    if s.const is not None:
        assert s.example == s.const, s.name  # the flag turns the example on
        return [flag]
    if s.name == "endpoints":
        return [
            a
            for e in s.example
            for a in (flag, ",".join([e["url"], *(f"{k}={v}" for k, v in e.items() if k != "url")]))
        ]
    if isinstance(s.example, list):
        return [flag, *map(str, s.example)]
    if isinstance(s.example, dict):  # --map FIELD=COLUMN, once per field
        return [a for k, v in s.example.items() for a in (flag, f"{k}={v}")]
    return [flag, str(s.example)]


def _file_text(s: Setting) -> str:
    if s.name == "endpoints":
        return "".join(
            "[[endpoints]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in e.items())
            for e in s.example
        )
    return f"{s.toml} = {toml_value(s.example)}\n"


def _config(argv: list[str], file: str | None = None) -> RunConfig:
    if file is not None:
        Path("halugen.toml").write_text(file)
    try:
        return run_config(build_parser().parse_args(["run", *argv]), calls=False)
    finally:
        Path("halugen.toml").unlink(missing_ok=True)


@pytest.mark.parametrize("s", IN_FILE, ids=lambda s: s.name)
def test_every_flag_with_a_file_key_round_trips_through_halugen_toml(s: Setting, here: Path):
    assert s.example is not None, f"{s.name}: give it an example"
    batch = ["--batch"] if s.group == "batch" and s.name != "batch" else []
    by_flag = _config([*_flag_argv(s), *batch])
    in_file = _file_text(s)
    if s.name == "endpoints":
        by_file = _config(batch, f"[run]\n{'batch = true' if batch else ''}\n{in_file}")
    else:
        by_file = _config([], f"[run]\n{'batch = true' + chr(10) if batch else ''}{in_file}")
    assert by_flag == by_file
    assert by_flag != _config(batch), f"{s.name}: its example is the default"


def test_the_file_is_below_the_environment_and_the_flag(here: Path, monkeypatch):
    file = '[run]\ndb = "file.duckdb"\nbase_url = "http://file:1/v1"\n'
    assert _config([], file).db == Path("file.duckdb")
    monkeypatch.setenv("HALUGEN_DB", "env.duckdb")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env:1/v1")
    cfg = _config([], file)
    assert (cfg.db, cfg.base_url) == (Path("env.duckdb"), "http://env:1/v1")
    cfg = _config(["--db", "flag.duckdb", "--base-url", "http://flag:1/v1"], file)
    assert (cfg.db, cfg.base_url) == (Path("flag.duckdb"), "http://flag:1/v1")


def test_run_configs_defaults_are_the_tables(here: Path):
    assert _config([]) == RunConfig()


def test_init_lists_every_key_of_the_file(here: Path):
    assert main(["init"]) == 0
    text = (here / "halugen.toml").read_text()
    assert text == INIT_TEMPLATE
    for key in KNOWN_KEYS:
        if key == "endpoints":
            assert "# [[endpoints]]" in text
        else:
            assert re.search(rf"^(# )?{key} = ", text, re.MULTILINE), key
    # as written, and with every commented key turned on, the file loads
    assert load_settings(here / "halugen.toml")["task"] == "qa"
    run = text.split("# A fleet", 1)[0]
    on = re.sub(r"^# (\w+ = )", r"\1", run, flags=re.MULTILINE)
    on += '[[endpoints]]\nurl = "http://a/v1"\n'
    (here / "halugen.toml").write_text(on)
    table = load_settings(here / "halugen.toml")
    assert set(table) == set(KNOWN_KEYS)
    tomllib.loads(on)


def test_context_window_is_a_key_of_the_file(here: Path):
    assert _config([], "[run]\ncontext_window = 4096\n").context_window == 4096


def test_a_value_outside_the_choices_is_refused_in_the_file(here: Path):
    (here / "halugen.toml").write_text('[run]\nlong_documents = "drop"\n')
    with pytest.raises(ConfigError, match="long_documents must be one of truncate, skip"):
        load_settings(here / "halugen.toml")
