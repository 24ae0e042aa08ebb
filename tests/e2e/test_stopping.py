"""Stopping and failing say what is going on."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from halugen.cli import main


def _run_cmd(base_url: str, seeds: str, db: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "halugen", "run", "--seeds", seeds, "--base-url", base_url,
        "--api-key", "k", "--db", db, "--no-progress", "--model", "gpt-4o-mini", *extra,
    ]  # fmt: skip


def test_first_ctrl_c_is_acknowledged_at_once(simulator, hotpot_file, tmp_path):
    sim = simulator(latency_ms=1500)
    cmd = _run_cmd(sim.base_url, str(hotpot_file(50)), str(tmp_path / "h.duckdb"),
                   "--concurrency", "4")  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while sim.stats(keys=False)["in_flight"] < 4:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGINT)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # printed on the press, before the calls finish
    while first.startswith(("warning:", "starting run")):
        first = proc.stderr.readline()
    assert first.startswith("stopping: 4 request(s) at the provider will finish"), first
    assert "Ctrl-C again abandons the 4 at the provider" in first
    assert sim.stats(keys=False)["in_flight"] > 0  # it was said while they were still going
    rest = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, rest


def test_a_slow_server_is_not_called_unreachable(simulator, hotpot_file, tmp_path, capsys):
    sim = simulator(latency_ms=3000)
    code = main(
        ["run", "--seeds", str(hotpot_file(3)), "--base-url", sim.base_url, "--api-key", "k",
         "--db", str(tmp_path / "h.duckdb"), "--no-progress", "--timeout", "0.3",
         "--max-attempts", "1", "--concurrency", "2"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "cannot reach" not in err and "--base-url" not in err
    assert "timeout" in err and "--timeout" in err  # says what it was and what to change


def test_an_endpoint_down_for_good_names_the_cause(simulator, hotpot_file, tmp_path, capsys):
    sim = simulator(fail_rate=1.0, faults=("503",))
    code = main(
        ["run", "--seeds", str(hotpot_file(4)), "--base-url", sim.base_url, "--api-key", "k",
         "--db", str(tmp_path / "h.duckdb"), "--no-progress", "--max-attempts", "1"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "failed on call errors" in err
    assert "HTTP 503" in err  # the cause, not only the count


def test_connection_refused_names_the_url(hotpot_file, tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(
        ["run", "--seeds", str(hotpot_file(2)), "--base-url", f"http://127.0.0.1:{port}/v1",
         "--api-key", "k", "--db", str(tmp_path / "h.duckdb"), "--no-progress",
         "--max-attempts", "1"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert f"127.0.0.1:{port}" in err and "refused" in err.lower()


def test_a_frozen_server_stops_the_run_naming_the_cause(simulator, hotpot_file, tmp_path, capsys):
    # it answers two requests, then takes connections and answers nothing
    sim = simulator(frozen_after=2)
    code = main(
        ["run", "--seeds", str(hotpot_file(6)), "--base-url", sim.base_url, "--api-key", "k",
         "--db", str(tmp_path / "h.duckdb"), "--no-progress", "--timeout", "0.2",
         "--unreachable-after", "1", "--max-attempts", "50"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"the server at {sim.base_url}" in err
    assert "accepted connections but answered none of the last" in err
    assert sim.stats(keys=False)["unanswered"] >= 3
