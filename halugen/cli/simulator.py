"""``halugen simulate``: the built-in OpenAI-compatible simulator on loopback."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from .common import first_json

# The simulator's caching rules: (flag, type, default, metavar, help); OpenAI's as defaults
_CACHE_RULES: tuple[tuple[str, type, float, str, str], ...] = (
    (
        "--cache-min-tokens",
        int,
        1024,
        "N",
        "prompts shorter than this are never cached (default: 1024, as OpenAI)",
    ),
    (
        "--cache-step-tokens",
        int,
        128,
        "N",
        "a hit is the minimum plus whole steps of this many tokens (default: 128, as OpenAI)",
    ),
    (
        "--cache-idle-s",
        float,
        300.0,
        "SECONDS",
        "an unused prefix is dropped after this long (default: 300; OpenAI: 5-10 minutes)",
    ),
    (
        "--cache-max-s",
        float,
        3600.0,
        "SECONDS",
        "and at most this long after it was cached (default: 3600; OpenAI: one hour)",
    ),
    (
        "--cache-extended-s",
        float,
        86400.0,
        "SECONDS",
        'prompt_cache_retention "24h": kept this long (default: 86400; OpenAI: 24 hours, for '
        "gpt-5, gpt-5.x and gpt-4.1)",
    ),
)


def add_parsers(sub: Any) -> None:
    sim = sub.add_parser("simulate", help="serve the OpenAI-compatible simulator on loopback")
    sim.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    sim.add_argument(
        "--port", type=int, default=8000, help="port; 0 picks a free one (default: 8000)"
    )
    sim.add_argument(
        "--latency-ms", type=float, default=0.0, help="delay before each answer (default: 0)"
    )
    sim.add_argument(
        "--jitter-ms",
        type=float,
        default=0.0,
        help="extra delay per request, drawn from [0, N) (default: 0)",
    )
    sim.add_argument(
        "--rpm", type=float, help="requests per minute the account allows (default: no limit)"
    )
    sim.add_argument(
        "--tpm",
        type=float,
        help="tokens per minute, prompt + n * max_tokens (default: no limit)",
    )
    sim.add_argument(
        "--quantise",
        type=float,
        metavar="SECONDS",
        help="enforce --rpm/--tpm over windows this long, as OpenAI does (1: 1,200 rpm is 20 "
        "a second; 60: a whole minute may burst); refused requests count against the limit "
        "(default: the per-minute bucket alone, refused requests free)",
    )
    sim.add_argument(
        "--capacity",
        type=int,
        metavar="N",
        help="serve N requests at once and queue the rest, like a self-hosted server "
        "(llama.cpp: --capacity 1 --no-n); the queue wait counts against the client's timeout "
        "(default: no limit)",
    )
    sim.add_argument(
        "--fail-rate",
        type=float,
        default=0.0,
        help="share of requests that hit a fault, 0 to 1 (default: 0)",
    )
    sim.add_argument(
        "--faults",
        help="comma-separated fault kinds that --fail-rate draws from: "
        "500,503,hang,malformed,content_filter,drop (default: all)",
    )
    sim.add_argument(
        "--hang-s",
        type=float,
        default=30.0,
        help="how long a 'hang' fault holds its request, in seconds (default: 30)",
    )
    sim.add_argument(
        "--price-in",
        type=float,
        default=0.15,
        help="USD per million prompt tokens on its own bill (default: 0.15)",
    )
    sim.add_argument(
        "--price-out",
        type=float,
        default=0.60,
        help="USD per million completion tokens on its own bill (default: 0.60)",
    )
    sim.add_argument(
        "--api-key", help="require this key, 401 otherwise (default: any key, or none)"
    )
    sim.add_argument(
        "--price-cached",
        type=float,
        help="USD per million prompt tokens served from the prompt cache (default: half of "
        "--price-in, gpt-4o-mini's ratio)",
    )
    cache = sim.add_argument_group(
        "prompt caching",
        "automatic prefix caching as OpenAI does it: a prompt's opening that an earlier "
        "request sent is served from cache (usage.prompt_tokens_details.cached_tokens) and "
        "billed at --price-cached",
    )
    cache.add_argument("--no-cache", action="store_true", help="never cache prompts")
    for flag, kind, default, metavar, text in _CACHE_RULES:
        cache.add_argument(flag, type=kind, default=default, metavar=metavar, help=text)
    cache.add_argument(
        "--cache-batch",
        choices=("openai", "yes", "no"),
        default="openai",
        help="Batch API lines get cached input: openai (default: as OpenAI, for the GPT-5 "
        "family and later), yes (always) or no (never)",
    )
    cache.add_argument(
        "--cache-route-rpm",
        type=float,
        metavar="N",
        help="requests a minute one machine takes for one prefix and prompt_cache_key; the "
        "rest overflow to further machines that miss once each (OpenAI: about 15; default: "
        "no overflow)",
    )
    sim.add_argument(
        "--auth",
        choices=("bearer", "api-key"),
        default="bearer",
        help="how the key must come: Authorization: Bearer, or an api-key header "
        "(Azure-style) (default: bearer)",
    )
    sim.add_argument(
        "--garbage-rate",
        type=float,
        default=0.0,
        help="share of answers that ignore the format the prompt asks for, 0 to 1 (default: 0)",
    )
    sim.add_argument("--no-n", action="store_true", help="ignore n>1 like some servers")
    sim.add_argument(
        "--response-format",
        choices=("honour", "ignore", "400", "500"),
        default="honour",
        help="what the server does with a JSON response_format: honour it (structured "
        "outputs), ignore it and reply in text, or refuse it with a 400 (older servers) or a "
        "500 (llama-cpp-python's server) (default: honour)",
    )
    sim.add_argument("--no-usage", action="store_true", help="omit usage from responses")
    sim.add_argument(
        "--usage-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="count (and bill) X times the tokens of the simulator's byte rule, like a "
        "provider whose tokenizer counts more than the client's (1.6: 60%% more) (default: 1)",
    )
    sim.add_argument(
        "--tokenizer",
        default="bytes",
        metavar="NAME",
        help="count tokens (usage, limits, cached prefixes, replies cut at max_tokens) with "
        "this tiktoken encoding, e.g. cl100k_base, for a bill close to a provider's; 'bytes' "
        "is the fast byte rule, 4 bytes a token (default: bytes)",
    )
    sim.add_argument(
        "--down-after",
        type=int,
        metavar="N",
        help="serve N chat requests, then go down for good: stop listening, refuse the rest "
        "(default: never)",
    )
    sim.add_argument(
        "--frozen-after",
        type=int,
        metavar="N",
        help="answer N chat requests, then freeze: take every later one and never answer it "
        "(default: never)",
    )
    sim.add_argument(
        "--max-n",
        type=int,
        metavar="N",
        help="refuse requests asking for more than N choices with a 400 naming the field, as "
        "llama.cpp's server does above its slot count (-np) (default: no cap)",
    )
    sim.add_argument(
        "--context-window",
        type=int,
        metavar="TOKENS",
        help="each request's context window, prompt and reply (llama.cpp: a slot's share of "
        "-c); longer prompts get a 400 naming it (default: the simulator's own)",
    )
    sim.add_argument(
        "--announce-window",
        choices=("models", "props", "none"),
        default="none",
        help="say the window in GET /v1/models (vLLM's max_model_len), in GET /props "
        "(llama.cpp's n_ctx), or only in 400 replies (default: none)",
    )
    sim.add_argument(
        "--announce-slots",
        action="store_true",
        help="say the --capacity in GET /props as total_slots, as llama.cpp's server does",
    )
    sim.add_argument(
        "--seed", type=int, default=0, help="mixes into every simulated choice (default: 0)"
    )
    sim.add_argument(
        "--oracle",
        nargs="+",
        metavar="FILE",
        help="HaluEval files whose labels the simulated judge knows, for recognition "
        "experiments (default: none; the judge guesses)",
    )
    sim.add_argument(
        "--judge-accuracy",
        type=float,
        help="how often the simulated judge is right about oracle answers, 0 to 1 (default: 1)",
    )


def cmd_simulate(args: argparse.Namespace) -> int:
    from ..simulate import CacheConfig, SimConfig, run_server

    kw: dict[str, Any] = {}
    if args.faults:
        kw["faults"] = tuple(f.strip() for f in args.faults.split(",") if f.strip())
    if args.oracle:
        from ..evaluate.items import items_from_files
        from ..evaluate.judge import shown_texts
        from ..tasks import BUILTIN_TASKS, builtin_task

        oracle: dict[str, bool] = {}
        for path in args.oracle:
            spec = next(
                (
                    s
                    for s in map(builtin_task, BUILTIN_TASKS)
                    if all(f in first_json(path) for f in s.record_fields)
                ),
                None,
            )
            if spec is None:
                raise UsageError(f"--oracle {path}: not one of HaluEval's released layouts")
            for item in items_from_files([path], spec):
                right, hallucinated = shown_texts(spec, item)
                if spec.name == "general":
                    oracle[right] = bool(item.human_label)
                else:
                    oracle[right], oracle[hallucinated] = False, True
        kw["oracle"] = oracle
    if args.judge_accuracy is not None:
        kw["judge_accuracy"] = args.judge_accuracy
    if args.context_window is not None:
        kw["context_window"] = args.context_window
    cache = CacheConfig(
        enabled=not args.no_cache,
        min_tokens=args.cache_min_tokens,
        step_tokens=args.cache_step_tokens,
        idle_s=args.cache_idle_s,
        max_s=args.cache_max_s,
        extended_s=args.cache_extended_s,
        batch={"openai": None, "yes": True, "no": False}[args.cache_batch],
        route_rpm=args.cache_route_rpm,
    )
    config = SimConfig(
        quantum_s=args.quantise,
        capacity=args.capacity,
        latency_ms=args.latency_ms,
        jitter_ms=args.jitter_ms,
        rpm=args.rpm,
        tpm=args.tpm,
        fail_rate=args.fail_rate,
        hang_s=args.hang_s,
        price_in=args.price_in,
        price_out=args.price_out,
        price_cached=args.price_cached,
        cache=cache,
        api_key=args.api_key,
        auth=args.auth,
        honour_n=not args.no_n,
        response_format=args.response_format,
        report_usage=not args.no_usage,
        seed=args.seed,
        garbage_rate=args.garbage_rate,
        usage_scale=args.usage_scale,
        tokenizer=args.tokenizer,
        down_after=args.down_after,
        frozen_after=args.frozen_after,
        max_n=args.max_n,
        announce_slots=args.announce_slots,
        announce_window=args.announce_window,
        **kw,
    )

    def ready(port: int) -> None:
        print(f"simulator listening on http://{args.host}:{port}/v1", flush=True)

    try:
        run_server(config, args.host, args.port, ready=ready)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return 0


COMMANDS = {"simulate": cmd_simulate}
