"""What 1,000 accepted samples cost, halugen beside HaluEval's own prompts, on the simulator.

For each task (qa, dialogue, summarization) the same seeds go three ways through the
in-process simulator with OpenAI's prompt caching (``halugen.simulate.caching``):

* halugen, interactive: ``generate`` as ``halugen run`` does it; the cache plan sends the
  templates' cached-only blocks where caching pays at the model's prices;
* halugen, batch: ``generate`` with ``--batch`` (the simulator's Batch API); the card gives
  gpt-4o-mini and gpt-4.1-mini batch lines no cached input, so the plan sends the short
  variants. Their tokens at the interactive price are the "interactive" column: what a run
  pays where nothing is cached (the plan sends the same short variants then);
* HaluEval: the requests its ``generation/generate.py`` (one-turn, then multi-turn) and
  ``generation/filtering.py`` send, built at run time from the fetched repository given as
  the first argument (its instruction files and the message-building expressions of those
  scripts, evaluated with the seed's values; nothing of theirs is stored here), sent to the
  same simulator in the order the scripts send them (all one-turn calls, all multi-turn calls,
  then one filter call per seed whose two answers differ: the scripts' minimum, no retries).
  Their output tokens: HaluEval's own answers where the repository's data has them for the
  seed (the 500 QA seeds of qa_*-turn_data.json), else halugen's answer for the same seed and
  instruction, and the filter's one-sentence choice. Every seed is one HaluEval sample (the
  scripts keep them all, "failed!" included).

Costs are priced from the card (budgets/openai.toml) per call: prompt tokens minus cached ones
at the input price, cached ones at the cached price, output at the output price; the Batch
API at the card's discount. The gpt-4o-mini figures are checked against the simulator's own
bill. The simulator counts with cl100k_base (``--tokenizer``; ``bytes`` is its fast byte rule,
4 bytes a token); both sides are counted the same way.

Seeds: the real samples in /work/shared/data read by halugen's readers (which build HaluEval's
fields as its scripts do), written once to a table both sides read: QA from HaluEval's 500 QA
seeds and the 165 HotpotQA dev records, dialogue from OpenDialKG (one seed per dialogue, as
HaluEval), summarization from the 100 CNN/DailyMail articles.

    python bench/cost_per_sample.py /work/.mirror/RUCAIBox+HaluEval/repo [--seeds 1000]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import duckdb
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import SHARED
from batch_cost import StepClock  # the batch service's clock: batches finish at once

from halugen.config import BatchOptions, RunConfig
from halugen.cost.batch_prices import batch_cost
from halugen.cost.prices import ModelPrice, find_price
from halugen.engine import generate, load_tasks, plan_tasks
from halugen.llm.transport import HandlerTransport
from halugen.records import Seed
from halugen.seeds import read_seeds
from halugen.simulate import SimConfig, Simulator
from halugen.simulate.batch import in_process_handlers
from halugen.simulate.config import BatchSimConfig
from halugen.simulate.tokens import TokenRule, token_rule
from halugen.tasks import builtin_task
from halugen.tokens import get_counter

MODELS = ("gpt-4o-mini", "gpt-4.1-mini")
TASKS = ("qa", "dialogue", "summarization")
# seed files per task: (path under /work/shared/data, halugen seed format or None: detect)
DIALOGUE = "opendialkg-dialogue"  # one seed per dialogue, HaluEval's unit
SOURCES: dict[str, list[tuple[str, str | None]]] = {
    "qa": [
        ("halueval/qa_one-turn_data.json", None),
        ("hotpotqa/hotpot_dev_distractor_v1.head165.json", None),
    ],
    "dialogue": [
        ("opendialkg/opendialkg_test_split.csv", DIALOGUE),
        ("opendialkg/opendialkg_valid_split.csv", DIALOGUE),
    ],
    "summarization": [("cnndm/cnn_dailymail_train_sample100.csv", None)],
}
# HaluEval's own answers for the QA seeds of its repository (one-turn, multi-turn)
HALUEVAL_ANSWERS = ("halueval/qa_one-turn_data.json", "halueval/qa_multi-turn_data.json")
# the fields each HaluEval function takes, in its order, and the generated text's field
HALUEVAL_FIELDS = {
    "qa": (("knowledge", "question", "right_answer"), ("knowledge", "question")),
    "dialogue": (
        ("knowledge", "dialogue_history", "right_response"),
        ("knowledge", "dialogue_history"),
    ),
    "summarization": (("document", "right_summary"), ("document",)),
}


# -- seeds ----------------------------------------------------------------------------------


def read_task_seeds(task: str, limit: int, data: Path = SHARED) -> list[Seed]:
    seeds: list[Seed] = []
    seen: set[str] = set()
    for rel, fmt in SOURCES[task]:
        for item in read_seeds([str(data / rel)], task, fmt=fmt):
            if isinstance(item, Seed) and item.key not in seen:
                seen.add(item.key)
                seeds.append(item)
            if len(seeds) >= limit:
                return seeds
    return seeds


def write_table(seeds: Sequence[Seed], path: Path) -> Path:
    path.write_bytes(b"".join(orjson.dumps(dict(s.fields)) + b"\n" for s in seeds))
    return path


# -- HaluEval's requests, built from its scripts at run time ---------------------------------


class HaluEvalScripts:
    """HaluEval's instruction files and the message-building expressions of its scripts."""

    def __init__(self, snapshot: Path) -> None:
        self.snapshot = snapshot
        self.generate = ast.parse(self._read("generation/generate.py"))
        self.filtering = ast.parse(self._read("generation/filtering.py"))

    def _read(self, rel: str) -> str:
        path = self.snapshot / rel
        if path.is_file():
            return path.read_text(encoding="utf-8")
        out = subprocess.run(
            ["git", f"--git-dir={self.snapshot}", "show", f"HEAD:{rel}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode:
            sys.exit(f"cannot read {rel} from {self.snapshot}: {out.stderr.strip()}")
        return out.stdout

    def one_turn(self, task: str) -> str:
        return self._read(f"generation/{task}/{task}_one-turn_instruction.txt")

    def multi_turn(self, task: str) -> list[dict[str, str]]:
        text = self._read(f"generation/{task}/{task}_multi-turn_instruction.json")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def filter_instruction(self, task: str) -> str:
        return self._read(f"generation/{task}/{task}_filtering_instruction.txt")

    def generation_messages(self, task: str, values: Sequence[str], instruction: Any) -> list:
        """The messages ``generate.py``'s ``get_<task>_res`` sends for this instruction."""
        func = _function(self.generate, f"get_{task}_res")
        env = dict(zip([a.arg for a in func.args.args], [*values, instruction], strict=True))
        branch = func.body[0]
        assert isinstance(branch, ast.If)
        if isinstance(instruction, str):
            return _evaluate(_assigned(branch.body, "message"), env)
        other = branch.orelse[0]
        assert isinstance(other, ast.If)
        return list(instruction) + _evaluate(_assigned(other.body, "mes"), env)

    def filter_messages(self, task: str, values: Sequence[str], instruction: str) -> list:
        """The messages ``filtering.py``'s ``get_<task>_res`` sends."""
        func = _function(self.filtering, f"get_{task}_res")
        env = dict(zip([a.arg for a in func.args.args], [*values, instruction], strict=True))
        return _evaluate(_assigned(func.body, "message"), env)

    def filter_reply(self, task: str, choice: int) -> str:
        """The one sentence the filter's system message asks for, with ``choice``."""
        blank = [""] * (_arity(self.filtering, task) - 1)
        system = self.filter_messages(task, blank, "")[0]
        quoted = system["content"].split('"')[1]
        return quoted.replace("1", str(choice), 1)


def _arity(tree: ast.Module, task: str) -> int:
    return len(_function(tree, f"get_{task}_res").args.args)


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise SystemExit(f"HaluEval's script has no function {name}")


def _assigned(body: list[ast.stmt], name: str) -> ast.expr:
    for node in body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise SystemExit(f"HaluEval's script assigns no {name}")


def _evaluate(node: ast.expr, env: Mapping[str, Any]) -> Any:
    """Lists, dicts, string constants, names and + : all the scripts' messages are made of."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _evaluate(node.left, env) + _evaluate(node.right, env)
    if isinstance(node, ast.List):
        return [_evaluate(e, env) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {
            _evaluate(k, env): _evaluate(v, env)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    raise SystemExit(f"unexpected expression in HaluEval's script: {ast.dump(node)[:80]}")


# -- the runs -------------------------------------------------------------------------------


@dataclass
class Tally:
    """Tokens of one way of running a task, per stage, and its accepted samples."""

    samples: int = 0
    calls: dict[str, int] = field(default_factory=dict)
    prompt: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)
    output: dict[str, int] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)  # prompt tokens of the fixed openings
    billed_usd: float = 0.0  # the simulator's own bill (its prices: gpt-4o-mini's)

    def add(self, stage: str, prompt: int, cached: int, output: int, fixed: int = 0) -> None:
        for table, value in (
            (self.calls, 1),
            (self.prompt, prompt),
            (self.cached, cached),
            (self.output, output),
            (self.fixed, fixed),
        ):
            table[stage] = table.get(stage, 0) + value

    def cost_pusd(self, price: ModelPrice, *, cache: bool, batch: bool) -> int:
        stages = self.calls
        total = sum(
            price.cost(self.prompt[s], self.output[s], self.cached[s] if cache else 0)
            for s in stages
        )
        return batch_cost(price, total) if batch else total


# How the simulator counts (usage, cached prefixes) and how openings are measured here: a BPE
# encoding, so that the bill is close to what a provider's tokenizer would count; cl100k_base
# is the one tiktoken has offline (OpenAI's o200k_base counts our openings 1-2% lower).
# --tokenizer bytes gives the simulator's fast byte rule (4 bytes a token), as before.
DEFAULT_TOKENIZER = "cl100k_base"
TOKENIZER = DEFAULT_TOKENIZER
RULE: TokenRule = token_rule(TOKENIZER)


def _simulator(*, batch: bool) -> Simulator:
    if batch:
        return Simulator(
            SimConfig(tokenizer=TOKENIZER, batch=BatchSimConfig(duration_s=5.0, clock=StepClock()))
        )
    return Simulator(SimConfig(tokenizer=TOKENIZER))


def run_halugen(task: str, table: Path, db: Path, *, batch: bool) -> tuple[Tally, dict]:
    sim = _simulator(batch=batch)
    post, get = in_process_handlers(sim)
    cfg = RunConfig(
        tasks=(task,),
        seeds=(str(table),),
        seed_format="table",
        model="gpt-4o-mini",
        base_url="http://sim/v1",
        api_key="k",
        db=db,
        budget_usd=100.0,
        progress=False,
        batch=BatchOptions(poll_seconds=0) if batch else None,
    )
    outcome = anyio.run(lambda: generate(cfg, transport=HandlerTransport(post, get)))
    if outcome.status != "done":
        sys.exit(f"{task}: the halugen run ended {outcome.status}: {outcome.message}")
    price = find_price("gpt-4o-mini")
    assert price is not None
    loaded = plan_tasks(
        load_tasks([builtin_task(task)]), price, get_counter(price.tokenizer), batch=batch
    )[task]
    openings = {
        "sample": [_sim_opening(t) for t in loaded.sample_templates],
        "filter": [_sim_opening(loaded.filter_template)],
    }
    tally = Tally(billed_usd=sim.stats(keys=False)["billed_usd"])
    texts: dict[tuple[str, int], str] = {}
    with duckdb.connect(str(db), read_only=True) as con:
        tally.samples = con.execute("SELECT count(*) FROM samples").fetchone()[0]
        rows = con.execute(
            "SELECT stage, prompt_tokens, COALESCE(cached_tokens, 0), completion_tokens, "
            "request_json FROM calls WHERE status = 'ok' AND stage IN ('sample', 'filter')"
        ).fetchall()
        for stage, prompt, cached, output, request in rows:
            fixed = _fixed_of(stage, request, openings)
            tally.add(stage, prompt, cached, output, fixed)
        for seed_fields, index, text in con.execute(
            "SELECT s.fields_json, c.idx, c.text FROM candidates c JOIN seeds s "
            "USING (run_id, task, seed_key)"
        ).fetchall():
            texts[(_seed_id(orjson.loads(seed_fields), task), index)] = text or ""
    return tally, texts


def _sim_opening(template: Any) -> tuple[str, ...]:
    """The fixed opening's messages as text (the last one cut where the record begins)."""
    out = []
    for _, segs in template.parts:
        text = []
        for seg in segs:
            if isinstance(seg, tuple):
                out.append("".join(text))
                return tuple(out)
            text.append(seg)
        out.append("".join(text))
    return tuple(out)


def _fixed_of(stage: str, request_json: str | None, openings: dict) -> int:
    """Simulator tokens of the opening this request starts with (0 when none matches)."""
    if not request_json:
        return 0
    messages = orjson.loads(request_json).get("messages") or []
    contents = [m.get("content") or "" for m in messages]
    for opening in openings.get(stage, []):
        if (
            len(contents) >= len(opening)
            and all(
                c == o for c, o in zip(contents[: len(opening) - 1], opening[:-1], strict=False)
            )
            and contents[len(opening) - 1].startswith(opening[-1])
        ):
            return sum(4 + RULE.count(text) for text in opening)
    return 0


def _seed_id(fields: Mapping[str, str], task: str) -> str:
    return "\x1f".join(fields.get(name, "") for name in HALUEVAL_FIELDS[task][0])


def run_halueval(
    task: str,
    seeds: Sequence[Seed],
    scripts: HaluEvalScripts,
    ours: Mapping[tuple[str, int], str],
    real: Mapping[tuple[str, int], str],
) -> Tally:
    """HaluEval's calls for these seeds through a simulator with caching; one sample a seed."""
    sim = _simulator(batch=False)
    tally = Tally(samples=len(seeds))
    gen_fields, filter_fields = HALUEVAL_FIELDS[task]
    instructions = (scripts.one_turn(task), scripts.multi_turn(task))
    answers: dict[tuple[int, int], str] = {}
    for strategy, instruction in enumerate(instructions):
        fixed = _halueval_fixed(scripts, task, gen_fields, instruction)
        for i, seed in enumerate(seeds):
            values = [seed.fields[name] for name in gen_fields]
            messages = scripts.generation_messages(task, values, instruction)
            prompt, cached = _send(sim, messages, temperature=1)
            sid = _seed_id(seed.fields, task)
            text = real.get((sid, strategy)) or ours.get((sid, strategy)) or ""
            answers[(i, strategy)] = text
            tally.add("sample", prompt, cached, RULE.count(text), fixed)
    filter_instruction = scripts.filter_instruction(task)
    fixed = _halueval_fixed(scripts, task, filter_fields, filter_instruction, filtering=True)
    reply = RULE.count(scripts.filter_reply(task, 1))
    for i, seed in enumerate(seeds):
        first, second = answers[(i, 0)], answers[(i, 1)]
        if first == second:
            continue  # the script picks one at random without a call
        values = [seed.fields[name] for name in filter_fields] + [first, second]
        messages = scripts.filter_messages(task, values, filter_instruction)
        prompt, cached = _send(sim, messages, temperature=0)
        tally.add("filter", prompt, cached, reply, fixed)
    tally.billed_usd = sim.stats(keys=False)["billed_usd"]
    return tally


def _halueval_fixed(
    scripts: HaluEvalScripts,
    task: str,
    fields: Sequence[str],
    instruction: Any,
    *,
    filtering: bool = False,
) -> int:
    """Simulator tokens HaluEval's requests share before the record: two records' common
    opening."""
    builds = []
    for mark in ("\x01", "\x02"):
        values = [mark] * (len(fields) + (2 if filtering else 0))
        if filtering:
            builds.append(scripts.filter_messages(task, values, instruction))
        else:
            builds.append(scripts.generation_messages(task, values, instruction))
    total = 0
    for a, b in zip(*builds, strict=True):
        if a == b:
            total += 4 + RULE.count(a["content"])
            continue
        common = 0
        while a["content"][common] == b["content"][common]:
            common += 1
        total += 4 + RULE.count(a["content"][:common])
        break
    return total


def _send(sim: Simulator, messages: list, *, temperature: float) -> tuple[int, int]:
    body = orjson.dumps(
        {
            "model": "gpt-4o-mini",
            "messages": messages,
            "temperature": temperature,
            "max_tokens": 256,
        }
    )
    response = anyio.run(sim.handle, "/v1/chat/completions", {}, body)
    usage = orjson.loads(response.body)["usage"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return usage["prompt_tokens"], cached


def halueval_answers(task: str, data: Path = SHARED) -> dict[tuple[str, int], str]:
    """HaluEval's own generated answers for the seeds its repository has them for."""
    if task != "qa":
        return {}
    out: dict[tuple[str, int], str] = {}
    for strategy, rel in enumerate(HALUEVAL_ANSWERS):
        path = data / rel
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            out[(_seed_id(record, task), strategy)] = record["hallucinated_answer"]
    return out


# -- the report -----------------------------------------------------------------------------


def per_thousand(pusd: int, samples: int) -> float:
    return pusd / 1e12 / max(samples, 1) * 1000


def report(task: str, n: int, inter: Tally, batch: Tally, halueval: Tally) -> list[str]:
    lines = [f"\n{task}: {n} seeds; halugen accepted {inter.samples} (interactive) and "
             f"{batch.samples} (batch); HaluEval keeps every seed"]  # fmt: skip
    price4o = find_price("gpt-4o-mini")
    assert price4o is not None
    mine = inter.cost_pusd(price4o, cache=True, batch=False) / 1e12
    lines.append(
        f"  check: halugen interactive at gpt-4o-mini ${mine:.6f}, the simulator billed "
        f"${inter.billed_usd:.6f}"
    )
    header = (
        f"  {'model':13s} {'who':9s} {'interactive':>12s} {'+ caching':>12s} "
        f"{'batch':>12s} {'batch+cache':>12s}   x HaluEval interactive"
    )
    lines.append(header)
    for model in MODELS:
        price = find_price(model)
        assert price is not None
        base = per_thousand(halueval.cost_pusd(price, cache=False, batch=False), halueval.samples)
        rows = {
            "halugen": (
                per_thousand(batch.cost_pusd(price, cache=False, batch=False), batch.samples),
                per_thousand(inter.cost_pusd(price, cache=True, batch=False), inter.samples),
                per_thousand(batch.cost_pusd(price, cache=False, batch=True), batch.samples),
                per_thousand(batch.cost_pusd(price, cache=True, batch=True), batch.samples)
                if price.batch_caches
                else None,
            ),
            "HaluEval": (
                base,
                per_thousand(halueval.cost_pusd(price, cache=True, batch=False), halueval.samples),
                per_thousand(halueval.cost_pusd(price, cache=False, batch=True), halueval.samples),
                per_thousand(halueval.cost_pusd(price, cache=True, batch=True), halueval.samples)
                if price.batch_caches
                else None,
            ),
        }
        for who, values in rows.items():
            cells = " ".join(f"{'-' if v is None else f'${v:.4f}':>12s}" for v in values)
            ratios = " ".join("-" if v is None else f"{v / base:.2f}" for v in values)
            lines.append(f"  {model:13s} {who:9s} {cells}   {ratios}")
    for who, t in (("halugen", inter), ("HaluEval", halueval)):
        prompt = sum(t.prompt.values())
        cached = sum(t.cached.values())
        lines.append(
            f"  {who} with caching: {cached / max(prompt, 1):.0%} of {prompt:,} input tokens "
            "from cache; per accepted sample:"
        )
        for stage in t.calls:
            s = max(t.samples, 1)
            lines.append(
                f"    {stage:7s} {t.calls[stage] / s:4.2f} calls, fixed {t.fixed[stage] / s:6.0f} "
                f"(cached {t.cached[stage] / s:6.0f}), record and what follows it "
                f"{(t.prompt[stage] - t.fixed[stage]) / s:5.0f}, output {t.output[stage] / s:4.0f}"
            )
    return lines


def main() -> None:
    global TOKENIZER, RULE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "halueval", type=Path, help="the fetched RUCAIBox/HaluEval snapshot (git dir or checkout)"
    )
    ap.add_argument("--seeds", type=int, default=1000, help="seeds per task at most")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument(
        "--data", type=Path, default=SHARED, help="the seed samples (/work/shared/data)"
    )
    ap.add_argument(
        "--tokenizer",
        default=DEFAULT_TOKENIZER,
        help=f"what the simulator counts with: a tiktoken encoding, or bytes "
        f"(default: {DEFAULT_TOKENIZER})",
    )
    args = ap.parse_args()
    TOKENIZER, RULE = args.tokenizer, token_rule(args.tokenizer)
    scripts = HaluEvalScripts(args.halueval)
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks.split(","):
            seeds = read_task_seeds(task, args.seeds, args.data)
            table = write_table(seeds, Path(tmp) / f"{task}.jsonl")
            inter, texts = run_halugen(task, table, Path(tmp) / f"{task}-i.duckdb", batch=False)
            batch, _ = run_halugen(task, table, Path(tmp) / f"{task}-b.duckdb", batch=True)
            real = halueval_answers(task, args.data)
            halueval = run_halueval(task, seeds, scripts, texts, real)
            lines = report(task, len(seeds), inter, batch, halueval)
            print("\n".join(lines), flush=True)
            out += lines
    note = (
        f"\nQA seeds: {len(read_task_seeds('qa', args.seeds, args.data))} exist in "
        f"{args.data} (HaluEval's 500 and HotpotQA's 165)"
        if "qa" in args.tasks
        else ""
    )
    print(note)


if __name__ == "__main__":
    main()
