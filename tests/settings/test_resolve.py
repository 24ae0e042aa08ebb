"""Where a setting's value comes from: the flag, then the environment, then halugen.toml,
then the default; the file is read only for a setting that has a key in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from halugen.errors import ConfigError
from halugen.settings.resolve import resolve


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_flag_then_environment_then_file_then_default(here: Path):
    (here / "halugen.toml").write_text('[run]\ndb = "file.duckdb"\nmax_tokens = 64\n')
    names = ("db", "max_tokens", "temperature")
    env = {"HALUGEN_DB": "env.duckdb"}

    flags = resolve(names, {"db": "flag.duckdb"}, environ=env)
    assert flags["db"] == "flag.duckdb" and flags.origin["db"] == "flag"
    by_env = resolve(names, {}, environ=env)
    assert by_env["db"] == "env.duckdb" and by_env.origin["db"] == "env"
    by_file = resolve(names, {}, environ={})
    assert (by_file["db"], by_file["max_tokens"]) == ("file.duckdb", 64)
    assert by_file.origin == {"db": "file", "max_tokens": "file", "temperature": "default"}
    assert by_file["temperature"] == 1.0
    assert by_file.file == Path("halugen.toml")


def test_a_blank_variable_is_not_set(here: Path):
    assert resolve(["db"], {}, environ={"HALUGEN_DB": "  "}).origin["db"] == "default"


def test_a_setting_the_command_does_not_take_is_its_default(here: Path):
    resolved = resolve(["db"], {"db": "x.duckdb"}, environ={})
    assert resolved["strategy"] == "plain" and "strategy" not in resolved.origin


def test_the_file_is_read_only_for_settings_with_a_key_in_it(here: Path):
    missing = str(here / "missing.toml")
    # --per-item and --keep are flags only: a command that takes nothing else reads no file
    assert resolve(["per_item", "keep"], {}, config=missing, environ={})["keep"] == 5000
    with pytest.raises(ConfigError, match=r"missing\.toml not found"):
        resolve(["db"], {}, config=missing, environ={})
