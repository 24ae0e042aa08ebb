"""The settings of a run as a whole: its store, budget and seed, resuming it, batch mode."""

from __future__ import annotations

from .checks import megabytes, number_above_zero, number_from_zero, positive, share
from .spec import Setting

__all__ = ["BATCH", "RESUME", "RUN"]

RUN: tuple[Setting, ...] = (
    Setting(
        name="db",
        kind=str,
        group="run",
        env="HALUGEN_DB",
        metavar="FILE",
        default="halugen.duckdb",
        help="the DuckDB store",
        example="other.duckdb",
        in_template=True,
    ),
    Setting(
        name="budget",
        kind=str,
        group="run",
        flags=("-b", "--budget"),
        metavar="AMOUNT",
        help="most the run may cost, across resumes: 50usd, 12.5USD, or '$50' in quotes",
        default_text="no limit",
        example="5usd",
        in_template=True,
        to=("budget_usd",),
    ),
    Setting(
        name="in_flight_share",
        kind=(int, float),
        group="run",
        metavar="SHARE",
        default=0.25,
        help="most of the budget left that calls in flight may hold at once (0-1]: a kill "
        "counts what they hold as spent, so it costs at most this share",
        example=0.5,
        check=share,
    ),
    Setting(
        name="limit",
        kind=int,
        group="run",
        flags=("-n", "--limit"),
        metavar="N",
        help="only the first N seeds of each task",
        default_text="every seed",
        example=1000,
        check=positive,
    ),
    Setting(
        name="seed",
        kind=int,
        group="run",
        metavar="N",
        default=0,
        help="run seed: the candidate order and the seed sent with each request derive "
        "from it (a whole number; seed files are --seeds)",
        example=7,
        in_template=True,
        to=("run_seed",),
    ),
    Setting(
        name="progress",
        kind=bool,
        group="run",
        flags=("--no-progress",),
        const=False,
        default=True,
        help="a plain progress line every few seconds instead of the live view",
        file_help="the live view on a terminal; false: a plain progress line every few seconds",
        example=False,
    ),
)

RESUME: tuple[Setting, ...] = (
    Setting(
        name="fresh",
        kind=bool,
        group="resume",
        toml=None,
        const=True,
        default=False,
        help="start a new run even if one with the same settings exists",
    ),
    Setting(
        name="run_id",
        kind=str,
        group="resume",
        toml=None,
        metavar="RUN",
        help="resume this run",
        default_text="the run these settings make",
    ),
)

BATCH: tuple[Setting, ...] = (
    Setting(
        name="batch",
        kind=bool,
        group="batch",
        const=True,
        default=False,
        help="send the calls through the provider's Batch API (OpenAI: half price, answers "
        "within 24 h), stage after stage; Ctrl-C or a kill leaves the batches running and "
        "the same command collects them",
        file_help="true: send the calls through the provider's Batch API (OpenAI: half price, "
        "answers within 24 h), stage after stage",
        example=True,
    ),
    Setting(
        name="batch_poll",
        kind=(int, float),
        group="batch",
        metavar="SECONDS",
        default=30.0,
        help="seconds between looks at running batches",
        example=5,
        to=("batch.poll_seconds",),
        check=number_from_zero,
    ),
    Setting(
        name="batch_max_requests",
        kind=int,
        group="batch",
        metavar="N",
        default=50_000,
        help="requests per batch file (OpenAI's limit)",
        example=1000,
        to=("batch.max_requests",),
        check=number_above_zero,
    ),
    Setting(
        name="batch_max_mb",
        kind=(int, float),
        group="batch",
        metavar="MB",
        default=200.0,
        help="megabytes per batch file (OpenAI's limit)",
        example=50,
        to=("batch.max_bytes",),
        check=number_above_zero,
        convert=megabytes,
    ),
)
