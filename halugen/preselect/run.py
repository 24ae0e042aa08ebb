"""Pre-selection of user queries (HaluEval's general track): sample N responses per query,
score how much they disagree (mean pairwise BERTScore F1), keep the K least similar.

Sampling goes through the same call machinery as generation (budget, limits, request keys,
resume). ``n`` is used when the server honours it, which is settled before the first
sampling request (``llm/capabilities.py``: a probe, or what is stored); a reply that still
comes back with fewer choices than asked has the missing responses sampled with separate
calls. Scoring runs in a worker thread in batches, one scorer
loaded once. Every score is stored (``preselect_scores``, view ``preselect_ranked``); the
kept set is the K lowest, found by a streaming top-K over the stored scores.

What comes back is checked before it is scored: an empty response or one cut by a content
filter is stored in ``preselect_dropped`` with the reason, never among the responses that are
scored and annotated; a query keeps its score from the usable responses it has (at least
two), else it is stored in ``preselect_unscored`` with the reason, as is a query whose
scoring failed (tried again by the next run over the same store).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from rich.console import Console

from ..batch.modes import SendNow
from ..batch.run import run_in_batches
from ..config import RunConfig
from ..cost.prices import format_usd
from ..cost.run_price import resolve_price
from ..crew import crew_size, run_crew
from ..endings import closing, with_failed_work
from ..errors import RunStopping, UsageError
from ..llm.calls import CallFailure
from ..llm.capabilities import N_CHOICES, refuses_field
from ..llm.strategy import DEFERRED, CallMode
from ..llm.transport import Transport
from ..options.table import default
from ..records import BadRecord, ChatRequest, fingerprint
from ..session import CallSession, OnRun, call_session, drive, resolve_model
from ..store import session_queries
from ..store.key_index import KeyIndex, key_prefix
from ..store.rows import (
    BadRecordRow,
    PreselectDroppedRow,
    PreselectQueryRow,
    PreselectResponseRow,
    PreselectScoreRow,
    PreselectUnscoredRow,
)
from ..store.writer import WriterRow
from .queries import Query, read_queries
from .scoring import GroupScore, PairwiseScorer, ScorerSpec, usable
from .topk import LeastSimilar

__all__ = ["PreselectConfig", "PreselectOutcome", "preselect"]

_N_MODES = {"auto": "auto", "always": "on", "never": "off"}  # --use-n as a capability mode


@dataclass(frozen=True, kw_only=True)
class PreselectConfig:
    run: RunConfig  # endpoint, model, budget, limits, store, sampling, seed
    queries: tuple[str, ...]
    # the defaults are the settings' (options/preselection.py)
    query_format: str | None = default("query_format")
    query_field: str | None = default("query_field")
    input_field: str | None = default("input_field")
    id_field: str | None = default("id_field")
    responses: int = default("responses")
    keep: int = default("keep")
    scorer: ScorerSpec = ScorerSpec()
    use_n: str = default("use_n")  # auto | always | never
    score_batch: int = 128  # queries per BERTScore batch


@dataclass(frozen=True)
class PreselectOutcome:
    run_id: str
    status: str
    message: str
    exit_code: int
    scored: int
    kept: list[tuple[str, float]]
    notes: tuple[str, ...] = ()


def _identity(cfg: PreselectConfig, scorer_name: str) -> dict[str, object]:
    r = cfg.run
    return {
        "queries": list(cfg.queries),
        "format": cfg.query_format,
        "fields": [cfg.query_field, cfg.input_field, cfg.id_field],
        "responses": cfg.responses,
        "model": r.model,  # not the endpoint: a moved server or a fleet continues the run
        "sampling": [r.sampling.temperature, r.sampling.max_tokens],
        "seed": r.run_seed,
        "scorer": scorer_name,
    }


def _request(cfg: PreselectConfig, q: Query, *, n: int, index: int) -> ChatRequest:
    seed = int(fingerprint([cfg.run.run_seed, q.key, index], size=8), 16) & 0x7FFFFFFF
    return ChatRequest(
        model=cfg.run.model,
        messages=({"role": "user", "content": q.text},),
        temperature=cfg.run.sampling.temperature,
        max_tokens=cfg.run.sampling.max_tokens,
        n=n,
        seed=seed,
        index=index,
    )


@dataclass(frozen=True, slots=True)
class _Response:
    idx: int
    text: str
    finish_reason: str
    call_key: str

    @property
    def dropped(self) -> str:
        """Why the response is not scored ("" when it is)."""
        if self.finish_reason == "content_filter":
            return "content_filter"
        return "" if usable(self.text) else "empty"


async def _sample(
    cfg: PreselectConfig, session: CallSession, q: Query
) -> list[_Response] | CallFailure:
    """The query's responses, or the failure of a call it needed."""
    out: list[_Response] = []
    want = cfg.responses
    use_n = await session.capabilities.decide(N_CHOICES, want) if want > 1 else None
    if isinstance(use_n, CallFailure):
        return use_n  # the probe it waited for got no answer; a resume asks again
    if use_n is not None and use_n.supported:
        request = _request(cfg, q, n=want, index=0)
        result = await session.calls.call(request, stage="respond", task="general", seed_key=q.key)
        if isinstance(result, CallFailure) and refuses_field(result, "n"):
            # the server caps n below what is asked (llama.cpp: its slots): one call per
            # response, for this query and every later one
            session.capabilities.refused(N_CHOICES, want, result)
        elif isinstance(result, CallFailure):
            return result
        else:
            finishes = list(result.finish_reasons) + [""] * len(result.texts)
            for text, finish in zip(result.texts[:want], finishes, strict=False):
                out.append(_Response(len(out), text.strip(), finish, request.key))
    while len(out) < want:
        request = _request(cfg, q, n=1, index=len(out))
        result = await session.calls.call(request, stage="respond", task="general", seed_key=q.key)
        if isinstance(result, CallFailure):
            return result
        out.append(_Response(len(out), result.text.strip(), result.finish_reason, request.key))
    return out


