"""The audit: classifiers that never see the knowledge, on planted artifacts and clean data;
the file reader's errors; intervals that count pairs (and dialogues) as clusters."""

from __future__ import annotations

import json

import pytest

from halugen.audit import audit_items, examples_of, items_from_file, length_only, overlap
from halugen.audit.classifiers import answer_only, folds_of, ratio_interval, score
from halugen.audit.items import Item
from halugen.errors import InputError, UsageError
from tests.task_specs import task_spec

from . import fixtures

pytest.importorskip("sklearn", reason="the answer-only audit needs the topics extra")


def _items(tmp_path, records, name="qa.json"):  # type: ignore[no-untyped-def]
    return list(items_from_file(str(fixtures.write(tmp_path / name, records))))


def _measure(rows, measure):  # type: ignore[no-untyped-def]
    (row,) = [r for r in rows if r.measure == measure and r.pattern == "all"]
    return row


def test_a_length_artifact_is_found_by_length_and_by_the_answer_text(tmp_path) -> None:
    rows = audit_items(_items(tmp_path, fixtures.long_hallucinations(80)), source="f")
    assert _measure(rows, "length_only").value >= 0.95
    assert _measure(rows, "answer_only").value >= 0.9
    for r in rows:
        assert r.chance == 0.5 and r.n == 80 and r.low <= r.value <= r.high


def test_a_marker_word_is_found_by_the_answer_text_but_not_by_length(tmp_path) -> None:
    rows = audit_items(_items(tmp_path, fixtures.marked_hallucinations(80)), source="f")
    assert _measure(rows, "answer_only").value >= 0.95
    length = _measure(rows, "length_only")
    assert length.low <= 0.5 + 0.1 and length.value <= 0.65


def test_clean_pairs_stay_near_chance(tmp_path) -> None:
    # (overlap is not: the fixture's knowledge states the right answer, as real knowledge does)
    rows = audit_items(_items(tmp_path, fixtures.clean_pairs(120)), source="f")
    for measure in ("length_only", "answer_only"):
        r = _measure(rows, measure)
        assert r.low <= 0.5 <= r.high or abs(r.value - 0.5) < 0.1, (measure, r)


def test_overlap_with_the_knowledge_is_a_measure_of_its_own(tmp_path) -> None:
    # the right answer is copied from the knowledge, the hallucination never is
    items = _items(tmp_path, fixtures.marked_hallucinations(60))
    assert overlap(examples_of(items)).value >= 0.95


def test_patterns_get_rows_of_their_own_when_they_have_enough_items() -> None:
    items = [
        Item(
            "qa",
            f"i{k}",
            "short",
            "a much longer hallucinated sentence here.",
            "q",
            "k",
            pattern="factualness" if k % 3 else "inference",
        )
        for k in range(60)
    ]
    rows = audit_items(items, source="s", measures=("length_only",), min_pairs=21)
    assert {(r.pattern, r.n) for r in rows} == {("all", 60), ("factualness", 40)}


def test_items_of_one_dialogue_are_one_cluster_for_folds_and_intervals() -> None:
    items = [
        Item(
            "dialogue",
            f"d{k // 4}:{k}",
            "yes I did.",
            "no, never seen it",
            "h",
            "k",
            cluster=f"d{k // 4}",
        )
        for k in range(40)
    ]
    examples = examples_of(items)
    folds = folds_of(examples)
    by_cluster: dict[str, set[int]] = {}
    for ex, f in zip(examples, folds, strict=True):
        by_cluster.setdefault(ex.group, set()).add(f)
    assert all(len(f) == 1 for f in by_cluster.values())  # a dialogue never spans folds
    s = length_only(examples)
    assert s.groups == 10 and s.n == 80


def test_the_interval_widens_when_clusters_are_correlated() -> None:
    # 20 clusters of 10 identical outcomes vs 200 independent ones: same rate, wider interval
    clustered = [(10, 10)] * 12 + [(0, 10)] * 8
    independent = [(1, 1)] * 120 + [(0, 1)] * 80
    p1, lo1, hi1 = ratio_interval(clustered)
    p2, lo2, hi2 = ratio_interval(independent)
    assert p1 == p2 == 0.6
    assert hi1 - lo1 > 2 * (hi2 - lo2)


