"""Seed stage: pending seeds of an earlier session first, then new ones read lazily.

A seed is admitted (written to ``seeds``) before any call is made for it, so after a crash
the run knows which seeds were in progress and finishes them before reading on.

Before the first seed goes out, each task's seeds are counted in the reader's thread (the
same reader, as ``estimate`` counts them; a 165-record HotpotQA file takes milliseconds), so
the live view knows the total and the ETA from its first refresh instead of when the reader
reaches the end.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cache

import anyio
import orjson
from anyio.abc import ObjectSendStream

from ..errors import InputError
from ..records import BadRecord, Seed
from ..store.key_index import KeyIndex
from ..store.rows import BadRecordRow, SeedOutcomeRow, SeedRow
from .context import GenContext
from .fit import FitResult, fit_to_context

__all__ = ["SeedSource", "count_seeds", "run_seed_stage"]


@dataclass
class SeedSource:
    """The seeds of one task: what a resume left pending, then the reader's records."""

    task: str
    read: Callable[[], Iterator[Seed | BadRecord]]
    pending: list[Seed]
    admitted: KeyIndex  # seeds of this run admitted in earlier sessions (any outcome)
    bad_seen: set[tuple[str, int]]  # bad records already recorded by earlier sessions
    limit: int | None = None


async def run_seed_stage(
    ctx: GenContext, sources: list[SeedSource], send: ObjectSendStream[Seed]
) -> None:
    async with send:
        try:
            await _admit(ctx, sources, send)
        except InputError as exc:
            # e.g. a truncated file: what parsed is admitted and finishes; the run then
            # reports the error
            ctx.flags.input_error = exc


# Seeds are read, fitted and counted in a worker thread, a batch at a time: parsing and
# tokenising (tiktoken releases the GIL) then overlap with the event loop's calls instead of
# taking its time. A batch is small, so memory stays flat and stopping is prompt.
_BATCH = 32


async def _admit(ctx: GenContext, sources: list[SeedSource], send: ObjectSendStream[Seed]) -> None:
    def stop() -> bool:
        return ctx.flags.stop_admitting

    for source in sources:  # the totals first: the view's ETA needs them
        total = await anyio.to_thread.run_sync(count_seeds, source, stop, abandon_on_cancel=True)
        if total is not None:
            ctx.stats.seeds_total[source.task] = total
    for source in sources:  # resume finishes pending work first
        for seed in source.pending:
            if ctx.flags.stop_admitting:
                return
            refitted = _refit(ctx, source.task, seed)
            if refitted is None:
                continue
            ctx.stats.bump(ctx.stats.admitted, source.task)
            await send.send(refitted)
    # then new seeds, one task after the other in turn, so that several tasks in one run
    # progress together and share the budget
    streams = [(_Batches(_new_seeds(ctx, source)), deque[tuple[Seed | None, int]]())
               for source in sources]  # fmt: skip
    while streams:
        for entry in list(streams):
            batches, ready = entry
            if not ready:
                window = ctx.context_window
                ready.extend(
                    (item, window) for item in await anyio.to_thread.run_sync(batches.take)
                )
                if not ready:
                    streams.remove(entry)
                    continue
            item, fitted_to = ready.popleft()  # one seed per task in turn
            if item is None:
                await anyio.sleep(0)  # a long stretch of skipped records: stay responsive
            elif ctx.flags.stop_admitting:
                return
            else:
                if fitted_to != ctx.context_window:  # a server's reply taught another window
                    item = _refit(ctx, item.task, item)
                    if item is None:
                        continue
                await send.send(item)


_STOP_EVERY = 1024  # records between looks at the stop flag while counting


def count_seeds(source: SeedSource, stop: Callable[[], bool] = lambda: False) -> int | None:
    """How many seeds the source's reader gives (records that are not bad), at most its
    limit: the total the run works through. None when ``stop()`` turns true meanwhile.

    A file that breaks off counts the records before the break, as many as the reader will
    give before it reports the damage.
    """
    n = 0
    try:
        for i, item in enumerate(source.read()):
            if isinstance(item, Seed):
                n += 1
                if source.limit is not None and n >= source.limit:
                    break
            if i % _STOP_EVERY == 0 and stop():
                return None
    except InputError:
        pass
    return n


