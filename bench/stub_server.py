"""A minimal OpenAI-shaped HTTP stub for measuring the client side alone.

Raw asyncio protocol, keep-alive, canned answers (a QA candidate or a judge's choice), no
limits, no faults: it costs a few tens of microseconds per request, so a benchmark against
it measures halugen, not the server. Usage: python bench/stub_server.py  (prints the port)
"""

from __future__ import annotations

import asyncio
import sys

import orjson

_CANDIDATES = [
    b"Pattern: factualness\nAnswer: the stub answer %d",
    b"Pattern: inference\nAnswer: another stub answer %d",
]


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
            if b"Choice:" in body[-400:]:
                content = b"Choice: 1"
            else:
                content = _CANDIDATES[Stub.counter % 2] % Stub.counter
            payload = _body(content)
            self.transport.write(  # type: ignore[attr-defined]
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(payload)).encode()
                + b"\r\n\r\n"
                + payload
            )


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
