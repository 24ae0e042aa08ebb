"""Batch files for any engine: export a run's pending requests, import the engine's answers.

``export_requests`` runs one planning pass of a generation run (the same as ``--batch``;
its caller gives the session factory, ``engine.generate_session``:
answers already in the store are used, and what the pass completes is written) and writes
the requests of its next stage in the OpenAI batch input format, ``custom_id`` = request
key. It sends no request: the engine that runs the file may be anywhere. It asks the server
which model it serves (``GET /models``) as every command does, and what the requests
depend on (structured outputs) comes from the flags or the store, never from a probe; the
export says which. The export is recorded in the store (a batch of kind 'export' and its
lines), so that ``import_results`` knows which answers the run expects.

``import_results`` reads an output file in the OpenAI format (as vLLM's ``run_batch``, a
Ray job or the provider's console writes it) and checks every line before it writes
anything: a malformed line, a custom_id no export expects, a request echoed in the line
that is not the exported one, or an answer that is not from the exported model is refused
with one line naming it, and nothing in the store changes. Then each answer becomes an
ordinary stored call (status 'ok', found by its key by the next run) and its cost, priced
from its own usage (``--price-card local`` for a lab's own engine), is settled in the ledger.
Lines already imported are skipped, so importing a file twice changes nothing.
"""

from __future__ import annotations

import dataclasses
import io
import os
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console

from ..config import BatchOptions, RunConfig, Timeouts
from ..cost.batch_prices import batch_cost
from ..cost.prices import ModelPrice, find_price, format_usd
from ..errors import InputError, UsageError
from ..llm.transport import AiohttpTransport, HttpResponse, Transport
from ..records import canonical_json
from ..store import batch_queries
from ..store.db import Store, open_store
from ..store.writer import WriterRow
from ..tokens import get_counter
from . import book
from .files import OutputLine, input_line, read_output
from .modes import OpenPass, PlanForBatch
from .plan import PassPlan
from .run import KindOutcome

__all__ = ["ExportOutcome", "ImportOutcome", "export_requests", "import_results"]


@dataclass(frozen=True)
class ExportOutcome:
    run_id: str
    batch_id: str
    path: Path
    requests: int
    by_stage: dict[str, int]  # every pending request of the pass, per stage
    pass_message: str  # what the planning pass reported
    notes: tuple[str, ...] = ()  # how the requests ask (JSON or text) and why


@dataclass(frozen=True)
class ImportOutcome:
    imported: int  # answers stored
    failed: int  # lines that carried an error (recorded as failed calls)
    skipped: int  # lines imported before
    cost_pusd: int
    runs: tuple[str, ...]
    notes: tuple[str, ...] = ()


async def export_requests(
    cfg: RunConfig,
    out: Path,
    open_pass: OpenPass[KindOutcome],
    *,
    stage: str | None = None,
    transport: Transport | None = None,
) -> ExportOutcome:
    """Write the pending requests of ``cfg``'s run (of ``stage``, default all) to ``out``,
    planned by one session ``open_pass`` opens (generation's).

    ``transport`` answers the server's description of itself (GET); it is never sent a
    chat request.
    """
    plan = PassPlan(offline=True)
    asks = transport or AiohttpTransport()
    try:
        outcome = await open_pass(
            dataclasses.replace(cfg, batch=cfg.batch or BatchOptions(), progress=False),
            PlanForBatch(plan),
            transport=_GetOnly(asks),
            console=Console(file=io.StringIO()),  # the pass's own figures are not the export's
            on_run=None,
        )
    finally:
        if transport is None:
            await asks.aclose()
    if outcome.status in ("failed", "input_error"):
        raise UsageError(outcome.message)
    by_stage = Counter(p.stage for p in plan.requests.values())
    chosen = [p for p in plan.requests.values() if stage is None or p.stage == stage]
    if stage is not None and not chosen and by_stage:
        pending = ", ".join(f"{s} ({n})" for s, n in sorted(by_stage.items()))
        raise UsageError(
            f"run {outcome.run_id} has no pending {stage} requests; its pending requests are "
            f"{pending}: pass --stage with one of those"
        )
    batch_id = f"hb-{uuid.uuid4().hex[:12]}"
    lines = [input_line(p.key, p.body) for p in chosen]
    tmp = out.with_name(out.name + ".part")
    try:
        with open(tmp, "wb") as f:
            f.writelines(lines)
        os.replace(tmp, out)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    if chosen:
        with open_store(cfg.db) as store:
            rows: list[WriterRow] = [
                book.batch_row(
                    batch_id,
                    outcome.run_id,
                    kind="export",
                    state="exported",
                    requests=len(chosen),
                    reserved_pusd=0,
                    size=sum(len(line) for line in lines),
                    base_url=None,
                    detail=str(out),
                )
            ]
            # call ids are given when answers are imported (an export reserves no money)
            rows += [
                book.line_row(batch_id, outcome.run_id, n, 0, p, 0)
                for n, p in enumerate(chosen, start=1)
            ]
            store.writer.put(rows)
            store.writer.flush_blocking()
    return ExportOutcome(
        outcome.run_id,
        batch_id,
        out,
        len(chosen),
        dict(by_stage),
        outcome.message,
        tuple(outcome.notes),
    )


