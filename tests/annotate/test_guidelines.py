"""Guidelines on the annotation page: the default, the organiser's file, and the CLI flags."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestServer

from halugen.annotate.guidelines import (
    MAX_GUIDELINES_BYTES,
    default_guidelines,
    load_guidelines,
)
from halugen.cli import main
from halugen.errors import InputError
from halugen.store.db import Store

from ._web import run


def test_the_default_explains_yes_no_and_each_kind_with_an_example() -> None:
    g = default_guidelines()
    assert g.source == "default"
    text = g.text
    assert "y (Yes)" in text and "n (No)" in text
    for number, kind in ((1, "Unverifiable"), (2, "Non-factual"), (3, "Irrelevant")):
        # each kind: its key, a definition, then an example before the next kind
        block = re.search(rf"^{number} {kind}:(.*?)(?=^\d |^## |\Z)", text, re.M | re.S)
        assert block is not None, kind
        assert "Example:" in block.group(1), kind
    assert "<" not in text  # plain text; the page shows it as text anyway


def test_load_guidelines(tmp_path: Path) -> None:
    f = tmp_path / "ours.md"
    f.write_bytes(b"\xef\xbb\xbf# Our rules\r\n\r\n<b>not bold</b> & <script>x</script>\r\n")
    g = load_guidelines(f)
    assert g.source == "ours.md"
    assert g.text == "# Our rules\n\n<b>not bold</b> & <script>x</script>\n"
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "empty.md").write_text("  \n")
    (tmp_path / "big.md").write_bytes(b"x" * (MAX_GUIDELINES_BYTES + 1))
    (tmp_path / "dir.md").mkdir()
    for name, says in (
        ("missing.md", "not found"),
        ("latin1.md", "not UTF-8"),
        ("empty.md", "is empty"),
        ("big.md", "larger than"),
        ("dir.md", "is a directory"),
    ):
        with pytest.raises(InputError, match=says) as info:
            load_guidelines(tmp_path / name)
        assert name in str(info.value)


def test_the_api_serves_the_guidelines_after_login(store: Store, tmp_path: Path) -> None:
    f = tmp_path / "g.md"
    f.write_text("# Team rules\n\n<img src=x onerror=alert(1)> stays text\n")

    async def scenario(server: TestServer, person: Any) -> None:
        stranger = await person(None)  # with tokens in force, the texts need a login
        assert (await stranger.call("GET", "/api/guidelines"))[0] == 401
        a = await person("ann1", login=False)
        await a.login("t1")
        status, data = await a.call("GET", "/api/guidelines")
        assert status == 200
        assert data == {
            "text": "# Team rules\n\n<img src=x onerror=alert(1)> stays text\n",
            "source": "g.md",
        }

    run(store, scenario, guidelines=load_guidelines(f), tokens={"ann1": "t1"})

    async def default(server: TestServer, person: Any) -> None:
        a = await person("ann1")
        _, data = await a.call("GET", "/api/guidelines")
        assert data == default_guidelines().as_dict()

    run(store, default)


def test_serve_refuses_a_bad_guidelines_file_before_listening(tmp_path: Path, capsys) -> None:
    db = tmp_path / "a.duckdb"
    argv = ["annotate", "serve", "--db", str(db), "--guidelines", str(tmp_path / "nope.md")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "guidelines file" in err and "nope.md" in err and "Traceback" not in err
    assert not db.exists()


def test_annotate_tokens_writes_an_organiser_token(tmp_path: Path, capsys) -> None:
    out = tmp_path / "tokens.json"
    assert main(["annotate", "tokens", "--annotators", "ann1, ann2", "-o", str(out)]) == 0
    tokens = orjson.loads(out.read_bytes())
    assert set(tokens) == {"ann1", "ann2", "@organiser"}
    assert len(set(tokens.values())) == 3
    assert out.stat().st_mode & 0o777 == 0o600
    assert "@organiser" in capsys.readouterr().out
