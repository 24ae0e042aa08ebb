"""LDA topics of a task's samples and of the samples a model failed on (pure analysis).

As in HaluEval's analysis: one topic model over every sample of a task (10 topics) and one
over the failures only (5 topics: hallucinated samples the model judged "No"), so one can
see which topics the model fails on. The backend is scikit-learn (``CountVectorizer`` with
its built-in English stop words, ``LatentDirichletAllocation`` with a fixed random state):
nothing is downloaded at run time and the same input gives the same topics. With
``backend="gensim"`` (gensim installed besides the extra) gensim's ``LdaModel`` fits the
topics instead, on the same vocabulary.

Shares. Each report is one topic model over its own documents: every document, for the
"failures" set every failed document, with at least one word left after vectorising. Each
of them is assigned to its most probable topic; ``share_samples`` is the fraction of the
report's documents assigned to a topic, ``share_failures`` the fraction of its failed
documents (for the "failures" set the two are the same). In the "all" set, a topic whose
failure share exceeds its sample share is one the model fails on more often than its size
explains. Topics are numbered by decreasing share of samples. Both sets share one
vocabulary, built from every document.

Coherence is UMass (Mimno et al., 2011) from document co-occurrence counts of the topic's
top words in the corpus the model was fitted on (no external reference corpus): the mean
over ordered word pairs of log((D(w_i, w_j) + 1) / D(w_j)), w_j ranked above w_i. It is
at most about 0; closer to 0 is more coherent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..options.table import default

__all__ = [
    "BACKENDS",
    "MISSING_EXTRA",
    "TOPIC_SETS",
    "Topic",
    "TopicReport",
    "analyse",
    "umass_coherence",
]

TOPIC_SETS = ("all", "failures")
BACKENDS = ("sklearn", "gensim")
MISSING_EXTRA = "topic analysis needs the topics extra: pip install 'halugen[topics]'"

# Words: two or more letters. Numbers (years, counts, ids) say nothing about a topic.
_TOKEN_PATTERN = r"(?u)\b[^\W\d_]{2,}\b"
# Below this many documents, a word seen once is kept and no word is too common to keep:
# a small corpus has too few documents for document-frequency cut-offs to mean anything.
_SMALL_CORPUS = 20
_BATCH_LIMIT = 2000
_MAX_ITER_BATCH = 50
_MAX_ITER_ONLINE = 10


@dataclass(frozen=True)
class Topic:
    index: int
    top_words: tuple[str, ...]
    share_samples: float
    share_failures: float | None  # None when no failure information was given
    coherence: float


@dataclass(frozen=True)
class TopicReport:
    task: str
    topic_set: str  # "all" | "failures"
    topics: tuple[Topic, ...]
    n_documents: int
    n_failures: int


def _sklearn() -> tuple[Any, Any, Any]:
    """(CountVectorizer, LatentDirichletAllocation, numpy), imported only when needed."""
    try:
        import numpy as np
        from sklearn.decomposition import LatentDirichletAllocation
        from sklearn.feature_extraction.text import CountVectorizer
    except ImportError:
        raise UsageError(MISSING_EXTRA) from None
    return CountVectorizer, LatentDirichletAllocation, np


def analyse(
    documents: Sequence[str],
    failed: Sequence[bool] | None,
    *,
    task: str,
    n_topics_all: int = default("topics"),
    n_topics_failures: int = default("failure_topics"),
    top_n: int = 10,
    random_state: int = 0,
    max_features: int = 5000,
    backend: str = default("backend"),
) -> list[TopicReport]:
    """Topic reports for ``documents``: the "all" set, then "failures" when there are enough.

    ``failed[i]`` flags document i as a failure; ``None`` means no failure information (no
    failures set, ``share_failures`` None). The failures set is skipped when fewer than
    2 × ``n_topics_failures`` failed documents have words. ``backend`` is "sklearn" or
    "gensim"; the vocabulary (scikit-learn's ``CountVectorizer``) is the same for both.
    """
    if failed is not None and len(failed) != len(documents):
        raise ValueError(f"{len(failed)} failure flags for {len(documents)} documents")
    if n_topics_all < 1 or n_topics_failures < 1 or top_n < 1:
        raise UsageError("topic counts and the number of top words must be at least 1")
    if backend not in BACKENDS:
        raise UsageError(f"unknown topic backend {backend!r}; known: {', '.join(BACKENDS)}")
    if not documents:
        raise UsageError(f"no {task} documents to analyse")
    _, lda_class, np = _sklearn()
    if backend == "gensim":
        _gensim()  # fail before any work

    counts, vocabulary = _vectorise(documents, max_features, task)
    # documents without a single vocabulary word carry no topic: leave them out of the shares
    has_words = np.asarray(counts.sum(axis=1)).ravel() > 0
    counts = counts[has_words]
    fail = np.asarray(failed, dtype=bool)[has_words] if failed is not None else None

    def fit(k: int, rows: Any) -> Any:
        if backend == "gensim":
            return _GensimLda(k, rows, vocabulary, random_state)
        # batch updates are the most stable on small corpora; online (mini-batch) ones keep
        # ten thousand documents to seconds rather than minutes
        small = rows.shape[0] <= _BATCH_LIMIT
        model = lda_class(
            n_components=k,
            learning_method="batch" if small else "online",
            max_iter=_MAX_ITER_BATCH if small else _MAX_ITER_ONLINE,
            random_state=random_state,
        )
        model.fit(rows)
        return model

    reports = [_report(task, "all", fit(n_topics_all, counts), counts, fail, vocabulary, top_n)]
    if fail is not None and int(fail.sum()) >= 2 * n_topics_failures:
        failed_rows = counts[fail]
        reports.append(
            _report(
                task,
                "failures",
                fit(n_topics_failures, failed_rows),
                failed_rows,
                np.ones(failed_rows.shape[0], dtype=bool),
                vocabulary,
                top_n,
            )
        )
    return reports


def _gensim() -> Any:
    try:
        import gensim
    except ImportError:
        raise UsageError("the gensim topic backend needs gensim: pip install gensim") from None
    return gensim


class _GensimLda:
    """gensim's LdaModel behind the two members the reports use (as scikit-learn's has)."""

    def __init__(self, k: int, rows: Any, vocabulary: list[str], random_state: int) -> None:
        _gensim()
        from gensim.models import LdaModel

        self._model = LdaModel(
            corpus=self._corpus(rows),
            num_topics=k,
            id2word=dict(enumerate(vocabulary)),
            random_state=random_state,
            passes=10,
            iterations=100,
            chunksize=2000,
        )
        self.components_ = self._model.get_topics()  # k x vocabulary, rows sum to 1

    def _corpus(self, rows: Any) -> Any:
        return _gensim().matutils.Sparse2Corpus(rows, documents_columns=False)

    def transform(self, rows: Any) -> Any:
        gamma, _ = self._model.inference(list(self._corpus(rows)))
        return gamma  # unnormalised per-document topic weights: argmax is what is used


def _vectorise(documents: Sequence[str], max_features: int, task: str) -> tuple[Any, list[str]]:
    """Sparse document-term counts and the vocabulary (column order)."""
    vectorizer_class, _, _ = _sklearn()
    small = len(documents) < _SMALL_CORPUS
    attempts = [(1, 1.0)] if small else [(2, 0.95), (1, 1.0)]
    for min_df, max_df in attempts:
        vectorizer = vectorizer_class(
            stop_words="english",
            token_pattern=_TOKEN_PATTERN,
            lowercase=True,
            min_df=min_df,
            max_df=max_df,
            max_features=max_features,
        )
        try:
            counts = vectorizer.fit_transform(["" if d is None else str(d) for d in documents])
        except ValueError:  # every word pruned (or only stop words): loosen the cut-offs
            continue
        return counts.tocsr(), [str(w) for w in vectorizer.get_feature_names_out()]
    raise UsageError(
        f"the {task} documents have no words left to model once English stop words are removed"
    )


def _report(
    task: str, topic_set: str, model: Any, rows: Any, fail: Any, vocabulary: list[str], top_n: int
) -> TopicReport:
    """The topics of ``model`` fitted on ``rows`` (``fail``: their failure flags or None)."""
    np = _sklearn()[2]
    k = int(model.components_.shape[0])
    n_docs = int(rows.shape[0])
    n_fail = int(fail.sum()) if fail is not None else 0
    assigned = np.asarray(model.transform(rows)).argmax(axis=1)
    share_samples = np.bincount(assigned, minlength=k) / max(n_docs, 1)
    share_failures = (
        np.bincount(assigned[fail], minlength=k) / n_fail
        if fail is not None and n_fail > 0
        else None
    )
    presence = (rows > 0).astype(np.int64).tocsc()
    topics = []
    for t in range(k):
        # ties broken by vocabulary order, so equal weights still give a stable ranking
        order = np.argsort(-model.components_[t], kind="stable")[: min(top_n, len(vocabulary))]
        topics.append(
            Topic(
                index=t,
                top_words=tuple(vocabulary[i] for i in order),
                share_samples=float(share_samples[t]),
                share_failures=None if share_failures is None else float(share_failures[t]),
                coherence=umass_coherence(presence, [int(i) for i in order]),
            )
        )
    # number topics by decreasing share: LDA's own component order means nothing
    ranked = sorted(topics, key=lambda tp: (-tp.share_samples, tp.index))
    topics = [
        Topic(i, tp.top_words, tp.share_samples, tp.share_failures, tp.coherence)
        for i, tp in enumerate(ranked)
    ]
    return TopicReport(
        task=task, topic_set=topic_set, topics=tuple(topics), n_documents=n_docs, n_failures=n_fail
    )


def umass_coherence(presence: Any, words: Sequence[int]) -> float:
    """UMass coherence of ``words`` (column indices, best first) over a 0/1 doc-term matrix.

    The mean over pairs (i > j) of log((D(w_i, w_j) + 1) / D(w_j)); 0.0 for fewer than two
    words. A word absent from every document counts as seen once (the log stays finite).
    """
    if len(words) < 2:
        return 0.0
    np = _sklearn()[2]
    sub = presence[:, list(words)]
    sub = np.asarray(sub.todense() if hasattr(sub, "todense") else sub, dtype=np.int64)
    sub = (sub > 0).astype(np.int64)
    co = sub.T @ sub  # co[i, j] = documents holding both words; the diagonal, each word
    total = 0.0
    pairs = 0
    for i in range(1, len(words)):
        for j in range(i):
            total += math.log((co[i, j] + 1) / max(int(co[j, j]), 1))
            pairs += 1
    return total / pairs