class _GetOnly:
    """A transport that asks a server about itself and never sends it a request."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    async def get(self, url: str, headers: Mapping[str, str], timeouts: Timeouts) -> HttpResponse:
        return await self._transport.get(url, headers, timeouts)

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeouts: Timeouts
    ) -> HttpResponse:
        raise RuntimeError(f"batch export sends no request ({url})")

    async def aclose(self) -> None:
        return None


def import_results(
    db: Path,
    path: Path,
    *,
    price_card: str | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    batch_discount: bool = False,
) -> ImportOutcome:
    """Store the answers of an output file; every line is checked before anything is written."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    with open_store(db) as store:
        expected = _expected(store)
        checked: list[tuple[OutputLine, book.LineRecord]] = []
        seen: dict[str, int] = {}
        for out in read_output(data, str(path)):
            where = f"{path} line {out.line_no}"
            line = expected.get(out.custom_id)
            if line is None:
                raise InputError(
                    f"{where}: custom_id {out.custom_id[:24]!r} is not a request any export "
                    f"of {db} expects (export the run's requests with 'halugen batch export')"
                )
            if out.custom_id in seen:
                raise InputError(
                    f"{where}: custom_id {out.custom_id[:24]!r} was already answered on line "
                    f"{seen[out.custom_id]}"
                )
            seen[out.custom_id] = out.line_no
            _check(out, line, where)
            checked.append((out, line))
        return _store_answers(
            store,
            checked,
            price_card=price_card,
            price_in=price_in,
            price_out=price_out,
            batch_discount=batch_discount,
        )


def _expected(store: Store) -> dict[str, book.LineRecord]:
    """custom_id -> the latest exported line that asked for it."""
    rows = batch_queries.exported_lines(store)
    return {r[2]: book.LineRecord(*r) for r in rows}


def _check(out: OutputLine, line: book.LineRecord, where: str) -> None:
    request = orjson.loads(line.request_json)
    if out.request_body is not None and canonical_json(out.request_body) != canonical_json(request):
        raise InputError(
            f"{where}: the request in the line is not the one exported under custom_id "
            f"{line.custom_id[:24]!r} (its body does not match the request key)"
        )
    completion = out.completion
    if completion is None:
        return
    model = completion.model
    if model and not _same_model(model, line.model):
        raise InputError(
            f"{where}: the answer is from model {model!r}, but request {line.custom_id[:24]!r} "
            f"asked {line.model!r}"
        )
    n = int(request.get("n") or 1)
    if len(completion.texts) > n:
        raise InputError(
            f"{where}: {len(completion.texts)} choices for a request that asked for {n}"
        )


def _same_model(answered: str, asked: str) -> bool:
    """A provider may answer with a dated snapshot of the model asked (gpt-4o-mini-2024-...)."""
    return answered == asked or answered.startswith(asked + "-")


