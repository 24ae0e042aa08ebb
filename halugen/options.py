"""Every setting of a run in one table: its flag(s), halugen.toml key, environment variable,
type, default and help.

The rest is made from this table:

- the command-line flags (``cli/common.py`` ``add_settings``): their help ends with the
  default, and the commands list the groups of settings they take;
- the value a command uses (``cli/common.py`` ``resolve_settings``): the flag, else the
  environment variable, else ``halugen.toml``, else the default;
- what ``halugen.toml`` accepts and the types it checks (``settings.py`` ``KNOWN_KEYS``);
- the commented file ``halugen init`` writes (``settings.py`` ``init_template``);
- the defaults of ``RunConfig`` and the small config objects it holds (``config.py``).

Adding a setting is one entry in ``SETTINGS``: give it a ``group`` that the commands
which need it take (or a new group, added to those commands with ``add_settings``), and
read ``args.<name>`` in the command: it holds the resolved value. A setting that is part of
``RunConfig`` also gets a field there, with ``default("<name>")`` as its default, and a line
in ``cli/common.py`` ``run_config``. ``tests/cli/test_options.py`` checks that every flag
with a halugen.toml key round-trips through the file (give it an ``example``), that
``halugen init`` lists every key and that ``RunConfig``'s defaults are these.

This module imports nothing from halugen: ``config.py`` and ``--help`` read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_BASE_URL",
    "GROUPS",
    "SETTINGS",
    "Setting",
    "default",
    "setting",
    "settings_in",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """One setting. ``name`` is its attribute on the parsed arguments."""

    name: str
    kind: type | tuple[type, ...]  # what halugen.toml accepts (a flag's type follows from it)
    help: str  # what it does, without the default: the help line adds that
    group: str  # which commands take it: see GROUPS
    default: Any = None
    default_text: str | None = None  # the default in words, where the value alone is unclear
    flags: tuple[str, ...] = ()  # () : halugen.toml only
    toml: str | None = None  # the key in halugen.toml; None: not in the file
    env: str | None = None  # an environment variable that sets it (below the flag)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    nargs: str | None = None  # "+": several values after one flag
    repeat: bool = False  # the flag may be given again (each adds one value)
    const: Any = None  # a flag without a value sets this (True for --batch, False for --no-…)
    example: Any = None  # a value other than the default, for init's template and the tests
    in_template: bool = False  # uncommented in the file `halugen init` writes
    file_help: str | None = None  # the key's note in that file, where the flag's help does not fit

    def default_words(self) -> str:
        """The default as the help line shows it."""
        if self.default_text is not None:
            return self.default_text
        if self.default is None or self.default == ():
            return "none"
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)

    def help_line(self) -> str:
        """The flag's help: what it does, the environment variable, the default."""
        if self.const is not None:
            return self.help  # an on/off flag: it says what turning it on does
        env = f"${self.env}, else " if self.env else ""
        return f"{self.help} (default: {env}{self.default_words()})"


# group -> the title of its flags in --help
GROUPS: dict[str, str] = {
    "seeds": "seeds and prompts",
    "sampling": "sampling",
    "endpoint": "model endpoint",
    "run": "run",
    "resume": "resuming",
    "batch": "batch mode",
    "verify": "label check",
}

