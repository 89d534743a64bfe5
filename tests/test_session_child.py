"""The forked child helper the UI's prefetches use (``session.child``): frames in order, previews that replace each
other instead of piling up, and a kill that ends the child at once."""

from __future__ import annotations

import os
import queue
import time

import pytest

from pimm_inspect.session.child import END, ForkedChild, Send

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def _wait_reaped(child: ForkedChild) -> None:
    deadline = time.monotonic() + 60  # a hang guard, not a timing assert
    while not child.reaped:
        assert time.monotonic() < deadline, "the child was never reaped"
        time.sleep(0.01)


def _drain(child: ForkedChild) -> list[object]:
    out = []
    while (frame := child.get(timeout=60)) is not END:
        out.append(frame)
    return out


def test_frames_arrive_in_order_then_the_end():
    def work(send: Send) -> None:
        for i in range(5):
            send(("item", i, os.getpid()))

    child = ForkedChild.start(work)
    frames = _drain(child)
    assert [f[1] for f in frames] == [0, 1, 2, 3, 4]
    assert {f[2] for f in frames} == {child.pid} and child.pid != os.getpid()  # sent by the child
    assert child.get(timeout=0) is END  # and stays ended
    _wait_reaped(child)


def test_a_newer_preview_replaces_one_not_taken_yet():
    """Nobody takes frames while the child sends many previews and progress reports: the newest of each kind is kept,
    every other frame too."""
    def work(send: Send) -> None:
        send(("preview", 1))
        send(("stage", "a"))
        for i in range(2, 200):
            send(("preview", i))
            send(("progress", i))
        send(("stage", "b"))

    child = ForkedChild.start(work, replaces=lambda frame: frame[0] if frame[0] in ("preview", "progress") else None)
    _wait_reaped(child)  # everything was received before anything is taken
    assert child.pending() == 4
    assert _drain(child) == [("stage", "a"), ("preview", 199), ("progress", 199), ("stage", "b")]


def test_kill_ends_a_busy_child_at_once():
    def work(send: Send) -> None:
        send("started")
        time.sleep(120)
        send("never")

    child = ForkedChild.start(work)
    assert child.get(timeout=60) == "started"
    with pytest.raises(queue.Empty):
        child.get(timeout=0.05)  # still working
    child.kill()
    assert child.reaped
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)  # gone and reaped (no zombie left)
    assert child.get(timeout=60) is END


def test_a_failing_child_ends_quietly_after_what_it_sent():
    def work(send: Send) -> None:
        send("first")
        raise RuntimeError("boom")

    child = ForkedChild.start(work)
    assert _drain(child) == ["first"]
    _wait_reaped(child)
