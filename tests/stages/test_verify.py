"""The verify stage's questions: the strict reader, the one re-ask, unsure as its own
outcome, the reasons a sample is flagged; and the simulator's verify judge."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from halugen.config import Sampling
from halugen.llm.calls import CallFailure
from halugen.records import ChatRequest, ChatResult
from halugen.reply_contract import VERDICT
from halugen.simulate.verify import STATEMENT, supported, verify_prompt, verify_reply
from halugen.stages.verify import Answer, Verifier, VerifyItem, outcome_of, verify_templates
from halugen.stats import RunStats
from halugen.tasks.templates import task_template
from halugen.tokens import get_counter
from tests.task_specs import task_spec

RIGHT, HALLUCINATED = "Serin7", "the Baltic Sea"


class Scripted:
    """A call strategy that answers by the statement asked about: a list of replies each."""

    def __init__(self, replies: dict[str, list[str]]) -> None:
        self.replies = replies
        self.requests: list[ChatRequest] = []
        self.counter = get_counter("cl100k_base")

    async def call(self, request: ChatRequest, **where: Any) -> ChatResult | CallFailure:
        self.requests.append(request)
        first = next(m["content"] for m in request.messages if "Statement:" in m["content"])
        statement = first.rsplit("Statement: ", 1)[1].strip()
        asked = sum(1 for m in request.messages if m["role"] == "assistant") - _demos(request)
        text = self.replies[statement][asked]
        if text == "FAIL":
            return CallFailure(request.key, "ServerError", "500 after retries", 500)
        return ChatResult((text,), ("stop",), prompt_tokens=10, completion_tokens=3)

    def seed_rows(self, rows: Sequence[Any]) -> Sequence[Any]:
        return rows


def _demos(request: ChatRequest) -> int:
    return 0  # the verify templates have no demonstration turns


def _check(replies: dict[str, list[str]]) -> tuple[Any, Scripted]:
    spec = task_spec("qa")
    templates, notes = verify_templates([spec])
    assert not notes
    calls = Scripted(replies)
    verifier = Verifier(
        run_id="r",
        model="judge",
        calls=calls,  # type: ignore[arg-type]
        capabilities=None,
        judge=Sampling(temperature=0.0, max_tokens=16),
        specs={"qa": spec},
        templates=templates,
        stats=RunStats(),
    )
    fields = {
        "knowledge": "The Serin7 flows through Vallona7.",
        "question": "Which river flows through Vallona7?",
        "right_answer": RIGHT,
        "hallucinated_answer": HALLUCINATED,
    }
    row = anyio.run(verifier.check, VerifyItem("qa", "k1", "factualness", fields))
    return row, calls


def test_a_hallucination_judged_unsupported_and_a_right_text_supported_pass():
    row, calls = _check({HALLUCINATED: ["Verdict: No"], RIGHT: ["Verdict: Yes"]})
    assert (row.outcome, row.reason) == ("passed", None)
    assert (row.hallucination_verdict, row.right_verdict, row.asked) == (
        "unsupported",
        "supported",
        2,
    )
    # the record comes last: every request of the template opens with the same text
    assert all(r.messages[0] == calls.requests[0].messages[0] for r in calls.requests)
    assert all(r.temperature == 0 and r.max_tokens >= 32 for r in calls.requests)


@pytest.mark.parametrize(
    ("replies", "reason"),
    [
        ({HALLUCINATED: ["Verdict: Yes"], RIGHT: ["Verdict: Yes"]}, "hallucination_supported"),
        ({HALLUCINATED: ["Verdict: No"], RIGHT: ["Verdict: No"]}, "right_unsupported"),
        ({HALLUCINATED: ["Verdict: Yes"], RIGHT: ["Verdict: No"]}, "hallucination_supported"),
    ],
)
def test_a_sample_is_flagged_with_its_reason(replies, reason):
    row, _ = _check(replies)
    assert (row.outcome, row.reason) == ("flagged", reason)


def test_an_unreadable_reply_is_asked_again_once_with_the_contracts_follow_up():
    row, calls = _check(
        {HALLUCINATED: ["It is probably not supported.", "Verdict: No"], RIGHT: ["Yes"]}
    )
    assert (row.outcome, row.hallucination_verdict, row.asked) == ("passed", "unsupported", 3)
    again = [r for r in calls.requests if len(r.messages) > 2]
    assert len(again) == 1
    assert again[0].messages[-1] == {"role": "user", "content": VERDICT.reask()}
    assert again[0].messages[-2]["content"] == "It is probably not supported."


def test_still_unsure_after_the_re_ask_is_its_own_outcome_never_a_guess():
    # prose that reads as a "No" to a lenient reader is unsure to the contract's
    row, _ = _check(
        {
            HALLUCINATED: ["No, it is not supported.", "I would say it is not supported."],
            RIGHT: ["Verdict: Yes"],
        }
    )
    assert (row.outcome, row.reason, row.hallucination_verdict) == ("flagged", "unsure", "unsure")
    assert row.asked == 3


def test_a_failed_call_is_no_verdict_and_is_tried_again_later():
    row, _ = _check({HALLUCINATED: ["FAIL"], RIGHT: ["Verdict: Yes"]})
    assert (row.outcome, row.reason, row.hallucination_verdict) == ("call_failed", None, "failed")


def test_outcome_priority():
    yes, no, unsure = Answer("supported"), Answer("unsupported"), Answer("unsure")
    assert outcome_of(no, yes) == ("passed", None)
    assert outcome_of(unsure, no) == ("flagged", "right_unsupported")
    assert outcome_of(no, unsure) == ("flagged", "unsure")
    assert outcome_of(yes, unsure) == ("flagged", "hallucination_supported")


def test_every_builtin_task_with_knowledge_has_a_verify_template_ending_with_the_record():
    specs = [task_spec(t) for t in ("qa", "dialogue", "summarization")]
    templates, notes = verify_templates(specs)
    assert not notes and set(templates) == {"qa", "dialogue", "summarization"}
    for spec in specs:
        template = templates[spec.name]
        assert "text" in template.fields and spec.knowledge_field in template.fields
        role, segments = template.parts[-1]
        assert role == "user" and segments[-1] == ("text",)  # the record last
        system = "".join(s for s in template.parts[0][1] if isinstance(s, str))
        assert '"Verdict: Yes"' in system and '"Verdict: No"' in system
    _, missing = verify_templates([task_spec("general")])
    assert missing and "not verified" in missing[0]


# -- the simulator's verify judge ---------------------------------------------------------


def _prompt(statement: str) -> str:
    spec = task_spec("qa")
    template = task_template(spec, "verify")
    values = {
        "knowledge": "The Serin7 flows through Vallona7, a town in the hills.",
        "question": "Which river flows through Vallona7?",
        "text": statement,
    }
    return template.render(values)[-1]["content"]


def test_the_simulator_reads_a_verify_prompt_and_answers_in_the_contract():
    info = verify_prompt(_prompt("Serin7"), [])
    assert info is not None and info.fields[STATEMENT] == "Serin7"
    assert verify_prompt("Hello there", []) is None
    replies = [verify_reply(verify_prompt(_prompt(f"Serin{i}"), []), i) for i in range(400)]
    read = [VERDICT.read(r.text) for r in replies]
    # a share of first replies hedge (the re-ask's path); the rest hold the contract line
    hedges = read.count(None)
    assert 0 < hedges < 80
    # the re-ask, which carries no record, is answered about the earlier statement
    again = verify_prompt(VERDICT.reask(), [_prompt("Serin7")])
    assert again is not None and again.follow_up and again.fields[STATEMENT] == "Serin7"
    assert VERDICT.read(verify_reply(again, 5).text) in ("Yes", "No")


def test_the_simulators_judge_is_deterministic_with_a_minority_of_flipped_verdicts():
    statements = [f"Serin{i}" if i % 2 else f"Mount Orvel{i}" for i in range(600)]
    flipped = 0
    for i, statement in enumerate(statements):
        info = verify_prompt(_prompt(statement), [])
        assert info is not None
        first = verify_reply(info, i, structured=True)
        assert first == verify_reply(info, i, structured=True)  # deterministic
        careful = supported(
            statement, "\n".join(v for k, v in info.fields.items() if k != STATEMENT)
        )
        flipped += (first.verdict == "Yes") != careful
    assert 0 < flipped < len(statements) * 0.25
    assert supported("Serin7", "The Serin7 flows through Vallona7")
    assert not supported("the Baltic Sea", "The Serin7 flows through Vallona7")


def test_a_judge_model_the_runs_price_would_count_wrong_is_refused():
    from halugen.config import RunConfig
    from halugen.cost.prices import find_price
    from halugen.cost.run_price import check_judge_price
    from halugen.errors import UsageError

    price = find_price("gpt-4o-mini")
    assert price is not None
    cfg = RunConfig(model="gpt-4o-mini", verify=True, verify_model="gpt-4o")
    with pytest.raises(UsageError, match="priced differently"):
        check_judge_price(cfg, price)
    check_judge_price(RunConfig(model="gpt-4o-mini", verify=True), price)  # the run's model
    given = RunConfig(
        model="gpt-4o-mini", verify=True, verify_model="judge", price_in=1.0, price_out=2.0
    )
    own = find_price("gpt-4o-mini", price_in=1.0, price_out=2.0)
    assert own is not None
    check_judge_price(given, own)  # prices on the command line apply to both


def test_a_task_folders_verify_template_is_optional_and_never_shows_the_right_text(tmp_path):
    import shutil

    from halugen.tasks.folder import check_folder

    source = Path(task_spec("qa").folder)
    folder = tmp_path / "qa_copy"
    shutil.copytree(source, folder)
    (folder / "prompts" / "verify.txt").unlink()
    spec, problems = check_folder(folder, builtin=True)
    assert problems == [] and spec is not None  # no verify.txt: labels not verified
    text = (source / "prompts" / "verify.txt").read_text(encoding="utf-8")
    (folder / "prompts" / "verify.txt").write_text(
        text + "\nRight answer: {{right_answer}}\n", encoding="utf-8"
    )
    _, problems = check_folder(folder, builtin=True)
    assert any("right_answer" in str(p) and "verify" in str(p) for p in problems), problems
