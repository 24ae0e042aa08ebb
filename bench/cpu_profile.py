"""Where a pinned ``halugen run`` spends its CPU: every thread profiled on its own CPU clock.

``bench/throughput.py --profile`` runs this as the child instead of ``python -m halugen``::

    python bench/cpu_profile.py OUT halugen-arguments...

It runs ``halugen`` (the one found from the current directory first, as ``python -m``
would) with a ``cProfile`` profiler per thread timed by ``time.thread_time``, so that a
thread waiting for the GIL, a lock or the disk is not counted, and writes OUT.json: each
thread's CPU seconds and the top functions by their own CPU. The profiler's own overhead
inflates Python-heavy code (roughly 3-4x here), so the shares, not the seconds, carry over;
a run without it (``--ways pinned``) gives the CPU per call.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import runpy
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

TOP = 15


def _short(filename: str) -> str:
    for marker in ("/halugen/", "/site-packages/", "/python3."):
        at = filename.rfind(marker)
        if at >= 0:
            return filename[at + 1 :]
    return filename


def top_functions(stats: pstats.Stats, n: int = TOP) -> list[dict[str, Any]]:
    """The ``n`` functions with the most own CPU: name, calls, own and cumulative seconds."""
    rows = []
    for (filename, line, name), (_, calls, own, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{_short(filename)}:{line}({name})", "calls": calls,
                     "own_s": own, "cum_s": cum})  # fmt: skip
    rows.sort(key=lambda r: r["own_s"], reverse=True)
    return rows[:n]


def main() -> None:
    out = Path(sys.argv[1])
    profiles: list[tuple[str, cProfile.Profile, list[float]]] = []
    run_thread = threading.Thread.run

    def profiled_run(self: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        used = [0.0]
        profiles.append((self.name, profile, used))
        start = time.thread_time()
        profile.enable()
        try:
            run_thread(self)
        finally:
            profile.disable()
            used[0] = time.thread_time() - start

    threading.Thread.run = profiled_run  # type: ignore[method-assign]
    sys.argv = ["halugen", *sys.argv[2:]]
    sys.path.insert(0, os.getcwd())  # as ``python -m halugen`` run from here would
    main_profile = cProfile.Profile(time.thread_time)
    main_used = [0.0]
    profiles.insert(0, ("event loop (main)", main_profile, main_used))
    start = time.thread_time()
    main_profile.enable()
    try:
        runpy.run_module("halugen", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        main_profile.disable()
        main_used[0] = time.thread_time() - start
        combined: pstats.Stats | None = None
        threads = []
        for name, profile, used in profiles:
            profile.create_stats()
            if not getattr(profile, "stats", None):
                continue
            threads.append({"thread": name, "cpu_s": used[0]})
            if combined is None:
                combined = pstats.Stats(profile)
            else:
                combined.add(profile)
        report = {
            "threads": threads,
            "top_own": top_functions(combined) if combined is not None else [],
        }
        out.write_bytes(orjson.dumps(report))


if __name__ == "__main__":
    main()
