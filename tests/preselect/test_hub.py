"""A BERTScore model named by the hub: without a network and not in the cache, the scorer is
refused at once with one line naming --bertscore-model PATH, whether HF_HUB_OFFLINE is set
or not; never a minute of retry lines."""

from __future__ import annotations

import http.server
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from halugen.errors import UsageError
from halugen.preselect import hub
from halugen.preselect.hub import hub_offline, resolve_hub_model

pytest.importorskip("huggingface_hub", reason="needs the bertscore extra")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on leaving: connections are refused


@pytest.fixture
def hub_state(monkeypatch: pytest.MonkeyPatch) -> Any:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(hub, "_in_cache", lambda name: False)
    return constants


@pytest.fixture
def answering_hub() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200 if "known" in self.path else 404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_offline_and_not_cached_is_refused_at_once(hub_state: Any) -> None:
    hub_state.HF_HUB_OFFLINE = True
    with pytest.raises(UsageError) as err:
        resolve_hub_model("roberta-large", shown="roberta-large")
    message = str(err.value)
    assert "HF_HUB_OFFLINE is set" in message and "--bertscore-model PATH" in message
    assert "\n" not in message


def test_unreachable_hub_and_not_cached_is_refused_at_once(
    hub_state: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(UsageError) as err:
        resolve_hub_model("roberta-large", shown="roberta-large")
    message = str(err.value)
    assert f"{hub_state.ENDPOINT} cannot be reached" in message
    assert "--bertscore-model PATH" in message and "\n" not in message
    assert not any("Retry" in r.getMessage() for r in caplog.records)


def test_cached_models_load_offline_when_the_hub_is_away(
    hub_state: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub, "_in_cache", lambda name: True)
    assert resolve_hub_model("roberta-large", shown="x").offline
    with hub_offline(True):
        assert hub_state.HF_HUB_OFFLINE is True
    assert hub_state.HF_HUB_OFFLINE is False  # restored


def test_a_reachable_hub_downloads(hub_state: Any, answering_hub: str) -> None:
    hub_state.ENDPOINT = answering_hub
    assert not resolve_hub_model("org/known", shown="x").offline
    # a model the hub does not know is left to the loader, which says so itself
    assert not resolve_hub_model("org/other", shown="x").offline


def test_the_default_model_never_reaches_bert_score(
    hub_state: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bert_score = pytest.importorskip("bert_score", reason="needs the bertscore extra")
    from halugen.preselect.scoring import PairwiseScorer, ScorerSpec

    def must_not_load(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("bert-score was asked to load a model it cannot get")

    monkeypatch.setattr(bert_score, "BERTScorer", must_not_load)
    with pytest.raises(UsageError) as err:
        PairwiseScorer(ScorerSpec())
    message = str(err.value)
    assert "bert-score's default model for en (roberta-large)" in message
    assert "--bertscore-model PATH" in message


@pytest.mark.parametrize("offline", ["1", None])
def test_the_cli_fails_in_one_line(tmp_path: Path, offline: str | None) -> None:
    pytest.importorskip("bert_score", reason="needs the bertscore extra")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "Why is the sky blue?"}\n')
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env.update(
        HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}",
        HF_HOME=str(tmp_path / "hf"),  # an empty cache
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    if offline:
        env["HF_HUB_OFFLINE"] = offline
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "halugen",
            "preselect",
            "--queries",
            str(queries),
            "--base-url",
            f"http://127.0.0.1:{closed_port()}/v1",
            "--model",
            "m",
            "--api-key",
            "k",
            "--db",
            str(tmp_path / "h.duckdb"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "--bertscore-model PATH" in lines[0] and "Retry" not in proc.stderr
