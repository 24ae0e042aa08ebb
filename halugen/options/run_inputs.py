"""The settings of what a generation run reads and makes: seeds and prompts, sampling, the
label check (``run``, ``estimate``, ``batch export``)."""

from __future__ import annotations

from .checks import blank_none, comma_list, not_negative, one_or_more, path_or_none, positive
from .spec import Setting

__all__ = ["SAMPLING", "SEEDS", "VERIFY"]

SEEDS: tuple[Setting, ...] = (
    Setting(
        name="task",
        kind=(str, list),
        group="seeds",
        flags=("-t", "--task"),
        default="qa",
        help="task(s), comma-separated: qa, dialogue, summarization, a task folder's path, "
        "or all (every built-in task with seed files among --seeds)",
        example="dialogue",
        in_template=True,
        to=("tasks",),
        convert=comma_list,
    ),
    Setting(
        name="seeds",
        kind=(str, list),
        group="seeds",
        nargs="+",
        metavar="FILE",
        default=(),
        help="seed files or glob patterns (HotpotQA, HaluEval, OpenDialKG, CNN/DailyMail)",
        example=["hotpot_train_v1.1.json"],
        in_template=True,
        convert=one_or_more,
    ),
    Setting(
        name="seed_format",
        kind=str,
        group="seeds",
        metavar="FORMAT",
        help="the format of every seed file",
        default_text="detected from each file's content",
        example="hotpotqa",
    ),
    Setting(
        name="map",
        kind=dict,
        group="seeds",
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
        to=("seed_map",),
    ),
    Setting(
        name="source_name",
        kind=str,
        group="seeds",
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
        metavar="ID",
        help="the licence of seeds read from a table, as the Hub names licences "
        "(cc-by-sa-4.0, mit, ...), for the dataset card",
        default_text="unknown, and the card says so",
        example="cc-by-sa-4.0",
        to=("source_license",),
    ),
    Setting(
        name="long_documents",
        kind=str,
        group="seeds",
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
        metavar="DIR",
        help="directory of prompt templates (<task>/<name>.txt) that replace the bundled "
        "ones of the same name",
        default_text="the bundled templates",
        example="my-prompts",
        to=("prompts_dir",),
        convert=path_or_none,
    ),
)

SAMPLING: tuple[Setting, ...] = (
    Setting(
        name="temperature",
        kind=(int, float),
        group="sampling",
        default=1.0,
        metavar="T",
        help="sampling temperature (HaluEval: 1)",
        example=0.7,
        in_template=True,
        to=("sampling.temperature",),
        check=not_negative,
    ),
    Setting(
        name="max_tokens",
        kind=int,
        group="sampling",
        default=256,
        metavar="N",
        help="most tokens per sampled answer (HaluEval: 256)",
        example=128,
        in_template=True,
        to=("sampling.max_tokens",),
        check=positive,
    ),
    Setting(
        name="reask",
        kind=str,
        group="sampling",
        choices=("resample", "explain"),
        default="resample",
        help="after a guard turns a candidate away: resample (ask again, a new seed) or explain "
        "(send the rejected reply back with a line naming the guard: prompts/follow_ups.toml)",
        example="explain",
        in_template=True,
        to=("sampling.reask",),
    ),
)

# the verify stage: a judge checks each sample's labels
VERIFY: tuple[Setting, ...] = (
    Setting(
        name="verify",
        kind=bool,
        group="verify",
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
        metavar="MODEL",
        help="the judge model of --verify (another model than the generator's is better: "
        "it does not share its blind spots); on the same endpoint",
        default_text="the run's model",
        example="gpt-4o",
        convert=blank_none,
    ),
)
