"""Plays a page's commands as a reader's shell would, in one folder, against simulators.

halugen's commands run in this process (``halugen.cli.main``), each with the exit code its
page promises. The rest is played so that nothing leaves the machine and nothing waits for
a Ctrl-C:
- ``halugen simulate`` starts the simulator the command line asks for (its own flag
  mapping, ``cmd_simulate``) in a thread on a free port; every later mention of the port the
  page chose (``127.0.0.1:8000``) is read as that one;
- ``halugen view`` and ``halugen annotate serve`` serve on a free port, the page is fetched
  once, and the server stops as if Ctrl-C had come (a browser ``--open`` asks for is not
  started);
- another halugen command ending in ``&`` runs in a process of its own: the next command
  comes once it says it started (its store is open then), and it is waited for at the end
  of the page;
- ``python -m vllm.entrypoints.openai.run_batch`` is answered by the simulator
  (``run_like_vllm``);
- ``export A=1``, ``S="..."`` (``$S`` is expanded) and a few file commands (``cp``,
  ``mkdir``) do what a shell does;
- a command the page marks ``not run`` is only parsed by halugen's argument parser.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import os
import re
import shlex
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from halugen.cli import build_parser, main
from tests.batch.test_exchange import run_like_vllm
from tests.conftest import serve_simulator
from tests.docs.shown_commands import ShownCommand

__all__ = ["PageShell", "halugen_argv", "page_shell"]

ROOT = Path(__file__).resolve().parents[2]
_FILE_COMMANDS = {"cp", "mkdir", "ls", "cat", "mv", "rm"}
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def halugen_argv(argv: list[str]) -> list[str] | None:
    """The arguments after ``python -m halugen`` or ``halugen``; None for another program."""
    if argv[:3] == ["python", "-m", "halugen"]:
        return argv[3:]
    if argv[:1] == ["halugen"]:
        return argv[1:]
    return None


class PageShell:
    """One page's shell: its folder, variables, simulators and processes in the background."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.monkeypatch = monkeypatch
        self.variables: dict[str, str] = {}
        self.ports: dict[int, int] = {}  # the page's port -> the port it got here
        self.ran: list[ShownCommand] = []
        self.parsed: list[ShownCommand] = []
        self._stops: list[Callable[[], None]] = []
        self._background: list[
            tuple[ShownCommand, subprocess.Popen[bytes], list[bytes], threading.Thread]
        ] = []
        monkeypatch.chdir(folder)
        monkeypatch.setattr("halugen.simulate.run_server", self._serve_simulator)
        for module in ("halugen.view.serving", "halugen.annotate.serving"):
            monkeypatch.setattr(f"{module}.until_signalled", self._visit_then_stop)
            monkeypatch.setattr(f"{module}.serve", self._on_a_free_port(module))
        monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: True)
        self._served: list[Any] = []

    # -- what the page's commands reach ------------------------------------------------

    def start_simulator(self, **config: Any) -> str:
        """A simulator of the page (``SimConfig`` kwargs); its base URL."""
        handle, stop = serve_simulator(**config)
        self._stops.append(stop)
        return handle.base_url

    def _serve_simulator(self, config: Any, host: str, port: int, ready: Any = None) -> None:
        kwargs = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}
        url = self.start_simulator(**kwargs)
        self.ports[port] = int(url.rsplit(":", 1)[1].split("/", 1)[0])

    def _on_a_free_port(self, module: str) -> Callable[..., Any]:
        real = importlib.import_module(module).serve

        async def serve(db: Any, *args: Any, **kwargs: Any) -> Any:
            if "port" in kwargs:
                kwargs["port"] = 0
            if args:  # annotate: serve(db, options)
                args = (dataclasses.replace(args[0], port=0), *args[1:])
            server = await real(db, *args, **kwargs)
            self._served.append(server)
            return server

        return serve

    async def _visit_then_stop(self) -> None:
        server = self._served[-1]
        url = getattr(server, "url", None)
        if url is not None:
            with await asyncio.to_thread(urllib.request.urlopen, url, timeout=30) as reply:
                assert reply.status == 200, url

    # -- the commands --------------------------------------------------------------------

    def _expand(self, text: str) -> str:
        def value(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2)
            return self.variables.get(name, os.environ.get(name, m.group(0)))

        text = _VARIABLE.sub(value, text)
        for page_port, port in self.ports.items():
            text = re.sub(rf"\b(127\.0\.0\.1|localhost):{page_port}(?!\d)", rf"\1:{port}", text)
        return text

    def run(self, command: ShownCommand) -> None:
        text = command.text.removesuffix("&").strip() if command.background else command.text
        argv = shlex.split(self._expand(text))
        args = halugen_argv(argv)
        if command.not_run is not None:
            if args is not None:
                self._parses(command, args)
            self.parsed.append(command)
            return
        if argv[0] == "export":
            for assignment in argv[1:]:
                name, _, value = assignment.partition("=")
                self.monkeypatch.setenv(name, value)
        elif all(_ASSIGNMENT.match(word) for word in argv):
            for assignment in argv:
                name, _, value = assignment.partition("=")
                self.variables[name] = value
        elif argv[:3] == ["python", "-m", "vllm.entrypoints.openai.run_batch"]:
            self._like_vllm(argv[3:])
        elif argv[0] in _FILE_COMMANDS:
            done = subprocess.run(argv, cwd=self.folder, capture_output=True, text=True)
            assert done.returncode == command.expected_exit, f"{command.where}\n{done.stderr}"
        elif args is None:
            pytest.fail(
                f"{command.where}: not a halugen command this test can play; mark it in the "
                f'page (<!-- not run "{argv[0]}": why -->) or teach tests/docs/page_shell.py'
            )
        elif command.background and args[0] != "simulate":
            self._in_the_background(command, args)
        else:
            self._in_process(command, args)
        self.ran.append(command)

    def _like_vllm(self, args: list[str]) -> None:
        """vLLM's batch runner, played by the simulator (as tests/batch/test_exchange.py does)."""
        given = dict(zip(args[::2], args[1::2], strict=True))
        run_like_vllm(self.folder / given["-i"], self.folder / given["-o"])

    def _parses(self, command: ShownCommand, args: list[str]) -> None:
        stderr = StringIO()
        try:
            with redirect_stderr(stderr):
                build_parser().parse_args(args)
        except SystemExit as exc:
            pytest.fail(f"{command.where}: halugen's parser refuses it ({exc.code})\n{stderr}")

    def _in_process(self, command: ShownCommand, args: list[str]) -> None:
        out, err = StringIO(), StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(args)
        assert code == command.expected_exit, (
            f"{command.where}: exit {code}, the page says {command.expected_exit}\n"
            f"{out.getvalue()[-3000:]}\n{err.getvalue()[-3000:]}"
        )

    def _in_the_background(self, command: ShownCommand, args: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen(
            [sys.executable, "-m", "halugen", *args],
            cwd=self.folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        # as a reader does, go on once it says it started (the store is open then), not before
        assert process.stdout is not None
        seen: list[bytes] = []
        for line in process.stdout:
            seen.append(line)
            if line.startswith((b"starting ", b"resuming ")):
                break
        rest = threading.Thread(target=lambda: seen.extend(process.stdout or ()), daemon=True)
        rest.start()
        self._background.append((command, process, seen, rest))

    def close(self) -> None:
        """Wait for the page's processes in the background, then stop its simulators."""
        try:
            for command, process, seen, rest in self._background:
                process.wait(timeout=300)
                rest.join(30)
                output = b"".join(seen).decode(errors="replace")
                assert process.returncode == command.expected_exit, (
                    f"{command.where}: exit {process.returncode}\n{output[-3000:]}"
                )
        finally:
            for process in (p for _, p, _, _ in self._background if p.poll() is None):
                process.kill()
            for stop in self._stops:
                stop()


@contextmanager
def page_shell(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PageShell]:
    shell = PageShell(folder, monkeypatch)
    try:
        yield shell
    finally:
        shell.close()