def test_general_track_responses_are_scored_by_balanced_accuracy(tmp_path) -> None:
    path = tmp_path / "general.json"
    with path.open("w") as f:
        for i in range(90):
            hallucinated = i % 3 == 0  # a third are hallucinated: labels are not balanced
            response = (
                ("It was built in 1850 by a famous engineer, " * 3) if hallucinated else "Yes."
            )
            f.write(
                json.dumps(
                    {
                        "ID": str(i),
                        "user_query": f"q{i}",
                        "chatgpt_response": response,
                        "hallucination": "yes" if hallucinated else "no",
                        "hallucination_spans": [],
                    }
                )
                + "\r\n"
            )
    items = list(items_from_file(str(path)))
    assert {i.task for i in items} == {"general"} and items[0].item_id == "0"
    s = length_only(examples_of(items))
    assert s.balanced and s.value == 1.0
    # always answering "no" would score 67% accuracy, but 50% balanced accuracy
    always_no = score(examples_of(items), [False] * 90)
    assert always_no.value == 0.5


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", "qa.json:1: not a JSON line"),
        ('{"a": 1}\n', "no HaluEval fields"),
        ("[1, 2]\n", "must be an object"),
        ("\n\n", "has no records"),
        (
            '{"knowledge": "k", "question": "q", "right_answer": "r", "hallucinated_answer": "h"}\n'
            '{"knowledge": "k", "question": "q", "right_answer": "r"}\n',
            "qa.json:2: missing hallucinated_answer",
        ),
    ],
)
def test_a_bad_file_is_a_one_line_error_naming_the_line(tmp_path, content, message) -> None:
    path = tmp_path / "qa.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        list(items_from_file(str(path)))
    with pytest.raises(InputError, match="cannot be read"):
        list(items_from_file(str(tmp_path / "missing.json")))


def test_without_scikit_learn_the_answer_only_audit_says_how_to_get_it(monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.startswith("sklearn"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    items = [Item("qa", str(k), "a", "bb", "q", "k") for k in range(10)]
    with pytest.raises(UsageError, match=r"pip install 'halugen\[topics\]'"):
        answer_only(examples_of(items))
    assert length_only(examples_of(items)).value == 1.0  # the rest still works


def test_dialogue_and_summarization_files_are_read_with_their_fields(tmp_path) -> None:
    dialogue = tmp_path / "dialogue_data.json"
    dialogue.write_text(
        json.dumps(
            {
                "knowledge": "Tove Marlow wrote The Salt Orchard.",
                "dialogue_history": "[Human]: Any novel to suggest?",
                "right_response": "The Salt Orchard by Tove Marlow.",
                "hallucinated_response": "The Salt Orchard by Ivo Brandt, from 1850.",
            }
        )
        + "\n"
    )
    summary = tmp_path / "summarization_data.json"
    summary.write_text(
        json.dumps(
            {"document": "D.", "right_summary": "Right.\n", "hallucinated_summary": "Wrong."}
        )
        + "\n"
    )
    (d,) = items_from_file(str(dialogue))
    assert (d.task, d.question, d.knowledge) == (
        "dialogue",
        "[Human]: Any novel to suggest?",
        "Tove Marlow wrote The Salt Orchard.",
    )
    (s,) = items_from_file(str(summary))
    # texts as given: HaluEval's right summaries end in a newline, a length tell to measure
    assert (s.task, s.right, s.hallucinated, s.knowledge) == (
        "summarization",
        "Right.\n",
        "Wrong.",
        "D.",
    )
    with pytest.raises(InputError, match="missing right_answer"):
        list(items_from_file(str(summary), task_spec("qa")))


def test_balance_refuses_unpaired_items() -> None:
    from halugen.audit import balance

    items = [Item("general", str(k), "r", None, "q", "", label=k % 2 == 0) for k in range(20)]
    with pytest.raises(UsageError, match="general track has single responses"):
        balance(items)
