"""The write gate: closed, it holds new write transactions back until the open ones
end, and lets a thread's nested write through (or that thread would wait on itself)."""

from __future__ import annotations

import threading

from photo_pipeline.write_gate import WriteGate
from tests.support.cli_processes import wait_until


def test_closing_waits_for_open_writes_and_holds_new_ones_back():
    gate = WriteGate()
    opened, release, reopen = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []
    drained: list[bool] = []

    def open_write() -> None:
        with gate.write():
            opened.set()
            release.wait()
            with gate.write():  # nested, with the gate closed: must pass
                order.append("nested")
            order.append("ended")

    def close() -> None:
        with gate.closed(drain_seconds=60) as all_ended:
            drained.append(all_ended)
            reopen.wait()

    def new_write() -> None:
        with gate.write():
            order.append("new")

    holder = threading.Thread(target=open_write)
    holder.start()
    opened.wait()
    closer = threading.Thread(target=close)
    closer.start()
    wait_until(lambda: gate.holding_back, "the gate to close")
    newcomer = threading.Thread(target=new_write)
    newcomer.start()
    release.set()
    wait_until(lambda: drained, "the open write to drain")
    assert drained == [True] and order == ["nested", "ended"]
    newcomer.join(timeout=0.2)  # bounded: it must still be waiting at the gate
    assert newcomer.is_alive() and order == ["nested", "ended"]
    reopen.set()
    newcomer.join(timeout=60)
    assert order == ["nested", "ended", "new"]
    for thread in (holder, closer):
        thread.join(timeout=60)


def test_a_write_that_does_not_end_does_not_hold_the_gate_for_ever():
    gate = WriteGate()
    with gate.write(), gate.closed(drain_seconds=0.05) as drained:
        assert not drained
    assert not gate.holding_back
