"""``halugen view``: serves the page of a store until stopped, refuses a path that is no
store in one line."""

from __future__ import annotations

import http.cookiejar
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import orjson
import pytest

from halugen.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("flag", ["--db", "--store"])
def test_a_path_that_is_no_store_is_one_line(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", flag, str(tmp_path / "none.duckdb"), "--port", "0"]) == 2
    printed = capsys.readouterr().err.strip()
    assert "none.duckdb does not exist" in printed and "\n" not in printed
    assert "Traceback" not in printed


def test_view_prints_its_address_serves_the_store_and_stops_on_a_signal(
    tmp_path: Path,
) -> None:
    from halugen.store.db import open_store

    db = tmp_path / "empty.duckdb"
    open_store(db).close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "halugen", "view", "--store", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"view of {db} at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split()[0]
        assert "?token=" in url
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with opener.open(url, timeout=30) as r:  # the token becomes a cookie
            assert b"halugen view" in r.read()
        base = url.split("?", 1)[0]
        with opener.open(base + "api/seeds", timeout=30) as r:
            page = orjson.loads(r.read())
        assert page["total"] == 0 and page["seeds"] == [] and page["live"] is False
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