async def _feed(
    cfg: PreselectConfig, session: CallSession, done: KeyIndex, send: ObjectSendStream[Query]
) -> None:
    st = session.stats
    total = 0
    async with send:
        for item in read_queries(
            list(cfg.queries),
            fmt=cfg.query_format,
            query_field=cfg.query_field,
            input_field=cfg.input_field,
            id_field=cfg.id_field,
        ):
            if isinstance(item, BadRecord):
                st.bump(st.bad_records, "general")
                session.writer.put(
                    [
                        BadRecordRow(
                            session.run_id,
                            "general",
                            item.source_file,
                            item.source_line,
                            item.reason,
                        )
                    ]
                )
                continue
            total += 1
            if cfg.run.limit is not None and total > cfg.run.limit:
                break
            if session.flags.stop_admitting:
                return
            if item.key in done:
                st.bump(st.already_done, "general")
                continue
            done.add(item.key)
            st.bump(st.admitted, "general")
            await send.send(item)
        st.seeds_total["general"] = min(total, cfg.run.limit or total)


async def _respond(
    cfg: PreselectConfig,
    session: CallSession,
    receive: ObjectReceiveStream[Query],
    send: ObjectSendStream[tuple[Query, list[str], int]],
) -> None:
    st = session.stats
    async with receive, send:
        async for q in receive:
            if session.flags.interrupted:
                continue
            try:
                responses = await _sample(cfg, session, q)
            except RunStopping as stop:  # budget used up or Ctrl-C: the query stays pending
                session.flags.stopped_by(stop)
                continue
            if isinstance(responses, CallFailure):
                # a call deferred to a batch (batch mode's planning pass) has not failed
                if responses.error_class != DEFERRED:
                    st.bump(st.failed, "general")
                continue
            kept = [r for r in responses if not r.dropped]
            rows: list[WriterRow] = [
                PreselectQueryRow(
                    session.run_id, q.key, q.query_id, q.text, q.source_file, q.source_line
                )
            ]
            rows += [
                PreselectResponseRow(session.run_id, q.key, r.idx, r.text, r.call_key) for r in kept
            ]
            rows += [
                PreselectDroppedRow(session.run_id, q.key, r.idx, r.dropped, r.text, r.call_key)
                for r in responses
                if r.dropped
            ]
            session.writer.put(rows)
            # only usable responses go on to the scorer; the count says how many were asked
            await send.send((q, [r.text for r in kept], len(responses)))


