"""A minimal OpenAI-shaped HTTP stub for measuring the client side alone.

Raw asyncio protocol, keep-alive, canned answers (a QA candidate or a judge's choice), no
limits, no faults: it costs a few tens of microseconds per request, so a benchmark against
it measures halugen, not the server. A QA candidate is the record's right answer spelt
backwards (same length, never the right text), so halugen's guards accept most of them and a
run goes through the filter and writes samples, as a real one does.
Usage: python bench/stub_server.py [--latency-ms N]  (prints the port)
"""

from __future__ import annotations

import asyncio
import re
import sys

import orjson

_PATTERNS = [b"factualness", b"inference"]
# seconds before each answer (--latency-ms N), as a provider's generation time
LATENCY = (
    float(sys.argv[sys.argv.index("--latency-ms") + 1]) / 1000
    if "--latency-ms" in sys.argv
    else 0.0
)
_RIGHT = b"Right answer: "
_NOT_PLAIN = re.compile(rb"[^A-Za-z0-9 ]")


def _candidate(body: bytes, n: int) -> bytes:
    """A wrong answer of the right answer's length: its plain characters reversed (and, for
    every other request, rotated by one, so that a seed's two candidates differ)."""
    start = body.rfind(_RIGHT)
    answer = b""
    if start >= 0:
        start += len(_RIGHT)
        end = body.find(b"\\n", start)
        answer = _NOT_PLAIN.sub(b"", body[start : end if end > 0 else start + 80])[::-1].strip()
    if not answer or answer.lower() == answer[::-1].lower():
        answer = b"the stub answer %d" % n
    elif n % 2:
        answer = answer[1:] + answer[:1]
    return b"Pattern: " + _PATTERNS[n % 2] + b"\nAnswer: " + answer.capitalize()


def _body(content: bytes) -> bytes:
    return orjson.dumps(
        {
            "id": "stub",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content.decode()},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912},
        }
    )


class Stub(asyncio.Protocol):
    counter = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].lower()
            i = head.find(b"content-length:")
            length = (
                int(head[i + 15 : head.find(b"\r\n", i) if head.find(b"\r\n", i) > 0 else None])
                if i >= 0
                else 0
            )
            if len(self.buf) < head_end + 4 + length:
                return
            body = self.buf[head_end + 4 : head_end + 4 + length]
            self.buf = self.buf[head_end + 4 + length :]
            Stub.counter += 1
            judged = b"Choice:" in body[-400:]
            content = b"Choice: 1" if judged else _candidate(body, Stub.counter)
            payload = _body(content)
            response = (
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(payload)).encode()
                + b"\r\n\r\n"
                + payload
            )
            if LATENCY:  # answers keep their order on a connection: each waits as long
                asyncio.get_running_loop().call_later(LATENCY, self._send, response)
            else:
                self._send(response)

    def _send(self, response: bytes) -> None:
        if not self.transport.is_closing():  # type: ignore[attr-defined]
            self.transport.write(response)  # type: ignore[attr-defined]


async def main() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Stub, "127.0.0.1", 0, backlog=2048)
    port = server.sockets[0].getsockname()[1]
    print(f"stub listening on http://127.0.0.1:{port}/v1", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
