"""``halugen task check PATH --model M``: how a task's openings fit the model's prompt cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from halugen.cli import main
from halugen.cost.cache import APPROX_MARGIN, OpeningFit, fit_lines
from halugen.cost.cache import opening_fits as fits_of_templates
from halugen.cost.prices import ModelPrice, find_price
from halugen.tasks.base import TaskSpec
from halugen.tasks.templates import task_template
from halugen.tokens import TokenCounter, get_counter, load_encoding
from tests.task_specs import task_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
FILLER = " tide"  # one cl100k token a time


def _folder(tmp_path: Path, opening: int, padding: int) -> Path:
    """A copy of the science_qa example whose one-pass template opens with ``opening``
    filler tokens and has ``padding`` more in an '=== if cached' block."""
    src = EXAMPLES / "science_qa"
    folder = tmp_path / "science_qa"
    (folder / "prompts").mkdir(parents=True)
    for path in src.rglob("*"):
        if path.is_file():
            (folder / path.relative_to(src)).write_bytes(path.read_bytes())
    fields = "\n".join(
        f"{name}: {{{{{name}}}}}" for name in ("passage", "question", "right_answer")
    )
    reply = (
        "Reply format:\nPattern: <one of: entity-error, relation-error, outdatedness>\nAnswer: <a>"
    )
    (folder / "prompts" / "sample_onepass.txt").write_text(
        "A test template.\n\n=== system\nWrite a wrong answer." + FILLER * opening
        + "\n\n=== if cached\nMore." + FILLER * padding + "\n\n=== end if\n=== user\n"
        + reply + "\n\n" + fields + "\n",
        encoding="utf-8",
    )  # fmt: skip
    return folder


def opening_fits(spec: TaskSpec, price: ModelPrice, counter: TokenCounter) -> list[OpeningFit]:
    """The openings of ``spec``'s sampling and filter templates, as ``task check`` reads them."""
    stems = (*spec.sample_templates, spec.filter_template) if spec.generated else ()
    return fits_of_templates([(s, task_template(spec, s)) for s in stems], price, counter)


def _spec(folder: Path) -> TaskSpec:
    return task_spec(str(folder))


def _approximate() -> TokenCounter:
    """cl100k_base standing in for o200k_base, as ``get_counter`` does offline."""
    return TokenCounter("o200k_base~cl100k_base", load_encoding("cl100k_base"), exact=False)


def test_a_padded_opening_past_the_minimum_is_sent_and_cached(tmp_path: Path) -> None:
    price = find_price("gpt-4o-mini")
    assert price is not None and price.caching is not None
    counter = get_counter("cl100k_base")
    assert counter.exact
    fits = {f.stem: f for f in opening_fits(_spec(_folder(tmp_path, 660, 400)), price, counter)}
    assert set(fits) == {"sample_onepass", "sample_conversation", "filter"}
    one = fits["sample_onepass"]
    assert one.padded is not None and one.padded - one.short >= 400
    assert one.interactive_pads and not one.batch_pads  # the card: no cached input in batches
    assert one.cached == price.caching.cacheable(one.padded) >= 1024
    assert not one.near  # counted exactly
    # the example's own conversational template has no cached-only blocks and is too short
    assert fits["sample_conversation"].padded is None and fits["sample_conversation"].cached == 0
    lines = fit_lines(list(fits.values()), price, counter)
    assert lines[0].startswith("openings at gpt-4o-mini prices (cached from 1,024 tokens")
    assert any(
        line.startswith("  sample_onepass: ")
        and "calls send the longer one, batch lines the shorter" in line
        and f"a warm call gets {one.cached:,} from the cache" in line
        for line in lines
    )
    assert not any(line.startswith("note:") for line in lines)


def test_an_approximate_count_just_past_the_minimum_is_flagged(tmp_path: Path) -> None:
    price = find_price("gpt-4o-mini")
    assert price is not None and price.caching is not None
    exact = get_counter("cl100k_base")
    spec = _spec(_folder(tmp_path, 660, 400))
    padded = opening_fits(spec, price, exact)[0].padded
    assert padded is not None
    # pad to a few tokens past the minimum, then count "approximately"
    near = _spec(_folder(tmp_path / "near", 660, 400 + 1024 + 5 - padded))
    fit = opening_fits(near, price, _approximate())[0]
    assert fit.interactive_pads and 1024 <= fit.sent < 1024 * (1 + APPROX_MARGIN)
    assert fit.near
    assert not opening_fits(near, price, exact)[0].near  # an exact count is trusted
    lines = fit_lines([fit], price, _approximate())
    assert "counted approximately with o200k_base~cl100k_base" in lines[0]
    assert lines[-1].startswith("note: sample_onepass's opening clears the 1,024-token minimum by ")
    # well past the margin: no note
    far = _spec(_folder(tmp_path / "far", 660, 400 + 1024 + 60 - padded))
    assert not opening_fits(far, price, _approximate())[0].near


def test_a_padded_opening_that_does_not_pay_is_not_sent(tmp_path: Path) -> None:
    """~400 tokens padded to ~1,100: at gpt-4o-mini 1,024 cached tokens at half price cost
    more than 400 uncached ones."""
    price = find_price("gpt-4o-mini")
    assert price is not None
    fit = opening_fits(_spec(_folder(tmp_path, 380, 700)), price, get_counter("cl100k_base"))[0]
    assert not fit.interactive_pads and fit.cached == 0
    line = fit_lines([fit], price, get_counter("cl100k_base"))[1]
    assert "calls send the shorter one (caching the longer costs more than it saves)" in line
    assert "not cached (under 1,024)" in line


def test_task_check_with_a_model_prints_the_openings(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path, 660, 400)
    assert main(["task", "check", str(folder), "--model", "gpt-4o-mini"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "task science_qa is ready" in out[0]
    assert out[1].startswith("openings at gpt-4o-mini prices")
    assert [line.split(":")[0].strip() for line in out[2:5]] == [
        "sample_onepass", "sample_conversation", "filter"
    ]  # fmt: skip


def test_a_local_card_model_is_never_padded(capsys) -> None:
    folder = str(Path(__file__).resolve().parents[2] / "prompts" / "qa")
    assert main(["task", "check", folder, "--model", "llama", "--price-card", "local"]) == 0
    out = capsys.readouterr().out
    assert "(the card gives it no cached input)" in out
    assert "calls send the shorter one" in out and "costs more than it saves" not in out
    assert "from the cache" not in out


@pytest.mark.parametrize("task", ["general"])
def test_a_judging_only_task_has_no_openings(task: str, capsys) -> None:
    folder = str(Path(__file__).resolve().parents[2] / "prompts" / task)
    assert main(["task", "check", folder, "--model", "gpt-4o-mini"]) == 0
    assert "only judges: no openings are sent" in capsys.readouterr().out


def test_an_unknown_model_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path, 10, 10)
    assert main(["task", "check", str(folder), "--model", "no-such-model"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: no price card lists model 'no-such-model': give a model a card lists, or "
        "--price-card PATH with one that does"
    ]
