"""halugen/signals.py: handlers on the running loop, removed after; serving until signalled."""

from __future__ import annotations

import asyncio
import os
import signal
import threading


def test_handlers_run_inside_the_block_and_are_removed_after() -> None:
    seen: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        from halugen.signals import on_signals

        with on_signals(lambda: seen.append("int")) as installed:
            assert installed
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(0)  # the loop runs the handler on its next turn
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
        assert seen == ["int"]
        assert not loop.remove_signal_handler(signal.SIGINT)  # already removed

    asyncio.run(main())


def test_off_the_main_thread_nothing_is_installed() -> None:
    result: list[bool] = []

    def other() -> None:
        async def main() -> None:
            from halugen.signals import on_signals

            with on_signals(lambda: None) as installed:
                result.append(installed)

        asyncio.run(main())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert result == [False]


def test_until_signalled_returns_on_sigterm() -> None:
    async def main() -> str:
        from halugen.signals import until_signalled

        waiting = asyncio.create_task(until_signalled())
        await asyncio.sleep(0)  # the task runs up to its wait: the handlers are in place
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(waiting, timeout=60)
        return "stopped"

    assert asyncio.run(main()) == "stopped"
