"""Documents and failure flags out of the store; topic rows back into it."""

from __future__ import annotations

from datetime import datetime

import orjson
import pytest

from halugen.analysis import Topic, TopicReport, documents_for, latest_eval_run, save_reports
from halugen.errors import UsageError
from halugen.records import fingerprint
from halugen.store.db import open_store
from halugen.store.rows import TABLE_COLUMNS, AnnotationItemRow, JudgementRow, SampleRow
from tests.task_specs import task_spec

QA_FIELDS = ("knowledge", "question", "right_answer", "hallucinated_answer")


def sample_row(run_id: str, task: str, i: int, **fields: str | None) -> SampleRow:
    values = dict.fromkeys(TABLE_COLUMNS["sample_rows"][:-1])
    values.update(
        run_id=run_id,
        task=task,
        seed_key=f"k{task}{i}",
        seed_id=f"s{i}",
        source_file="seeds.json",
        source_line=i,
        pattern="factualness",
    )
    values.update(fields)
    return SampleRow(**values)


def qa_fields(i: int) -> dict[str, str]:
    return {
        "knowledge": f"The comet Vela{i} orbits the sun every {i} years.",
        "question": f"How often does Vela{i} pass?",
        "right_answer": f"{i} years",
        "hallucinated_answer": f"Every {i + 1} months, like most comets.",
    }


def qa_key(fields: dict[str, str]) -> str:
    return fingerprint({"task": "qa", "fields": {n: fields[n] for n in QA_FIELDS}})


def judgement(
    run_id: str,
    task: str,
    key: str,
    item_id: str,
    shown: str,
    verdict: str,
    truth: bool | None = None,
) -> JudgementRow:
    if truth is None:  # samples: the truth is which answer was shown
        truth = shown in ("hallucinated", "both")
    return JudgementRow(
        run_id, task, key, item_id, "plain", "m", shown, truth, verdict, None, 10, verdict,
        "ck", "th", 1, verdict, None,
    )  # fmt: skip


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "s.duckdb") as s:
        rows = [sample_row("gen1", "qa", i, **qa_fields(i)) for i in range(4)]
        rows.append(sample_row("gen2", "qa", 9, **qa_fields(9)))
        rows.append(sample_row("gen2", "qa", 0, **qa_fields(0)))  # same sample, second run
        rows.append(
            sample_row(
                "gen1",
                "summarization",
                1,
                document="A long article.",
                right_summary="Rain fell on the harbour town.",
                hallucinated_summary="Snow fell.",
            )
        )
        rows.append(
            sample_row(
                "gen1",
                "summarization",
                2,
                document="Another article.",
                right_summary=None,
                hallucinated_summary="Only this one.",
            )
        )
        rows.append(
            sample_row(
                "gen1",
                "dialogue",
                1,
                knowledge="Inception is by Nolan",
                dialogue_history="[Human]: Who made Inception?",
                right_response="Nolan.",
                hallucinated_response="Spielberg.",
            )
        )
        keys = [qa_key(qa_fields(i)) for i in (0, 1, 2, 3, 9)]
        rows += [
            judgement("ev1", "qa", keys[0], "s0", "hallucinated", "no"),  # missed: failure
            judgement("ev1", "qa", keys[1], "s1", "hallucinated", "yes"),  # caught
            judgement("ev1", "qa", keys[2], "s2", "right", "no"),  # right, said no
            judgement("ev1", "qa", keys[3], "s3", "both", "no"),  # contrast, wrong
            judgement("ev1", "qa", keys[4], "s9", "hallucinated", "invalid"),
        ]
        s.writer.put(rows)
        s.writer.flush_blocking()
        yield s


def test_qa_documents_and_failures(store):
    documents, failed = documents_for(store.conn, task_spec("qa"), eval_run="ev1")
    assert documents == [
        "The comet Vela0 orbits the sun every 0 years.\nHow often does Vela0 pass?",
        *(
            f"The comet Vela{i} orbits the sun every {i} years.\nHow often does Vela{i} pass?"
            for i in (1, 2, 3, 9)
        ),
    ]  # the sample kept by two runs is one document
    assert failed == [True, False, False, True, False]


def test_generation_run_filter_and_store_object(store):
    documents, failed = documents_for(store, task_spec("qa"), eval_run="ev1", gen_run="gen2")
    assert len(documents) == 2 and "Vela0" in documents[0] and "Vela9" in documents[1]
    assert failed == [True, False]


def test_latest_eval_run_is_the_default(store):
    assert latest_eval_run(store.conn, "qa") == "ev1"
    assert latest_eval_run(store.conn, "dialogue") is None
    key = qa_key(qa_fields(1))
    store.conn.execute(
        "INSERT INTO judgements VALUES ('ev2', 'qa', ?, 's1', 'plain', 'm', 'hallucinated', "
        "true, 'no', NULL, 5, 'no', 'ck', 'th', ?, 1, 'no', NULL, 'strict')",
        [key, datetime(2999, 1, 1)],
    )
    assert latest_eval_run(store.conn, "qa") == "ev2"
    _, failed = documents_for(store.conn, task_spec("qa"))
    assert failed == [False, True, False, False, False]
    _, failed = documents_for(store.conn, task_spec("qa"), eval_run="ev1")
    assert failed[0] is True


