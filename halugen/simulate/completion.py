"""The body of a simulated chat completion: each choice's reply (the model's words, a
structured reply, a content filter), cut at a stop string or ``max_tokens``, with logprobs
and usage."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from . import answers, prompt_reading
from .config import SimConfig
from .keys import key64, unit
from .request import ChatBody
from .structured import structured_text
from .tokens import BYTE_RULE, TokenRule
from .verify import remember, verify_prompt, verify_reply

__all__ = ["chat_completion", "provider_tokens"]


def provider_tokens(tokens: int, usage_scale: float) -> int:
    """The byte rule's ``tokens`` as a provider whose tokenizer counts ``usage_scale``
    times as many counts them."""
    return math.ceil(tokens * usage_scale)


def chat_completion(
    cfg: SimConfig,
    oracle: Mapping[str, bool] | None,
    req: ChatBody,
    n_out: int,
    digest: bytes,
    fault: str | None,
    cached_tokens: int = 0,
    rule: TokenRule = BYTE_RULE,
) -> tuple[dict[str, Any], int]:
    """(the response body, its completion tokens) for ``req``: ``n_out`` choices, each
    decided by the request's ``digest``; ``oracle`` holds normalised answer texts; tokens
    counted by ``rule``."""
    checking = verify_prompt(req.last_user, req.contents[:-1])  # the verify stage's judge
    info = checking or prompt_reading.with_record(
        prompt_reading.parse_prompt(req.last_user), req.contents[:-1]
    )
    prompt_key = key64(cfg.seed, info.text)  # a follow-up: the record's message decides
    choices = []
    completion_tokens = 0
    for i in range(n_out):
        if fault == "content_filter":
            choices.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": ""},
                    "finish_reason": "content_filter",
                    "logprobs": None,
                }
            )
            continue
        variant_key = key64(cfg.seed, digest, i)
        if checking is not None:
            reply = verify_reply(checking, prompt_key, structured=req.response_format is not None)
        elif (
            cfg.garbage_rate > 0
            and info.kind != "plain"
            and req.response_format is None  # a schema constrains the reply's form
            and unit(variant_key, 71) < cfg.garbage_rate
        ):
            reply = answers.Reply(answers.garbage_reply(variant_key))
        else:
            reply = answers.reply(
                info,
                prompt_key=prompt_key,
                variant_key=variant_key,
                choice=i,
                oracle=oracle,
                judge_accuracy=cfg.judge_accuracy,
                unreadable=cfg.unreadable_verdicts,
            )
        remember(info, reply)  # the verify judge knows the hallucinations it wrote
        if req.response_format is not None:
            reply = replace(
                reply,
                text=structured_text(req.response_format, reply.values, info.labels, variant_key),
            )
        scale = cfg.usage_scale
        # max_tokens is in the provider's tokens: cut where its count reaches it
        limit = req.max_tokens if req.max_tokens is None else int(req.max_tokens / scale)
        text, finish = _finish(reply.text, req.stop, limit, rule)
        completion_tokens += provider_tokens(rule.count(text), scale)
        choice: dict[str, Any] = {
            "index": i,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
            "logprobs": _logprobs(reply, text, req.top_logprobs, variant_key)
            if req.logprobs
            else None,
        }
        choices.append(choice)
    payload: dict[str, Any] = {
        "id": f"chatcmpl-sim{digest.hex()[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.model,
        "system_fingerprint": "fp_halugen_sim",
        "choices": choices,
    }
    if cfg.report_usage:
        payload["usage"] = {
            "prompt_tokens": req.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": req.prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        }
    return payload, completion_tokens


def _finish(
    text: str, stop: tuple[str, ...], max_tokens: int | None, rule: TokenRule
) -> tuple[str, str]:
    finish = "stop"
    if stop:
        cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
        if cut >= 0:
            text = text[:cut]
    if max_tokens is not None:
        text, was_cut = rule.truncate(text, max_tokens)
        if was_cut:
            finish = "length"
    return text, finish


def _logprobs(reply: answers.Reply, text: str, top: int, key: int) -> dict[str, Any]:
    """OpenAI-style logprobs: the Yes/No token for verdicts, one entry per word otherwise."""
    if reply.verdict and reply.verdict in text:
        p = reply.confidence
        other = "No" if reply.verdict == "Yes" else "Yes"
        alts = [
            {"token": reply.verdict, "logprob": math.log(p)},
            {"token": other, "logprob": math.log(1.0 - p)},
        ]
        return {
            "content": [
                {
                    "token": reply.verdict,
                    "logprob": math.log(p),
                    "bytes": list(reply.verdict.encode()),
                    "top_logprobs": alts[:top],
                }
            ]
        }
    content = []
    for i, word in enumerate(text.split()[:512]):
        token = word if i == 0 else " " + word
        lp = -2.0 * unit(key, 1000 + i)
        entry = {"token": token, "logprob": lp, "bytes": list(token.encode()), "top_logprobs": []}
        if top:
            entry["top_logprobs"] = [{"token": token, "logprob": lp}]
        content.append(entry)
    return {"content": content}