async def _score(
    cfg: PreselectConfig,
    session: CallSession,
    scorer: PairwiseScorer,
    receive: ObjectReceiveStream[tuple[Query, list[str], int]],
    unscored: dict[str, int],
) -> None:
    st = session.stats
    batch: list[tuple[Query, list[str], int]] = []

    async def flush() -> None:
        groups = [texts for _, texts, _ in batch]
        # BERTScore is CPU/GPU work: a thread keeps the event loop sampling meanwhile
        scores = await anyio.to_thread.run_sync(scorer.score_groups_detailed, groups)
        rows: list[WriterRow] = []
        for (q, _, asked), score in zip(batch, scores, strict=True):
            if not score.scored:
                rows.append(_unscored_row(session.run_id, q, asked, score, scorer.name))
                unscored[score.reason] = unscored.get(score.reason, 0) + 1
                st.bump(st.rejected, "general")
                continue
            rows.append(
                PreselectScoreRow(session.run_id, q.key, score.score, score.used, scorer.name)
            )
            st.bump(st.sampled, "general")
        session.writer.put(rows)
        batch.clear()

    async with receive:
        async for item in receive:
            batch.append(item)
            if len(batch) >= cfg.score_batch:
                await flush()
        if batch:
            await flush()


def _unscored_row(
    run_id: str, q: Query, asked: int, score: GroupScore, scorer: str
) -> PreselectUnscoredRow:
    reason = score.reason
    if score.cause == "responses" and score.used < asked:
        reason = f"{score.used} usable response(s) of {asked} (the others empty or filtered)"
    return PreselectUnscoredRow(run_id, q.key, score.used, score.cause, reason, scorer)


def _unscored_note(unscored: dict[str, int]) -> str:
    if not unscored:
        return ""
    total = sum(unscored.values())
    reason, n = max(unscored.items(), key=lambda kv: kv[1])
    more = "" if len(unscored) == 1 else f"; {len(unscored) - 1} other reason(s)"
    return (
        f"{total} quer{'y' if total == 1 else 'ies'} unscored (see the preselect_unscored "
        f"table): {n} × {reason}{more}"
    )


async def preselect(
    cfg: PreselectConfig,
    *,
    transport: Transport | None = None,
    console: Console | None = None,
    on_run: OnRun | None = None,
    scorer: PairwiseScorer | None = None,
) -> PreselectOutcome:
    """Pre-select ``cfg``'s queries: the calls sent now, or with ``--batch`` in batch mode's
    passes (batch/run.py), each a session of ``_preselect_session``."""
    if cfg.run.batch is None:
        return await _preselect_session(
            cfg, SendNow(), scorer, transport=transport, console=console, on_run=on_run
        )
    cfg, scorer = await _prepare(cfg, transport, scorer)  # checked, loaded, before any pass
    return await run_in_batches(
        partial(_batch_pass, cfg, scorer),
        cfg.run,
        resolve_price(cfg.run).price,
        transport=transport,
        console=console,
        on_run=on_run,
    )


async def _batch_pass(
    cfg: PreselectConfig,
    scorer: PairwiseScorer,
    run: RunConfig,
    calls: CallMode,
    *,
    transport: Transport,
    console: Console,
    on_run: OnRun | None,
) -> PreselectOutcome:
    """A planning pass of batch mode: a session with the pass's run settings."""
    return await _preselect_session(
        replace(cfg, run=run), calls, scorer, transport=transport, console=console, on_run=on_run
    )


