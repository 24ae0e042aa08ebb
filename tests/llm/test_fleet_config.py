"""A fleet from flags and from halugen.toml: parsing, keys from the environment, clear errors,
and a run identity that does not depend on which endpoints make up the fleet."""

from __future__ import annotations

from pathlib import Path

import pytest

from halugen.cli import build_parser
from halugen.cli.common import run_config
from halugen.config import Endpoint, RunConfig
from halugen.errors import ConfigError, UsageError
from halugen.settings.endpoints import parse_endpoint_flag, resolve_endpoints
from halugen.settings.file import load_settings


def resolve(*specs: dict, environ: dict | None = None, **kw: object) -> tuple[Endpoint, ...]:
    options = {"api_key": "run-key", "rpm": None, "tpm": None, "concurrency": 64, **kw}
    return resolve_endpoints(specs, environ=environ or {}, **options)  # type: ignore[arg-type]


def test_an_endpoint_flag_is_a_url_then_options() -> None:
    spec = parse_endpoint_flag(
        "https://gw.example/openai/v1, key=GW_KEY,rpm=600,tpm=90000,weight=2,auth=api-key"
    )
    assert spec == {
        "url": "https://gw.example/openai/v1",
        "key": "GW_KEY",
        "rpm": 600.0,
        "tpm": 90000.0,
        "weight": 2.0,
        "auth": "api-key",
    }
    assert parse_endpoint_flag("http://a:8000/v1,concurrency=4")["concurrency"] == 4


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("key=A,http://a/v1", "URL first"),
        ("http://a/v1,rpm", "not a name=value option"),
        ("http://a/v1,colour=blue", "not a name=value option"),
        ("http://a/v1,rpm=lots", "rpm must be a number"),
        ("http://a/v1,concurrency=2.5", "concurrency must be a number"),
    ],
)
def test_a_bad_endpoint_flag_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=says) as info:
        parse_endpoint_flag(text)
    assert "--endpoint" in str(info.value)


def test_keys_come_from_the_named_variables_and_defaults_from_the_run() -> None:
    a, b = resolve(
        {"url": "http://a/v1/", "key": "A_KEY", "rpm": 600},
        {"url": "http://b/v1", "auth": "api-key", "weight": 3},
        environ={"A_KEY": "sk-a"},
        rpm=1000.0,
        concurrency=16,
    )
    assert (a.url, a.api_key, a.key_env, a.rpm, a.concurrency) == (
        "http://a/v1",
        "sk-a",
        "A_KEY",
        600.0,
        16,
    )
    assert (b.api_key, b.rpm, b.weight, b.auth) == ("run-key", 1000.0, 3.0, "api-key")
    assert "sk-a" not in repr(a)  # a key is never printed


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"url": "http://a/v1", "key": "NOT_SET"}, "environment variable NOT_SET is not set"),
        ({"url": "http://a/v1", "auth": "basic"}, "auth must be one of bearer, api-key"),
        ({"url": "a.example/v1"}, "must start with http"),
        ({"url": "http://a/v1", "rpm": 0}, "rpm must be more than zero"),
        ({"url": "http://a/v1", "weight": -1}, "weight must be more than zero"),
        ({"url": "http://a/v1", "region": "eu"}, "unknown key 'region'"),
        ({"key": "A"}, "url is missing"),
    ],
)
def test_bad_endpoints_are_usage_errors_naming_the_endpoint(spec: dict, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        resolve(spec)


def test_the_same_endpoint_twice_is_an_error() -> None:
    with pytest.raises(UsageError, match="listed twice"):
        resolve({"url": "http://a/v1"}, {"url": "http://a/v1/"})


def test_endpoints_tables_in_the_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "halugen.toml"
    path.write_text(
        '[run]\nmodel = "m"\n\n'
        '[[endpoints]]\nurl = "http://a/v1"\nkey = "A_KEY"\nrpm = 600\n\n'
        '[[endpoints]]\nurl = "http://b/v1"\nauth = "api-key"\nweight = 2\n'
    )
    table = load_settings(path)
    assert table["model"] == "m"
    assert [e["url"] for e in table["endpoints"]] == ["http://a/v1", "http://b/v1"]
    path.write_text('[[endpoints]]\nurl = "http://a/v1"\nrpm = "fast"\n')
    with pytest.raises(ConfigError, match=r"\[\[endpoints\]\] number 1: rpm has the wrong type"):
        load_settings(path)


def test_flags_replace_the_files_fleet_and_concurrency_is_per_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("B_KEY", "sk-b")
    Path("halugen.toml").write_text('[[endpoints]]\nurl = "http://file/v1"\n')
    args = build_parser().parse_args(["run", "--concurrency", "8"])
    assert [e.url for e in run_config(args).endpoints] == ["http://file/v1"]
    args = build_parser().parse_args(
        [
            "run",
            "--concurrency",
            "8",
            "--endpoint",
            "http://a/v1",
            "--endpoint",
            "http://b/v1,key=B_KEY,concurrency=4",
        ]
    )
    cfg = run_config(args)
    assert [(e.url, e.concurrency) for e in cfg.endpoints] == [
        ("http://a/v1", 8),
        ("http://b/v1", 4),
    ]
    assert cfg.endpoints[1].api_key == "sk-b"
    # the flag: each endpoint's unless it says; the stages' workers follow the endpoints'
    # caps (halugen/crew.py), not this figure
    assert cfg.rate.concurrency == 8


def test_the_run_identity_does_not_change_with_the_fleet() -> None:
    hashes = {"qa/one_pass": "abc"}
    one = RunConfig(endpoints=(Endpoint(url="http://a/v1"),))
    three = RunConfig(
        endpoints=(
            Endpoint(url="http://b/v1", rpm=600, weight=2),
            Endpoint(url="http://c/v1", auth="api-key"),
            Endpoint(url="http://a/v1"),
        ),
    )
    assert one.identity(hashes) == three.identity(hashes)
    assert RunConfig(base_url="http://z/v1").identity(hashes) == one.identity(hashes)
    assert three.endpoint_label == "fleet: http://b/v1, http://c/v1, http://a/v1"
    # the first endpoint is where the run asks which model is served
    assert (three.base_url, three.api_key) == ("http://b/v1", None)
    assert RunConfig().fleet() == (Endpoint(url=RunConfig().base_url, concurrency=None),)
