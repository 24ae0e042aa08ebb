"""The outbox's places: released by ``close()``, cheap to take (one per attempt)."""

from __future__ import annotations

import anyio
import pytest

from halugen.errors import Interrupted
from halugen.llm import outbox as outbox_module
from halugen.llm.outbox import Outbox


def test_places_after_the_first_skip_the_backend_lookup(monkeypatch) -> None:
    """``anyio.CancelScope()`` finds the running backend each time; an outbox finds its
    scope class once and every later place is made from it, released all the same."""
    made = []
    real = anyio.CancelScope

    def counting(**kwargs: object) -> anyio.CancelScope:
        scope = real(**kwargs)  # type: ignore[arg-type]
        made.append(scope)
        return scope

    async def scenario() -> None:
        box = Outbox()
        for _ in range(5):
            with box.place() as place:
                place.leave()
        assert box.at_provider == 0

        async def waits() -> None:
            with pytest.raises(Interrupted), box.place():
                await anyio.sleep_forever()

        async with anyio.create_task_group() as group:
            group.start_soon(waits)
            await anyio.wait_all_tasks_blocked()
            assert box.close() == (0, 1)

    monkeypatch.setattr(outbox_module.anyio, "CancelScope", counting)
    anyio.run(scenario)
    assert len(made) == 1
