"""LDA topics: planted themes come back, failures land on their theme, coherence is sane."""

from __future__ import annotations

import math

import pytest

from halugen.analysis import TopicReport, analyse, umass_coherence
from halugen.errors import UsageError

from .synthetic import THEMES, corpus

pytest.importorskip("sklearn", reason="needs the topics extra")

FAILING_THEME = "law"


def _theme_of(words: tuple[str, ...]) -> tuple[str | None, int]:
    """The theme most of ``words`` come from, and how many of them do."""
    best, hits = None, 0
    for name, vocab in THEMES.items():
        n = sum(w in vocab for w in words)
        if n > hits:
            best, hits = name, n
    return best, hits


@pytest.fixture(scope="module")
def planted() -> tuple[list[TopicReport], list[str], list[bool]]:
    documents, themes = corpus(per_theme=60)
    # every third law document is a failure; one stray failure elsewhere, as in real runs
    failed = [t == FAILING_THEME and (i // 4) % 3 != 0 for i, t in enumerate(themes)]
    failed[0] = True
    return analyse(documents, failed, task="qa"), themes, failed


def test_reports_have_the_paper_shape(planted):
    reports, themes, failed = planted
    assert [r.topic_set for r in reports] == ["all", "failures"]
    every, failures = reports
    assert (every.task, len(every.topics), every.n_documents) == ("qa", 10, len(themes))
    assert every.n_failures == sum(failed)
    assert (len(failures.topics), failures.n_documents, failures.n_failures) == (
        5,
        sum(failed),
        sum(failed),
    )
    for report in reports:
        assert [t.index for t in report.topics] == list(range(len(report.topics)))
        assert all(len(t.top_words) == 10 for t in report.topics)
        assert sum(t.share_samples for t in report.topics) == pytest.approx(1.0)
        assert sum(t.share_failures for t in report.topics) == pytest.approx(1.0)
        shares = [t.share_samples for t in report.topics]
        assert shares == sorted(shares, reverse=True)  # numbered by decreasing share


def test_each_planted_theme_dominates_a_topic(planted):
    every = planted[0][0]
    found = set()
    for topic in every.topics:
        theme, hits = _theme_of(topic.top_words[:5])
        if hits >= 4:
            found.add(theme)
    assert found == set(THEMES)


def test_the_failing_theme_has_the_largest_failure_share(planted):
    every, failures = planted[0]
    top = max(every.topics, key=lambda t: t.share_failures)
    assert _theme_of(top.top_words[:5])[0] == FAILING_THEME
    assert top.share_failures > 0.3
    # its failure share is far above its share of the samples: the model fails there
    assert top.share_failures > 2 * top.share_samples
    # the failures-only topics are all about the failing theme
    for topic in failures.topics[:3]:
        assert _theme_of(topic.top_words[:5])[0] == FAILING_THEME
    assert failures.topics[0].share_failures == failures.topics[0].share_samples


def test_coherence_is_finite_and_better_for_planted_topics(planted):
    every = planted[0][0]
    values = [t.coherence for t in every.topics]
    assert all(math.isfinite(v) and v <= 0.5 for v in values)
    pure = [t.coherence for t in every.topics if _theme_of(t.top_words[:5])[1] == 5]
    assert pure and max(pure) > min(values)


def test_same_input_same_topics():
    documents, themes = corpus(per_theme=15, seed=3)
    failed = [t == "cooking" for t in themes]
    first = analyse(documents, failed, task="dialogue", n_topics_all=4, n_topics_failures=2)
    again = analyse(documents, failed, task="dialogue", n_topics_all=4, n_topics_failures=2)
    assert first == again
    other_seed = analyse(
        documents, failed, task="dialogue", n_topics_all=4, n_topics_failures=2, random_state=5
    )
    assert [r.n_documents for r in other_seed] == [r.n_documents for r in first]


def test_without_failure_flags_only_the_all_set():
    documents, _ = corpus(per_theme=10)
    (report,) = analyse(documents, None, task="summarization", n_topics_all=4, top_n=5)
    assert report.n_failures == 0 and len(report.topics) == 4
    assert all(t.share_failures is None and len(t.top_words) == 5 for t in report.topics)


def test_failures_set_skipped_with_too_few_failures():
    documents, _ = corpus(per_theme=10)
    failed = [i < 9 for i in range(len(documents))]  # 9 < 2 × 5
    reports = analyse(documents, failed, task="qa", n_topics_all=4)
    assert [r.topic_set for r in reports] == ["all"]
    failed = [i < 10 for i in range(len(documents))]
    assert [r.topic_set for r in analyse(documents, failed, task="qa", n_topics_all=4)] == [
        "all",
        "failures",
    ]


def test_no_failures_at_all_gives_zero_failure_shares():
    documents, _ = corpus(per_theme=10)
    (report,) = analyse(documents, [False] * len(documents), task="qa", n_topics_all=3)
    assert all(t.share_failures is None for t in report.topics)
    assert report.n_failures == 0


def test_tiny_corpus_keeps_rare_words_and_skips_empty_documents():
    documents = [
        "the telescope saw a comet",
        "the oven baked bread",
        "",
        "the and of",
        "comet orbit telescope",
        "bread oven flour",
    ]
    (report,) = analyse(documents, None, task="qa", n_topics_all=2, top_n=3)
    assert report.n_documents == 4  # "" and stop words only carry no topic
    words = {w for t in report.topics for w in t.top_words}
    assert {"telescope", "oven"} <= words
    assert "the" not in words


def test_numbers_are_not_words():
    documents = [f"match {i} ended {i + 2020} goal striker" for i in range(30)]
    (report,) = analyse(documents, None, task="qa", n_topics_all=2)
    assert all(w.isalpha() for t in report.topics for w in t.top_words)


@pytest.mark.parametrize("documents", [[], ["the of and", "is it"]])
def test_nothing_to_model_is_a_usage_error(documents):
    with pytest.raises(UsageError):
        analyse(documents, None, task="qa")


def test_bad_arguments():
    with pytest.raises(ValueError, match="failure flags"):
        analyse(["a b c"], [True, False], task="qa")
    with pytest.raises(UsageError, match="backend"):
        analyse(["comet orbit"], None, task="qa", backend="mallet")


def test_umass_by_hand():
    np = pytest.importorskip("numpy")
    from scipy.sparse import csc_matrix

    # 4 documents × 3 words: w0 in docs 0,1,2; w1 in docs 0,1; w2 in doc 3
    presence = csc_matrix(np.array([[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 1]]))
    expected = (math.log((2 + 1) / 3) + math.log((0 + 1) / 3) + math.log((0 + 1) / 2)) / 3
    assert umass_coherence(presence, [0, 1, 2]) == pytest.approx(expected)
    # order matters: the conditioning word is the better-ranked one
    assert umass_coherence(presence, [1, 0]) == pytest.approx(math.log(3 / 2))
    assert umass_coherence(presence, [0]) == 0.0


def test_gensim_backend_recovers_the_themes():
    pytest.importorskip("gensim")
    documents, themes = corpus(per_theme=40)
    failed = [t == FAILING_THEME for t in themes]
    every, failures = analyse(documents, failed, task="qa", n_topics_all=4, backend="gensim")
    found = {
        _theme_of(t.top_words[:5])[0] for t in every.topics if _theme_of(t.top_words[:5])[1] >= 4
    }
    assert found == set(THEMES)
    top = max(every.topics, key=lambda t: t.share_failures)
    assert _theme_of(top.top_words[:5])[0] == FAILING_THEME
    assert failures.n_documents == sum(failed)
