"""The event hub stops when asked, whatever its reader was doing at that instant.

Python 3.11's ``asyncio.wait_for`` drops a cancellation that arrives in the same turn
of the loop as the awaited thing completing. The hub's reader waits for a wake-up that
way, so a wake-up next to ``stop()`` left the reader running for ever: the server's
shutdown waited on it, and it went on polling a database that was gone."""

from __future__ import annotations

import asyncio

from photo_pipeline.api.hub import EventHub


def test_a_wake_up_in_the_same_turn_as_the_stop_does_not_keep_the_reader_running(service):
    async def start_wake_and_stop() -> None:
        hub = EventHub(service, poll_seconds=3600, min_interval=0)
        await hub.start()
        for _ in range(5):  # the reader reaches its wait for a wake-up
            await asyncio.sleep(0)
        hub.wake()
        stopping = asyncio.create_task(hub.stop())  # cancels the reader as its wait ends
        done, _ = await asyncio.wait({stopping}, timeout=10)  # (a wait that cancels nothing)
        assert stopping in done, "the hub did not stop within 10 s"

    asyncio.run(start_wake_and_stop())
