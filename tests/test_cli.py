"""The command line: estimate, status, sql, init + halugen.toml, demo, Ctrl-C; start-up
imports, usage errors, short flags, $HALUGEN_DB, API keys, shell-mangled budgets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import duckdb
import orjson
import pytest

from halugen.cli import build_parser, main
from halugen.cli.common import db_path, run_config
from halugen.settings.endpoints import is_local_endpoint


def test_estimate_counts_seeds_calls_and_cost(hotpot_file, capsys):
    code = main(["estimate", "--seeds", str(hotpot_file(7)), "--model", "gpt-4o-mini"])
    assert code == 0
    out = capsys.readouterr().out
    assert "qa" in out and " 7 " in out and " 21 " in out  # 7 seeds, 3 calls each at most
    assert "$" in out


def test_estimate_with_limit_and_bad_records(tmp_path, capsys):
    seeds = tmp_path / "s.jsonl"
    seeds.write_text('{"knowledge":"k","question":"q?","right_answer":"a"}\nnot json\n' * 3)
    assert main(["estimate", "--seeds", str(seeds), "--limit", "2"]) == 0
    assert " 2 " in capsys.readouterr().out


def test_status_and_sql_after_a_run(simulator, hotpot_file, tmp_path, capsys):
    sim = simulator()
    db = tmp_path / "h.duckdb"
    assert (
        main(
            [
                "run",
                "--seeds",
                # enough for some seeds to reach the filter
                str(hotpot_file(40, more_names=True)),
                "--base-url",
                sim.base_url,
                "--api-key",
                "k",
                "--model",
                "gpt-4o-mini",
                "--db",
                str(db),
                "--no-progress",
                "--budget",
                "1usd",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["status", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "done" in out and "sample" in out and "filter" in out
    assert (
        main(
            [
                "sql",
                "SELECT stage, count(*) AS n FROM calls GROUP BY stage ORDER BY stage",
                "--db",
                str(db),
                "--format",
                "csv",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "stage,n" and lines[-1].startswith("sample,")
    assert (
        main(["sql", "SELECT count(*) AS n FROM samples", "--db", str(db), "--format", "json"]) == 0
    )
    with duckdb.connect(str(db), read_only=True) as con:
        (samples,) = con.execute("SELECT count(*) FROM samples").fetchone()
    assert samples > 0
    assert orjson.loads(capsys.readouterr().out) == [{"n": samples}]
    assert main(["sql", "SELEC nonsense", "--db", str(db)]) == 2
    assert "SQL error" in capsys.readouterr().err
    # the store is opened read-only: users cannot damage it from `sql`
    assert main(["sql", "DELETE FROM sample_rows", "--db", str(db)]) == 2


def test_init_writes_settings_that_run_reads(simulator, hotpot_file, tmp_path, monkeypatch, capsys):
    sim = simulator()
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert main(["init"]) == 2  # never overwrites without --force
    seeds = hotpot_file(3)
    text = (tmp_path / "halugen.toml").read_text()
    text = text.replace('seeds = ["hotpot_train_v1.1.json"]', f'seeds = ["{seeds}"]')
    text = text.replace('# base_url = "https://api.openai.com/v1"', f'base_url = "{sim.base_url}"')
    (tmp_path / "halugen.toml").write_text(text)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert main(["run", "--budget", "1usd", "--no-progress"]) == 0
    assert (tmp_path / "halugen.duckdb").exists()
    capsys.readouterr()
    (tmp_path / "halugen.toml").write_text('[run]\nbudgett = "5usd"\n')
    assert main(["run", "--no-progress"]) == 2
    assert "unknown key 'budgett'" in capsys.readouterr().err


def test_missing_seed_file_is_a_one_line_usage_error(tmp_path, capsys):
    argv = ["run", "--seeds", str(tmp_path / "nope.json"), "--no-progress", "--api-key", "k"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "Traceback" not in err


def test_corrupt_store_is_reported_not_a_traceback(hotpot_file, tmp_path, capsys):
    db = tmp_path / "bad.duckdb"
    db.write_bytes(b"garbage" * 1000)
    argv = ["run", "--seeds", str(hotpot_file(2)), "--db", str(db), "--no-progress"]
    assert main([*argv, "--api-key", "k"]) == 2  # bad input, like a bad seed file
    err = capsys.readouterr().err
    assert "bad.duckdb" in err and "Traceback" not in err


@pytest.mark.timeout(120)
def test_demo_runs_end_to_end(tmp_path, capsys):
    db = tmp_path / "demo.duckdb"
    assert main(["demo", "--db", str(db), "--no-progress", "--latency-ms", "5"]) == 0
    out = capsys.readouterr().out
    assert "done" in out and "hallucinated_answer" in out and "Cost by stage" in out


def test_ctrl_c_stops_cleanly_and_the_run_resumes(simulator, hotpot_file, tmp_path):
    sim = simulator(latency_ms=50)
    db = tmp_path / "h.duckdb"
    cmd = [
        sys.executable,
        "-m",
        "halugen",
        "run",
        "--seeds",
        str(hotpot_file(300)),
        "--base-url",
        sim.base_url,
        "--api-key",
        "k",
        "--model",
        "gpt-4o-mini",
        "--db",
        str(db),
        "--no-progress",
        "--concurrency",
        "8",
        "--budget",
        "1usd",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while sim.stats(keys=False)["ok"] < 20:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "same command" in err
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    import duckdb

    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute(
            "SELECT count(*), count(DISTINCT seed_key) FROM sample_rows"
        ).fetchone() == (300, 300)
        # a graceful stop leaves no reservation open: nothing had to be counted as lost
        assert conn.execute("SELECT count(*) FROM ledger WHERE event = 'lost'").fetchone()[0] == 0


# -- a CLI that starts quickly and says what went wrong -----------------------------------
HEAVY = ("duckdb", "pyarrow", "aiohttp", "numpy", "sklearn", "torch", "matplotlib", "rich.live")
LIGHT_TOO = (
    "asyncio",
    "anyio",
    "orjson",
    "tiktoken",
    "ijson",
    "rich.console",
    "halugen.engine",
    "halugen.store",
)


def _all_commands() -> list[list[str]]:
    import argparse

    found: list[list[str]] = [[]]

    def walk(p: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found.append([*prefix, name])
                    walk(child, [*prefix, name])

    walk(build_parser(), [])
    return found


def test_help_of_every_command_imports_no_heavy_module():
    commands = _all_commands()
    assert ["annotate", "serve"] in commands and ["run"] in commands
    probe = (
        "import sys\nfrom halugen.cli import main\n"
        f"for words in {commands!r}:\n"
        "    assert main([*words, '--help']) == 0, words\n"
        f"print('LOADED:' + ','.join(m for m in {HEAVY + LIGHT_TOO!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rsplit("LOADED:", 1)[1].strip() == ""


def test_import_halugen_is_lazy_but_complete():
    probe = (
        "import sys, halugen\n"
        "assert 'duckdb' not in sys.modules and 'aiohttp' not in sys.modules\n"
        "assert halugen.open_store.__module__ == 'halugen.store.db'\n"
        "assert 'duckdb' in sys.modules\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize(
    ("argv", "first", "usage"),
    [
        (
            ["run", "--budjet", "1usd"],
            "error: unrecognized arguments: --budjet 1usd (did you mean --budget?)",
            "usage: halugen run [options]",
        ),
        (
            ["annotate", "serve", "--prot=80"],
            "error: unrecognized arguments: --prot=80 (did you mean --port?)",
            "usage: halugen annotate serve [options]",
        ),
        (
            ["sql", "SELECT 1", "--fromat", "csv"],
            "error: unrecognized arguments: --fromat csv (did you mean --format?)",
            "usage: halugen sql QUERY [options]",
        ),
        (["rnu"], "error: unknown command 'rnu' (did you mean run?)", "usage: halugen COMMAND"),
        (
            ["annotate", "bogus"],
            "error: unknown action 'bogus' (one of serve, tokens, add, import, export, resolve)",
            "usage: halugen annotate ACTION",
        ),
        (
            ["preselect"],
            "error: the following arguments are required: --queries",
            "usage: halugen preselect --queries FILE [options]",
        ),
        (["run", "--limit", "x"], "error: --limit takes a whole number, not 'x'", "usage:"),
    ],
)
def test_a_usage_error_comes_first_on_one_line_then_the_short_usage(argv, first, usage, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == first, captured.err
    assert len(lines) == 2 and lines[1].startswith(usage), captured.err
    assert "--help" in lines[1] and captured.out == ""


def test_a_file_given_to_a_numeric_flag_suggests_the_flag_that_takes_files(tmp_path, capsys):
    seeds = tmp_path / "deep" / "inside" / "hotpot.json"
    seeds.parent.mkdir(parents=True)
    seeds.write_text("[]")
    assert main(["run", "--seed", str(seeds)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (
        "error: --seed takes a whole number, not a file (hotpot.json): "
        "did you mean --seeds hotpot.json?"
    )
    assert str(seeds.parent) not in lines[0] and len(lines) == 2
    assert main(["preselect", "--queries", "q.json", "--keep", "alpaca_data.json"]) == 2
    assert "did you mean --queries alpaca_data.json?" in capsys.readouterr().err


def test_short_flags_for_the_common_options():
    args = build_parser().parse_args(
        ["run", "-m", "gpt-x", "-b", "5usd", "-t", "qa", "-n", "3", "-j", "4"]
    )
    assert (args.model, args.budget, args.task, args.limit, args.concurrency) == (
        "gpt-x",
        "5usd",
        "qa",
        3,
        4,
    )
    assert build_parser().parse_args(["eval", "-t", "qa", "-m", "m", "-b", "1usd"]).task == "qa"
    assert build_parser().parse_args(["export", "-o", "x.jsonl"]).out == "x.jsonl"
    assert build_parser().parse_args(["annotate", "export", "--format", "jsonl", "-o", "a"]).out
    assert build_parser().parse_args(["topics", "-t", "qa", "-o", "f.png"]).out == "f.png"


def test_halugen_db_sits_between_the_flag_and_halugen_toml(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HALUGEN_DB", raising=False)
    parser = build_parser()

    def store_of(*argv: str) -> str:
        return str(db_path(parser.parse_args(["status", *argv])))

    assert store_of() == "halugen.duckdb"
    (tmp_path / "halugen.toml").write_text('[run]\ndb = "from-file.duckdb"\n')
    assert store_of() == "from-file.duckdb"
    monkeypatch.setenv("HALUGEN_DB", str(tmp_path / "from-env.duckdb"))
    assert store_of() == str(tmp_path / "from-env.duckdb")
    assert store_of("--db", "flag.duckdb") == "flag.duckdb"
    cfg = run_config(parser.parse_args(["estimate", "--seeds", "x"]), calls=False)
    assert str(cfg.db) == str(tmp_path / "from-env.duckdb")
    # the commands use it: status reads the store $HALUGEN_DB names
    assert main(["status"]) == 2
    assert "from-env.duckdb does not exist" in capsys.readouterr().err
    # the demo replaces its store, so it never takes $HALUGEN_DB
    assert parser.parse_args(["demo"]).db == "halugen-demo.duckdb"


def test_is_local_endpoint():
    for url in (
        "http://127.0.0.1:8000/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8080/v1",
        "http://10.1.2.3/v1",
        "http://192.168.0.9:8000/v1",
        "http://172.20.0.2/v1",
        "http://100.101.1.2/v1",
        "http://vllm:8000/v1",
        "http://gpu-box.local/v1",
        "http://llm.internal/v1",
    ):
        assert is_local_endpoint(url), url
    for url in (
        "https://api.openai.com/v1",
        "https://8.8.8.8/v1",
        "https://my-gateway.example.com/v1",
        "not a url",
        "",
    ):
        assert not is_local_endpoint(url), url


def test_a_public_endpoint_without_a_key_fails_before_any_call(
    hotpot_file, simulator, tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    db = tmp_path / "h.duckdb"
    common = ["--seeds", str(hotpot_file(2)), "--db", str(db), "--no-progress", "-b", "1usd"]
    for extra in ([], ["--base-url", "https://llm.example.com/v1"]):
        assert main(["run", *common, *extra]) == 2
        err = capsys.readouterr().err
        assert "no API key for" in err and "--api-key" in err
        assert not db.exists()  # nothing started, nothing written
    monkeypatch.setenv("OPENAI_API_KEY", "")  # set but empty is no key either
    assert main(["eval", "-t", "qa", "--db", str(db), "--no-progress", "-b", "1usd"]) == 2
    assert "no API key" in capsys.readouterr().err
    # estimate makes no call: no key needed
    assert main(["estimate", "--seeds", str(hotpot_file(2))]) == 0
    # a local server needs none
    sim = simulator()
    assert main(["run", *common, "--base-url", sim.base_url, "-m", "gpt-4o-mini"]) == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "--budget got '0'"),
        ("", "--budget got an empty value"),
        ("usd", "--budget got 'usd'"),
        ("0usd", "--budget got '0usd'"),
        ("2.5", "has no currency: write 2.5usd"),
    ],
)
def test_a_budget_the_shell_mangled_is_explained(value, says, hotpot_file, capsys):
    argv = ["run", "--seeds", str(hotpot_file(1)), "--api-key", "k", "--budget", value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "quote it" in err, err


def test_unquoted_dollar_budget_through_a_real_shell(hotpot_file, tmp_path):
    import shlex

    seeds = shlex.quote(str(hotpot_file(1)))
    line = f"{shlex.quote(sys.executable)} -m halugen run --seeds {seeds} --api-key k --budget $50"
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2
    assert "--budget got '0'" in done.stderr and "--budget '$50'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_lazy_console_stands_in_for_rich_in_a_live_view():
    import io

    from rich.live import Live
    from rich.text import Text

    from halugen.cli.common import LazyConsole

    buf = io.StringIO()
    console = LazyConsole(file=buf, force_terminal=True, width=60, highlight=False)
    assert object.__getattribute__(console, "_console") is None  # nothing made yet
    with Live(Text("working"), console=console, auto_refresh=False) as live:
        live.update(Text("done [/] here"), refresh=True)
        console.print("a line [b]x[/b]", markup=False)
    with console:  # rich's buffering context works through it
        console.print("inside")
    console.width = 50  # attribute writes reach the real console
    assert console.real.width == 50
    text = buf.getvalue()
    assert "done [/] here" in text and "a line [b]x[/b]" in text and "inside" in text


def test_program_entry_returns_mains_code_and_skips_the_last_collection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    import halugen.cli

    monkeypatch.setattr(halugen.cli, "main", lambda: 3)
    try:
        assert halugen.cli.entry() == 3
        assert gc.get_freeze_count() > 0  # what is left is not walked again at exit
    finally:
        gc.unfreeze()
