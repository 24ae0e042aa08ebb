"""The settings of the model endpoint: where calls go, their limits, prices and patience
(every command that calls a model)."""

from __future__ import annotations

from .checks import blank_none, positive
from .spec import Setting

__all__ = ["DEFAULT_BASE_URL", "ENDPOINT"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

ENDPOINT: tuple[Setting, ...] = (
    Setting(
        name="base_url",
        kind=str,
        group="endpoint",
        env="OPENAI_BASE_URL",
        metavar="URL",
        default=DEFAULT_BASE_URL,
        help="OpenAI-compatible API root; vLLM, llama.cpp and Ollama work too",
        example="http://127.0.0.1:8000/v1",
    ),
    Setting(
        name="api_key",
        kind=str,
        group="endpoint",
        toml=None,
        env="OPENAI_API_KEY",
        metavar="KEY",
        help="API key, never stored (a server on this machine or a private network needs none)",
        default_text="none",
        convert=blank_none,
    ),
    Setting(
        name="endpoints",
        kind=list,
        group="endpoint",
        flags=("--endpoint",),
        repeat=True,
        metavar="URL[,key=ENV_VAR,rpm=N,tpm=N,concurrency=N,weight=W,auth=api-key]",
        default=(),
        help="one endpoint of a fleet (repeat the flag): calls go to whichever has room, "
        "each with its own limits; key= names the environment variable with its key; "
        "replaces --base-url and [[endpoints]] in halugen.toml",
        default_text="one endpoint, --base-url",
        example=[{"url": "http://127.0.0.1:8001/v1", "rpm": 600}],
    ),
    Setting(
        name="model",
        kind=str,
        group="endpoint",
        flags=("-m", "--model"),
        default="",
        metavar="NAME",
        help="model name sent to the endpoint",
        default_text="gpt-4o-mini on OpenAI's API, on another server the one model it lists",
        example="gpt-4o-mini",
        in_template=True,
    ),
    Setting(
        name="context_window",
        kind=int,
        group="endpoint",
        metavar="TOKENS",
        help="the model's context window in tokens",
        default_text="what the server says, else the price card",
        example=8192,
        check=positive,
    ),
    Setting(
        name="concurrency",
        kind=int,
        group="endpoint",
        flags=("-j", "--concurrency"),
        default=None,
        metavar="N",
        help="most requests in flight (per endpoint in a fleet)",
        default_text="as many as the rate limits need at the latency seen, up to 4,096; up to "
        "256 against a server that announces no limits",
        example=8,
        to=("rate.concurrency",),
        check=positive,
    ),
    Setting(
        name="rpm",
        kind=(int, float),
        group="endpoint",
        metavar="N",
        help="requests per minute your account allows",
        default_text="learned from the server's x-ratelimit headers",
        example=5000,
        to=("rate.rpm",),
        check=positive,
    ),
    Setting(
        name="tpm",
        kind=(int, float),
        group="endpoint",
        metavar="N",
        help="tokens per minute your account allows",
        default_text="learned from the server's x-ratelimit headers",
        example=2000000,
        to=("rate.tpm",),
        check=positive,
    ),
    Setting(
        name="price_card",
        kind=str,
        group="endpoint",
        metavar="NAME|FILE",
        help="a bundled price card by name ('local': a self-hosted server at $0) or a TOML file",
        default_text="the bundled card that lists the model",
        example="local",
    ),
    Setting(
        name="price_in",
        kind=(int, float),
        group="endpoint",
        metavar="USD",
        help="USD per million input tokens, over the price card's",
        default_text="the price card's",
        example=0.15,
    ),
    Setting(
        name="price_out",
        kind=(int, float),
        group="endpoint",
        metavar="USD",
        help="USD per million output tokens, over the price card's",
        default_text="the price card's",
        example=0.6,
    ),
    Setting(
        name="timeout",
        kind=(int, float),
        group="endpoint",
        metavar="SECONDS",
        default=300.0,
        help="seconds one attempt may take",
        example=60,
        to=("timeouts.total", "timeouts.read"),
        check=positive,
    ),
    Setting(
        name="max_attempts",
        kind=int,
        group="endpoint",
        default=8,
        metavar="N",
        help="attempts per call before it fails",
        example=3,
        to=("retry.max_attempts",),
        check=positive,
    ),
    Setting(
        name="unreachable_after",
        kind=(int, float),
        group="endpoint",
        metavar="SECONDS",
        default=60.0,
        help="stop the run when for this long no attempt could connect to the endpoint, or it "
        "took requests and answered none (timeouts in a row)",
        example=120,
        to=("retry.unreachable_after",),
        check=positive,
    ),
    Setting(
        name="structured",
        kind=str,
        group="endpoint",
        choices=("auto", "on", "off"),
        default="auto",
        help="ask judges for JSON through response_format with a JSON schema: auto = when the "
        "endpoint takes it (found out once per endpoint and model by a probe; a run keeps how "
        "it asked), on, off",
        example="off",
    ),
)
