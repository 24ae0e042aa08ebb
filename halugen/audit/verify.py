"""``audit --verify --data FILE``: the verify stage's two questions over an existing file.

A HaluEval-layout file (HaluEval's own releases included: qa, dialogue and summarization;
read by ``audit.items.items_from_file``) gets the questions a run's samples get with ``run
--verify`` (stages/verify.py): is the hallucinated text supported by the knowledge, is the
right text. Its calls go through a run of their own (kind ``verify``) in the store, so they
are budgeted, cached and resumed like every run's: the same command again pays only for what
is left. The figures are the flagged share per task, with its Wilson 95% interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console

from ..batch.modes import SendNow
from ..config import RunConfig
from ..cost.run_price import check_judge_price, resolve_price
from ..errors import UsageError
from ..label_noise import SEPARATION_NOTE, flagged_share, judge_answers, judge_separates
from ..llm.capabilities import JSON_SCHEMA
from ..llm.transport import Transport
from ..records import fingerprint
from ..seeds.stamps import stamp_files
from ..session import call_session, drive, resolve_model
from ..stages.verify import (
    REASONS,
    Verifier,
    VerifyItem,
    check_items,
    verify_templates,
)
from ..store.label_checks import latest_checks
from ..store.rows import LabelCheckRow
from ..tables import TableData
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog
from .items import Item

__all__ = ["FileCheck", "check_table", "verify_items"]


@dataclass(frozen=True)
class FileCheck:
    """What ``audit --verify`` found in one task of the files."""

    run_id: str
    task: str
    items: int
    checked: int
    flagged: int
    reasons: dict[str, int]
    status: str
    message: str
    # how often the judge called each text supported, over the checked items
    right_supported: int = 0
    hallucination_supported: int = 0

    def caution(self) -> str | None:
        """One line when the judge did not tell the two texts apart (``judge_separates``)."""
        if not self.checked or judge_separates(
            self.right_supported, self.hallucination_supported, self.checked
        ):
            return None
        right = 100 * self.right_supported / self.checked
        hallucinated = 100 * self.hallucination_supported / self.checked
        return (
            f"audit --verify: {self.task}: the judge called {right:.1f}% of the right texts "
            f"and {hallucinated:.1f}% of the hallucinated ones supported ({self.checked:,} "
            "items): it does not tell them apart, so the flagged share measures the judge, "
            "not the labels; use a stronger --verify-model"
        )


def _verify_item(item: Item, spec: TaskSpec) -> VerifyItem:
    fields = {
        spec.right_field: item.right,
        spec.hallucinated_field: item.hallucinated or "",
    }
    if spec.question_field:
        fields[spec.question_field] = item.question
    if spec.knowledge_field:
        fields[spec.knowledge_field] = item.knowledge
    key = fingerprint({"task": item.task, "fields": fields})
    return VerifyItem(item.task, key, item.pattern, fields)


async def verify_items(
    cfg: RunConfig,
    paths: Sequence[str],
    items: Sequence[Item],
    *,
    transport: Transport | None = None,
    console: Console | None = None,
    tasks: TaskCatalog | None = None,
) -> list[FileCheck]:
    """Ask the verify questions about ``items`` (read from ``paths``) with ``cfg``'s endpoint
    and judge model (``--verify-model``, else ``-m``); ``tasks`` declares the items' tasks
    (default: the built-in ones)."""
    pairs = [i for i in items if i.hallucinated is not None]
    if not pairs:
        raise UsageError(
            "audit --verify checks pairs of a right and a hallucinated text: the files hold "
            "none (the general track's items have one response each)"
        )
    cfg = await resolve_model(cfg, transport)
    catalog = TaskCatalog() if tasks is None else tasks
    specs = {t: catalog[t] for t in sorted({i.task for i in pairs})}
    templates, notes = verify_templates(specs.values(), cfg.prompts_dir)
    if not templates:
        raise UsageError("; ".join(notes))
    run_price = resolve_price(cfg)
    check_judge_price(cfg, run_price.price)
    judge = cfg.judge_model
    identity = {
        "verify_data": [[s.path, s.sha256] for s in stamp_files(list(paths))],
        "model": judge,
        "judge": [cfg.judge.temperature, cfg.judge.max_tokens, cfg.judge.top_p],
        "templates": {t: template.hash for t, template in sorted(templates.items())},
    }
    wanted = [_verify_item(i, specs[i.task]) for i in pairs if i.task in templates]
    async with call_session(
        cfg,
        kind="verify",
        identity=identity,
        tasks=",".join(templates),
        calls=SendNow(),
        run_price=run_price,
        transport=transport,
        modes={JSON_SCHEMA: cfg.structured},
    ) as session:
        done = {c.key for c in latest_checks(session.store, session.run_id)}
        verifier = Verifier(
            run_id=session.run_id,
            model=judge,
            calls=session.calls,
            capabilities=session.capabilities,
            judge=cfg.judge,
            specs=specs,
            templates=templates,
            stats=session.stats,
        )
        todo = [i for i in dict((i.key, i) for i in wanted).values() if i.key not in done]
        stats = session.stats
        # the live line counts items: passed, flagged (a judge's reading), failed calls
        stats.words.update(
            seeds="items", sampled="passed", rejected="flagged", acceptance="passed", per="per item"
        )
        for task in templates:
            stats.seeds_total[task] = sum(1 for i in todo if i.task == task)

        def write(row: LabelCheckRow) -> None:
            session.writer.put([row])
            counter = {"passed": stats.sampled, "flagged": stats.rejected}.get(row.outcome)
            stats.bump(stats.failed if counter is None else counter, row.task)

        status, message = await drive(
            session,
            lambda: check_items(
                verifier,
                todo,
                write=write,
                flags=session.flags,
                wanted=session.pool.wanted,
            ),
            progress=cfg.progress,
            console=console,
        )
        await session.store.writer.flush()
        found = latest_checks(session.store, session.run_id)
        run_id = session.run_id
    out = []
    for task in templates:
        keys = {i.key for i in wanted if i.task == task}
        checked = [c for c in found if c.key in keys and c.outcome in ("passed", "flagged")]
        flagged = [c.reason for c in checked if c.outcome == "flagged"]
        reasons = {name: flagged.count(name) for name in REASONS}
        out.append(
            FileCheck(
                run_id,
                task,
                len(keys),
                len(checked),
                len(flagged),
                reasons,
                status,
                message,
                right_supported=sum(c.right_verdict == "supported" for c in checked),
                hallucination_supported=sum(
                    c.hallucination_verdict == "supported" for c in checked
                ),
            )
        )
    return out


def check_table(checks: Sequence[FileCheck], source: str) -> TableData:
    """The figures of ``audit --verify``: the flagged share per task with its interval."""
    rows = [
        [
            source,
            c.task,
            f"{c.items:,}",
            f"{c.checked:,}",
            f"{c.flagged:,}",
            flagged_share(c.flagged, c.checked),
            *(f"{c.reasons[r]:,}" for r in REASONS),
            judge_answers(c.right_supported, c.hallucination_supported, c.checked),
        ]
        for c in checks
    ]
    return TableData(
        "Label check (audit --verify)",
        [
            "source",
            "task",
            "items",
            "checked",
            "flagged",
            "flagged share (95% CI)",
            "hallucination supported",
            "right unsupported",
            "unsure",
            "judge said supported: right / hallucinated",
        ],
        rows,
        name="label_check",
        caption="flagged: the hallucinated text judged supported by its knowledge, the right "
        "text judged unsupported, or the judge unsure after one re-ask; a judge's reading, "
        "not ground truth. Against the simulator these figures check the mechanics only. "
        f"{SEPARATION_NOTE}",
    )