def _price_of(
    store: Store, run_id: str, model: str, card: str | None, p_in: float | None, p_out: float | None
) -> ModelPrice:
    if card or p_in is not None or p_out is not None:
        price = find_price(model, card=card, price_in=p_in, price_out=p_out)
        if price is None:
            raise UsageError(
                f"no price for model {model!r} on card {card!r}: give --price-in and --price-out"
            )
        return price
    run = store.get_run(run_id)
    record = orjson.loads(run["price_json"]) if run and run.get("price_json") else None
    if not record:
        raise UsageError(
            f"run {run_id} has no price on record: give --price-card or --price-in/--price-out"
        )
    return ModelPrice.per_million(
        model,
        float(record["usd_per_million_input"]),
        float(record["usd_per_million_output"]),
        float(record["usd_per_million_cached_input"]),
        tokenizer=str(record.get("tokenizer") or "cl100k_base"),
        batch_discount=float(record.get("batch_discount") or 0.0),
        card=str(record.get("card") or ""),
    )


def _store_answers(
    store: Store,
    checked: list[tuple[OutputLine, book.LineRecord]],
    *,
    price_card: str | None,
    price_in: float | None,
    price_out: float | None,
    batch_discount: bool,
) -> ImportOutcome:
    answered = store.response_index()
    failed_before = {(r[0], r[1]) for r in batch_queries.failed_calls(store)}
    next_call_id = store.next_call_id()
    prices: dict[tuple[str, str], ModelPrice] = {}
    counters: dict[str, Any] = {}
    rows: list[WriterRow] = []
    imported = failed = skipped = 0
    cost_total = 0
    cost_by_run: Counter[str] = Counter()
    for out, line in checked:
        answered_before = line.custom_id in answered and _has(store, line)
        if answered_before or (not out.ok and (line.custom_id, out.error[:500]) in failed_before):
            skipped += 1
            continue
        line = dataclasses.replace(line, call_id=next_call_id)
        next_call_id += 1
        if not out.ok:
            failed += 1
            rows.append(
                book.line_log_row(
                    line,
                    status="failed",
                    cost=0,
                    attempts=1,
                    http_status=out.status_code or None,
                    error_class=book.error_class(out),
                    error=out.error[:500],
                )
            )
            continue
        assert out.completion is not None
        price = prices.get((line.run_id, line.model))
        if price is None:
            price = prices[(line.run_id, line.model)] = _price_of(
                store, line.run_id, line.model, price_card, price_in, price_out
            )
        counter = counters.get(price.tokenizer)
        if counter is None:
            counter = counters[price.tokenizer] = get_counter(price.tokenizer)
        messages = orjson.loads(line.request_json).get("messages") or []
        result = out.completion.result(
            model=line.model, messages=messages, count_tokens=counter.count
        )
        cost = price.cost(result.prompt_tokens, result.completion_tokens, result.cached_tokens)
        if batch_discount:
            cost = batch_cost(price, cost)
        status = "content_filter" if "content_filter" in result.finish_reasons else "ok"
        # a reservation and its settlement together: the money views count reserved calls
        rows.append(book.ledger_row(line, "batch_reserve", cost))
        rows.append(book.ledger_row(line, "settle", cost))
        rows.append(
            book.line_log_row(
                line,
                status=status,
                cost=cost,
                attempts=1,
                answer=result,
            )
        )
        imported += 1
        cost_total += cost
        cost_by_run[line.run_id] += cost
    notes = []
    for run_id, cost in cost_by_run.items():
        run = store.get_run(run_id)
        budget = run["budget_pusd"] if run else None
        spent = store.spent(run_id)
        if budget is not None and spent + cost > budget:
            notes.append(
                f"run {run_id}: the imported answers cost {format_usd(cost)}, which takes its "
                f"spending to {format_usd(spent + cost)}, over its budget of {format_usd(budget)}"
            )
    if rows:
        store.writer.put(rows)
        store.writer.flush_blocking()  # one transaction: all of the file or none of it
    runs = tuple(sorted({line.run_id for _, line in checked}))
    return ImportOutcome(imported, failed, skipped, cost_total, runs, tuple(notes))


def _has(store: Store, line: book.LineRecord) -> bool:
    return store.cached_response(line.custom_id) is not None