SETTINGS: tuple[Setting, ...] = (
    # -- seeds and prompts -------------------------------------------------------------------
    Setting(
        name="task",
        kind=(str, list),
        group="seeds",
        flags=("-t", "--task"),
        toml="task",
        default="qa",
        help="task(s), comma-separated: qa, dialogue, summarization, a task folder's path, "
        "or all (every built-in task with seed files among --seeds)",
        example="dialogue",
        in_template=True,
    ),
    Setting(
        name="seeds",
        kind=(str, list),
        group="seeds",
        flags=("--seeds",),
        toml="seeds",
        nargs="+",
        metavar="FILE",
        default=(),
        help="seed files or glob patterns (HotpotQA, HaluEval, OpenDialKG, CNN/DailyMail)",
        example=["hotpot_train_v1.1.json"],
        in_template=True,
    ),
    Setting(
        name="seed_format",
        kind=str,
        group="seeds",
        flags=("--seed-format",),
        toml="seed_format",
        metavar="FORMAT",
        help="the format of every seed file",
        default_text="detected from each file's content",
        example="hotpotqa",
    ),
    Setting(
        name="map",
        kind=dict,
        group="seeds",
        flags=("--map",),
        toml="map",
        repeat=True,
        metavar="FIELD=COLUMN|EXPR",
        default=(),
        help="read seeds from a table (JSONL, CSV, Parquet, a saved HF dataset): the column "
        "that fills a seed field, e.g. question=query or knowledge=context.sentences (a nested "
        "column; lists are joined with spaces), or a DuckDB SQL expression over the columns, "
        'e.g. right_answer="upper(answer)" (list functions too; not for Arrow files); '
        "repeat per field; id=COLUMN names the seed ids; "
        'in halugen.toml a table, map = {question = "query"}, under which the flags win field '
        "by field. Columns named as the fields need none",
        default_text="none: the columns are named as the task's fields",
        example={"question": "query"},
        file_help='table columns -> seed fields, e.g. { question = "query" }',
    ),
    Setting(
        name="source_name",
        kind=str,
        group="seeds",
        flags=("--source-name",),
        toml="source_name",
        metavar="NAME",
        help="what the dataset card calls the dataset of seeds read from a table (--map or "
        "a task folder's table): a Hub id such as hotpotqa/hotpot_qa, or a name",
        default_text="other-table",
        example="hotpotqa/hotpot_qa",
    ),
    Setting(
        name="license",
        kind=str,
        group="seeds",
        flags=("--license",),
        toml="license",
        metavar="ID",
        help="the licence of seeds read from a table, as the Hub names licences "
        "(cc-by-sa-4.0, mit, ...), for the dataset card",
        default_text="unknown, and the card says so",
        example="cc-by-sa-4.0",
    ),
    Setting(
        name="long_documents",
        kind=str,
        group="seeds",
        flags=("--long-documents",),
        toml="long_documents",
        choices=("truncate", "skip"),
        default="truncate",
        help="a record longer than the model's context: cut its document or skip it; "
        "either is recorded",
        example="skip",
    ),
    Setting(
        name="prompts",
        kind=str,
        group="seeds",
        flags=("--prompts",),
        toml="prompts",
        metavar="DIR",
        help="directory of prompt templates (<task>/<name>.txt) that replace the bundled "
        "ones of the same name",
        default_text="the bundled templates",
        example="my-prompts",
    ),
    # -- sampling ----------------------------------------------------------------------------
    Setting(
        name="temperature",
        kind=(int, float),
        group="sampling",
        flags=("--temperature",),
        toml="temperature",
        default=1.0,
        metavar="T",
        help="sampling temperature (HaluEval: 1)",
        example=0.7,
        in_template=True,
    ),
    Setting(
        name="max_tokens",
        kind=int,
        group="sampling",
        flags=("--max-tokens",),
        toml="max_tokens",
        default=256,
        metavar="N",
        help="most tokens per sampled answer (HaluEval: 256)",
        example=128,
        in_template=True,
    ),
    # -- model endpoint ----------------------------------------------------------------------
    Setting(
        name="base_url",
        kind=str,
        group="endpoint",
        flags=("--base-url",),
        toml="base_url",
        env="OPENAI_BASE_URL",
        metavar="URL",
        default=DEFAULT_BASE_URL,
        help="OpenAI-compatible API root; vLLM, llama.cpp and Ollama work too",
        example="http://127.0.0.1:8000/v1",
    ),
    Setting(
        name="api_key",
        kind=str,
        group="endpoint",
        flags=("--api-key",),
        env="OPENAI_API_KEY",
        metavar="KEY",
        help="API key, never stored (a server on this machine or a private network needs none)",
        default_text="none",
    ),
    Setting(
        name="endpoints",
        kind=list,
        group="endpoint",
        flags=("--endpoint",),
        toml="endpoints",
        repeat=True,
        metavar="URL[,key=ENV_VAR,rpm=N,tpm=N,concurrency=N,weight=W,auth=api-key]",
        default=(),
        help="one endpoint of a fleet (repeat the flag): calls go to whichever has room, "
        "each with its own limits; key= names the environment variable with its key; "
        "replaces --base-url and [[endpoints]] in halugen.toml",
        default_text="one endpoint, --base-url",
        example=[{"url": "http://127.0.0.1:8001/v1", "rpm": 600}],
    ),
    Setting(
        name="model",
        kind=str,
        group="endpoint",
        flags=("-m", "--model"),
        toml="model",
        default="",
        metavar="NAME",
        help="model name sent to the endpoint",
        default_text="gpt-4o-mini on OpenAI's API, on another server the one model it lists",
        example="gpt-4o-mini",
        in_template=True,
    ),
    Setting(
        name="context_window",
        kind=int,
        group="endpoint",
        flags=("--context-window",),
        toml="context_window",
        metavar="TOKENS",
        help="the model's context window in tokens",
        default_text="what the server says, else the price card",
        example=8192,
    ),
    Setting(
        name="concurrency",
        kind=int,
        group="endpoint",
        flags=("-j", "--concurrency"),
        toml="concurrency",
        default=None,
        metavar="N",
        help="most requests in flight (per endpoint in a fleet)",
        default_text="as many as the rate limits need at the latency seen, up to 4,096; up to "
        "256 against a server that announces no limits",
        example=8,
    ),
    Setting(
        name="rpm",
        kind=(int, float),
        group="endpoint",
        flags=("--rpm",),
        toml="rpm",
        metavar="N",
        help="requests per minute your account allows",
        default_text="learned from the server's x-ratelimit headers",
        example=5000,
    ),
    Setting(
        name="tpm",
        kind=(int, float),
        group="endpoint",
        flags=("--tpm",),
        toml="tpm",
        metavar="N",
        help="tokens per minute your account allows",
        default_text="learned from the server's x-ratelimit headers",
        example=2000000,
    ),
    Setting(
        name="price_card",
        kind=str,
        group="endpoint",
        flags=("--price-card",),
        toml="price_card",
        metavar="NAME|FILE",
        help="a bundled price card by name ('local': a self-hosted server at $0) or a TOML file",
        default_text="the bundled card that lists the model",
        example="local",
    ),
    Setting(
        name="price_in",
        kind=(int, float),
        group="endpoint",
        flags=("--price-in",),
        toml="price_in",
        metavar="USD",
        help="USD per million input tokens, over the price card's",
        default_text="the price card's",
        example=0.15,
    ),
    Setting(
        name="price_out",
        kind=(int, float),
        group="endpoint",
        flags=("--price-out",),
        toml="price_out",
        metavar="USD",
        help="USD per million output tokens, over the price card's",
        default_text="the price card's",
        example=0.6,
    ),
    Setting(
        name="timeout",
        kind=(int, float),
        group="endpoint",
        flags=("--timeout",),
        toml="timeout",
        metavar="SECONDS",
        default=300.0,
        help="seconds one attempt may take",
        example=60,
    ),
    Setting(
        name="max_attempts",
        kind=int,
        group="endpoint",
        flags=("--max-attempts",),
        toml="max_attempts",
        default=8,
        metavar="N",
        help="attempts per call before it fails",
        example=3,
    ),
    # -- run ---------------------------------------------------------------------------------
    Setting(
        name="unreachable_after",
        kind=(int, float),
        group="endpoint",
        flags=("--unreachable-after",),
        toml="unreachable_after",
        metavar="SECONDS",
        default=60.0,
        help="stop the run when for this long no attempt could connect to the endpoint, or it "
        "took requests and answered none (timeouts in a row)",
        example=120,
    ),
    Setting(
        name="structured",
        kind=str,
        group="endpoint",
        flags=("--structured",),
        toml="structured",
        choices=("auto", "on", "off"),
        default="auto",
        help="ask judges for JSON through response_format with a JSON schema: auto = when the "
        "endpoint takes it (found out once per endpoint and model by a probe; a run keeps how "
        "it asked), on, off",
        example="off",
    ),
    Setting(
        name="db",
        kind=str,
        group="run",
        flags=("--db",),
        toml="db",
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
        toml="budget",
        metavar="AMOUNT",
        help="most the run may cost, across resumes: 50usd, 12.5USD, or '$50' in quotes",
        default_text="no limit",
        example="5usd",
        in_template=True,
    ),
    Setting(
        name="in_flight_share",
        kind=(int, float),
        group="run",
        flags=("--in-flight-share",),
        toml="in_flight_share",
        metavar="SHARE",
        default=0.25,
        help="most of the budget left that calls in flight may hold at once (0-1]: a kill "
        "counts what they hold as spent, so it costs at most this share",
        example=0.5,
    ),
    Setting(
        name="limit",
        kind=int,
        group="run",
        flags=("-n", "--limit"),
        toml="limit",
        metavar="N",
        help="only the first N seeds of each task",
        default_text="every seed",
        example=1000,
    ),
    Setting(
        name="seed",
        kind=int,
        group="run",
        flags=("--seed",),
        toml="seed",
        metavar="N",
        default=0,
        help="run seed: the candidate order and the seed sent with each request derive "
        "from it (a whole number; seed files are --seeds)",
        example=7,
        in_template=True,
    ),
    Setting(
        name="progress",
        kind=bool,
        group="run",
        flags=("--no-progress",),
        toml="progress",
        const=False,
        default=True,
        help="a plain progress line every few seconds instead of the live view",
        file_help="the live view on a terminal; false: a plain progress line every few seconds",
        example=False,
    ),
    # -- label check (the verify stage) -------------------------------------------------------
    Setting(
        name="verify",
        kind=bool,
        group="verify",
        flags=("--verify",),
        toml="verify",
        const=True,
        default=False,
        help="after the filter, a judge checks each sample against its knowledge: the "
        "hallucinated text must be unsupported, the right text supported; samples that fail "
        "are flagged and left out of exports (docs/verify.md)",
        file_help="check each sample's labels with a judge after the filter (run --verify)",
        example=True,
    ),
    Setting(
        name="verify_model",
        kind=str,
        group="verify",
        flags=("--verify-model",),
        toml="verify_model",
        metavar="MODEL",
        help="the judge model of --verify (another model than the generator's is better: "
        "it does not share its blind spots); on the same endpoint",
        default_text="the run's model",
        example="gpt-4o",
    ),
    # -- resuming ----------------------------------------------------------------------------
    Setting(
        name="fresh",
        kind=bool,
        group="resume",
        flags=("--fresh",),
        const=True,
        default=False,
        help="start a new run even if one with the same settings exists",
    ),
    Setting(
        name="run_id",
        kind=str,
        group="resume",
        flags=("--run-id",),
        metavar="RUN",
        help="resume this run",
        default_text="the run these settings make",
    ),
    # -- batch mode --------------------------------------------------------------------------
    Setting(
        name="batch",
        kind=bool,
        group="batch",
        flags=("--batch",),
        toml="batch",
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
        flags=("--batch-poll",),
        toml="batch_poll",
        metavar="SECONDS",
        default=30.0,
        help="seconds between looks at running batches",
        example=5,
    ),
    Setting(
        name="batch_max_requests",
        kind=int,
        group="batch",
        flags=("--batch-max-requests",),
        toml="batch_max_requests",
        metavar="N",
        default=50_000,
        help="requests per batch file (OpenAI's limit)",
        example=1000,
    ),
    Setting(
        name="batch_max_mb",
        kind=(int, float),
        group="batch",
        flags=("--batch-max-mb",),
        toml="batch_max_mb",
        metavar="MB",
        default=200.0,
        help="megabytes per batch file (OpenAI's limit)",
        example=50,
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def default(name: str) -> Any:
    """The default of the setting ``name`` (``config.py`` takes its defaults from here)."""
    return _BY_NAME[name].default


def setting(name: str) -> Setting:
    return _BY_NAME[name]


def settings_in(group: str) -> Iterator[Setting]:
    """The settings of ``group``, in table order."""
    return (s for s in SETTINGS if s.group == group)