class _Batches:
    """A stream of seeds taken a batch at a time. When the input breaks off (``InputError``)
    the seeds read before the break are handed out first and the error comes with the next
    batch: a batch is never lost with the error that ends it."""

    def __init__(self, stream: Iterator[Seed | None]) -> None:
        self._stream = stream
        self._error: InputError | None = None

    def take(self) -> list[Seed | None]:
        """Up to a batch of the stream's items; empty when it has ended."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        out: list[Seed | None] = []
        try:
            for item in self._stream:
                out.append(item)
                if item is None or len(out) >= _BATCH:
                    break
        except InputError as error:
            if not out:
                raise
            self._error = error
        return out


def fit_seed(ctx: GenContext, task: str, seed: Seed) -> FitResult:
    """``seed`` fitted to the run's context window as it is now."""
    return fit_to_context(
        seed,
        ctx.tasks[task],
        ctx.runner.counter,
        context_window=ctx.context_window,
        max_tokens=max(ctx.sampling.max_tokens, ctx.judge.max_tokens),
        policy=ctx.long_documents,
        safety=ctx.fit_safety,
    )


def _refit(ctx: GenContext, task: str, seed: Seed) -> Seed | None:
    """A pending seed fitted again: the context window may have changed since it was read."""
    fit = fit_seed(ctx, task, seed)
    if fit.seed is not None:
        return fit.seed
    reason = fit.bad.reason if fit.bad is not None else "does not fit the context window"
    ctx.writer.put(
        [
            SeedOutcomeRow(
                ctx.run_id, task, seed.key, "rejected", "fit", "context_length", reason[:500]
            )
        ]
    )
    ctx.stats.bump(ctx.stats.rejected, task)
    return None


def _new_seeds(ctx: GenContext, source: SeedSource) -> Iterator[Seed | None]:
    """The source's seeds not seen before, admitted; None now and then while skipping."""
    task = source.task
    pending_keys = {seed.key for seed in source.pending}
    valid = 0
    skipped = 0
    for item in source.read():
        if isinstance(item, BadRecord):
            _record_bad(ctx, task, item, source.bad_seen)
            continue
        valid += 1
        if source.limit is not None and valid > source.limit:
            return
        if item.key in pending_keys:
            continue  # already sent
        if item.key in source.admitted:
            ctx.stats.bump(ctx.stats.already_done, task)
            skipped += 1
            if skipped % 1000 == 0:
                yield None
            continue
        source.admitted.add(item.key)  # a duplicate record later in the file is skipped
        fit = fit_seed(ctx, task, item)
        if fit.seed is None:
            assert fit.bad is not None
            _record_bad(ctx, task, fit.bad, source.bad_seen)
            continue
        item = replace(fit.seed, source_file=_relative(fit.seed.source_file))
        if item.truncated_tokens:
            ctx.stats.bump(ctx.stats.truncated, task)
        ctx.writer.put(
            [
                SeedRow(
                    run_id=ctx.run_id,
                    task=task,
                    seed_key=item.key,
                    seed_id=item.seed_id,
                    dataset=item.dataset,
                    source_file=item.source_file,
                    source_line=item.source_line,
                    fields_json=orjson.dumps(dict(item.fields)).decode(),
                    truncated_tokens=item.truncated_tokens or None,
                )
            ]
        )
        ctx.stats.bump(ctx.stats.admitted, task)
        yield item
    ctx.stats.seeds_total[task] = valid  # the whole input is known now


def _relative(path: str) -> str:
    """A seed file as stored: relative to where the run was started, never an absolute path
    of the user's machine (exports and dataset cards carry it)."""
    return path if not os.path.isabs(path) else _relative_to(path, os.getcwd())


@cache
def _relative_to(path: str, start: str) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:  # another drive (Windows): no relative path exists
        return path


def _record_bad(ctx: GenContext, task: str, bad: BadRecord, seen: set[tuple[str, int]]) -> None:
    ctx.stats.bump(ctx.stats.bad_records, task)
    if (bad.source_file, bad.source_line) in seen:
        return
    seen.add((bad.source_file, bad.source_line))
    ctx.writer.put([BadRecordRow(ctx.run_id, task, bad.source_file, bad.source_line, bad.reason)])