def test_no_eval_run_means_no_flags(store):
    documents, failed = documents_for(store.conn, task_spec("dialogue"))
    assert documents == ["Inception is by Nolan\n[Human]: Who made Inception?"]
    assert failed is None


def test_summaries_are_the_documents(store):
    documents, failed = documents_for(store.conn, task_spec("summarization"))
    assert documents == ["Rain fell on the harbour town.", "Only this one."]
    assert failed is None


def test_eval_run_errors(store):
    with pytest.raises(UsageError, match="no qa judgements"):
        documents_for(store.conn, task_spec("qa"), eval_run="nope")
    with pytest.raises(UsageError, match="unknown task"):
        documents_for(store.conn, task_spec("poetry"))
    # an eval run of HaluEval files judged items that are not samples in this store
    store.conn.execute(
        "INSERT INTO judgements VALUES ('files', 'dialogue', 'zz', 'f.json:1', 'plain', 'm', "
        "'hallucinated', true, 'no', NULL, 5, 'no', 'ck', 'th', ?, 1, 'no', NULL, 'strict')",
        [datetime(2000, 1, 1)],
    )
    with pytest.raises(UsageError, match="judged none"):
        documents_for(store.conn, task_spec("dialogue"), eval_run="files")
    documents, failed = documents_for(
        store.conn, task_spec("dialogue")
    )  # chosen, not named: no flags
    assert len(documents) == 1 and failed is None


def test_general_items_and_failures(store):
    rows = [
        AnnotationItemRow(
            "pre1:a:0",
            "preselect",
            "pre1",
            "What is a quasar?",
            "A quasar is a kind of fish.",
            None,
        ),
        AnnotationItemRow("pre1:b:0", "preselect", "pre1", "Name a moon of Mars.", "Phobos.", None),
        AnnotationItemRow("halueval:7", "halueval", None, "Who wrote Emma?", "Jane Austen.", None),
        # general truth is the human label: a "no" on a right response is no failure
        judgement("ev3", "general", "x1", "pre1:a:0", "response", "no", truth=True),
        judgement("ev3", "general", "x2", "pre1:b:0", "response", "no", truth=False),
        judgement("ev3", "general", "x3", "halueval:7", "response", "yes", truth=True),
    ]
    store.writer.put(rows)
    store.writer.flush_blocking()
    documents, failed = documents_for(store.conn, task_spec("general"), eval_run="ev3")
    assert documents == [
        "Who wrote Emma?\nJane Austen.",
        "What is a quasar?\nA quasar is a kind of fish.",
        "Name a moon of Mars.\nPhobos.",
    ]
    assert failed == [False, True, False]
    documents, _ = documents_for(store.conn, task_spec("general"), gen_run="pre1")
    assert len(documents) == 2


def test_item_keys_match_the_eval_run(store):
    items = pytest.importorskip("halugen.evaluate.items")
    expected = {item.key for item in items.items_from_store(store, task_spec("qa"))}
    assert expected == {qa_key(qa_fields(i)) for i in (0, 1, 2, 3, 9)}


def _reports() -> list[TopicReport]:
    every = TopicReport(
        "qa",
        "all",
        (
            Topic(0, ("comet", "orbit"), 0.75, 0.5, -0.25),
            Topic(1, ("oven", "bread"), 0.25, 0.5, -0.5),
        ),
        n_documents=8,
        n_failures=2,
    )
    plain = TopicReport(
        "dialogue", "all", (Topic(0, ("film",), 1.0, None, 0.0),), n_documents=3, n_failures=0
    )
    return [every, plain]


@pytest.mark.parametrize("via", ["writer", "conn", "store"])
def test_save_reports(store, via):
    target = {"writer": store.writer, "conn": store.conn, "store": store}[via]
    save_reports(target, "an1", _reports())
    if via == "writer":
        store.writer.flush_blocking()
    rows = store.query(
        "SELECT analysis_id, task, topic_set, topic, top_words, share_samples, share_failures, "
        "coherence, created_at IS NOT NULL FROM topic_results ORDER BY task, topic"
    )
    assert rows == [
        ("an1", "dialogue", "all", 0, '["film"]', 1.0, None, 0.0, True),
        ("an1", "qa", "all", 0, '["comet","orbit"]', 0.75, 0.5, -0.25, True),
        ("an1", "qa", "all", 1, '["oven","bread"]', 0.25, 0.5, -0.5, True),
    ]
    assert orjson.loads(rows[1][4]) == ["comet", "orbit"]
    save_reports(store.conn, "an2", [])  # nothing to save is fine
    assert store.query("SELECT count(*) FROM topic_results")[0][0] == 3