async def _prepare(
    cfg: PreselectConfig, transport: Transport | None, scorer: PairwiseScorer | None
) -> tuple[PreselectConfig, PairwiseScorer]:
    """``cfg`` checked, with its model settled (before its identity is made), and its
    scorer, loaded once."""
    if cfg.responses < 2:
        raise UsageError("--responses must be at least 2 (similarity needs pairs)")
    if cfg.keep < 1:
        raise UsageError("--keep must be at least 1")
    if cfg.use_n not in ("auto", "always", "never"):
        raise UsageError(f"--use-n must be auto, always or never, not {cfg.use_n!r}")
    next(
        iter(
            read_queries(
                list(cfg.queries),
                fmt=cfg.query_format,
                query_field=cfg.query_field,
                input_field=cfg.input_field,
                id_field=cfg.id_field,
            )
        ),
        None,
    )  # fail fast on bad input
    scorer = scorer or PairwiseScorer(cfg.scorer)  # loaded once, before any money is spent
    cfg = replace(cfg, run=await resolve_model(cfg.run, transport))  # before its identity
    return cfg, scorer


async def _preselect_session(
    cfg: PreselectConfig,
    calls: CallMode,
    scorer: PairwiseScorer | None,
    *,
    transport: Transport | None,
    console: Console | None,
    on_run: OnRun | None,
) -> PreselectOutcome:
    """One session pre-selecting ``cfg``'s queries, its calls made as ``calls`` says."""
    cfg, scorer = await _prepare(cfg, transport, scorer)
    async with call_session(
        cfg.run,
        kind="preselect",
        identity=_identity(cfg, scorer.name),
        tasks="general",
        calls=calls,
        run_price=resolve_price(cfg.run),
        transport=transport,
        on_run=on_run,
        modes={N_CHOICES: _N_MODES[cfg.use_n]},
    ) as session:
        store = session.store
        # scored queries are done, and so are those without two usable responses (asking
        # again returns the same stored responses); a failed scoring is tried again
        rows = session_queries.finished_query_keys(store, session.run_id)
        done = KeyIndex(key_prefix(r[0]) for r in rows)
        session.stats.words.update(
            seeds="queries",
            sampled="scored",
            rejected="unscored",
            acceptance="scored",
            per="per query",
        )
        unscored: dict[str, int] = {}  # reason -> queries, this session

        async def pipeline() -> None:
            q_tx, q_rx = anyio.create_memory_object_stream[Query](16)
            r_tx, r_rx = anyio.create_memory_object_stream[tuple[Query, list[str], int]](
                cfg.score_batch
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(_feed, cfg, session, done, q_tx)
                tg.start_soon(_score, cfg, session, scorer, r_rx, unscored)
                async with q_rx, r_tx:  # workers as the endpoints take calls (halugen/crew.py)
                    await run_crew(
                        lambda: _respond(cfg, session, q_rx.clone(), r_tx.clone()),
                        lambda: crew_size(session.pool.wanted()),
                    )

        status, message = await drive(session, pipeline, progress=cfg.run.progress, console=console)
        store.writer.flush_blocking()
        session.notes.extend(session.capabilities.notes())
        if note := _unscored_note(unscored):
            session.notes.append(note)
        top = LeastSimilar(cfg.keep)
        scored = 0
        for key, score in session_queries.preselect_scores(store, session.run_id):
            top.offer(key, score)
            scored += 1
        kept = top.result()
        n_unscored = session_queries.unscored_query_count(store, session.run_id)
        unscored_text = f", {n_unscored} unscored" if n_unscored else ""
        spent = format_usd(store.spent(session.run_id))
        status, message = with_failed_work(
            status,
            message,
            failed=session.stats.failed.get("general", 0),
            what="quer(y/ies)",
            cause=session.stats.main_failure(),
        )
        message, exit_code = closing(
            status,
            what=f"pre-selection run {session.run_id}",
            summary=f"{scored} queries scored{unscored_text}, the {len(kept)} least similar "
            f"kept (see the preselect_ranked view); spent {spent}",
            detail=message,
            budget=format_usd(session.ledger.budget),
        )
        store.update_run(session.run_id, status=status, status_detail=message[:1000])
        return PreselectOutcome(
            session.run_id, status, message, exit_code, scored, kept, tuple(session.notes)
        )
