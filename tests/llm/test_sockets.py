"""Room for connections under the open-file limit (llm/sockets.py), with a fake rlimit."""

from __future__ import annotations

import pytest

from halugen.llm import sockets
from halugen.llm.sockets import RESERVED_FDS, connection_room

resource = pytest.importorskip("resource")


class FakeLimits:
    def __init__(self, soft: int, hard: int, refuse_above: int | None = None) -> None:
        self.soft, self.hard, self.refuse_above = soft, hard, refuse_above

    def get(self, which: int) -> tuple[int, int]:
        return self.soft, self.hard

    def set(self, which: int, limits: tuple[int, int]) -> None:
        soft, _hard = limits
        above_hard = self.hard != resource.RLIM_INFINITY and soft > self.hard
        if above_hard or (self.refuse_above is not None and soft > self.refuse_above):
            raise ValueError("not allowed")
        self.soft = soft


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> FakeLimits:
    fake = FakeLimits(1024, 1024)
    monkeypatch.setattr(resource, "getrlimit", fake.get)
    monkeypatch.setattr(resource, "setrlimit", fake.set)
    return fake


def test_the_soft_limit_is_raised_as_far_as_needed(limits: FakeLimits) -> None:
    limits.soft, limits.hard = 1024, 1_048_576
    assert connection_room(4096) == 4096
    assert limits.soft == 4096 + RESERVED_FDS


def test_a_low_hard_limit_leaves_fewer_connections(limits: FakeLimits) -> None:
    limits.soft, limits.hard = 256, 2048
    assert connection_room(4096) == 2048 - RESERVED_FDS
    assert limits.soft == 2048


def test_macos_refuses_more_than_its_open_max(limits: FakeLimits) -> None:
    limits.soft, limits.hard = 256, resource.RLIM_INFINITY
    limits.refuse_above = sockets._MACOS_OPEN_MAX
    assert connection_room(20_000) == sockets._MACOS_OPEN_MAX - RESERVED_FDS


def test_enough_room_changes_nothing(limits: FakeLimits) -> None:
    limits.soft, limits.hard = 65_536, 65_536
    assert connection_room(300) == 300
    assert limits.soft == 65_536


def test_tls_connections_get_a_read_buffer_of_one_record_not_256_kib() -> None:
    import asyncio.sslproto

    from halugen.llm.transport import TLS_READ_BUFFER, _small_tls_buffers

    _small_tls_buffers()
    assert asyncio.sslproto.SSLProtocol.max_size == TLS_READ_BUFFER == 16 * 1024
