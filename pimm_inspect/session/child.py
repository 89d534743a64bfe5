"""A forked child process working for this one: it sends what it makes through a pipe as it goes, and is reaped or
killed by its parent (the one place the UI's prefetching children are forked, reaped and killed).

``ForkedChild.start(work)`` forks; the child runs ``work(send)`` and leaves with ``os._exit`` (no exit handler of the
parent's runs in it). The child's collector leaves what it inherited alone (``gc.freeze``: alive in the parent, so
no garbage of the child's) and runs, even where the parent paused it for its own start (``tui.start``). Each ``send(item)`` is a length-prefixed pickle: between our own two processes only, nothing
from a run directory is ever unpickled this way. A thread of the parent reads the frames as they come (so the child
never waits on a full pipe) into a buffer that ``get`` takes from; a frame for which ``replaces`` gives a key replaces
an older frame of that key still waiting there, so a slow consumer holds at most one of each (the newest preview, the
newest progress), not a growing queue.

No Textual here: the CLI forks before the UI's modules are imported.
"""

from __future__ import annotations

import gc
import os
import pickle
import queue
import signal
import struct
import threading
from collections import deque
from collections.abc import Callable, Hashable

_HEADER = struct.Struct("<Q")
END = None
"""What ``get`` returns once the child is gone and every frame it sent was taken (and on every call after)."""
Send = Callable[[object], None]
Replaces = Callable[[object], "Hashable | None"]
"""The key of a frame that only matters until a newer frame of the same key comes (None: every such frame matters)."""


class ForkedChild:
    """A forked process running ``work(send)``; its frames arrive through ``get``, in order."""

    def __init__(self, pid: int, read_end: int, name: str, replaces: Replaces | None) -> None:
        self.pid = pid
        self._replaces = replaces
        self._frames: deque[object] = deque()
        self._ended = False
        self._ready = threading.Condition()
        self._reaped = False
        self._reap_lock = threading.Lock()
        threading.Thread(target=self._receive, args=(read_end,), name=name, daemon=True).start()

    @staticmethod
    def possible() -> bool:
        """True where this process can fork safely: the platform forks and no other thread runs yet."""
        return hasattr(os, "fork") and threading.active_count() == 1

    @classmethod
    def start(cls, work: Callable[[Send], None], name: str = "pimm-inspect-child",
              replaces: Replaces | None = None) -> ForkedChild:
        """Fork a child running ``work(send)`` (the caller checked ``possible()``). An exception in ``work`` ends the
        child quietly: the parent sees the frames sent until then, then ``END``."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: work, send, and leave without running any exit handler of the parent's
            try:
                gc.freeze()
                gc.enable()
                os.close(read_end)
                with os.fdopen(write_end, "wb") as out:
                    def send(item: object) -> None:
                        data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                        out.write(_HEADER.pack(len(data)))
                        out.write(data)  # not header + data: that would copy a big pickle once more
                        out.flush()

                    work(send)
            finally:
                os._exit(0)
        os.close(write_end)
        return cls(pid, read_end, name, replaces)

    def _receive(self, read_end: int) -> None:
        """Read frames as they come; the end of the pipe (or a broken frame) ends them."""
        try:
            with os.fdopen(read_end, "rb") as pipe:
                while header := pipe.read(_HEADER.size):
                    if len(header) < _HEADER.size:
                        break
                    (size,) = _HEADER.unpack(header)
                    data = pipe.read(size)
                    if len(data) < size:
                        break
                    self._put(pickle.loads(data))
        except Exception:  # noqa: BLE001 - a broken pipe or frame ends the frames; the caller carries on without
            pass
        finally:
            with self._ready:
                self._ended = True
                self._ready.notify_all()
            self._reap()

    def _put(self, frame: object) -> None:
        with self._ready:
            replaces = self._replaces
            key = replaces(frame) if replaces is not None else None
            if replaces is not None and key is not None:
                stale = [f for f in self._frames if replaces(f) == key]
                for old in stale:  # at most one: each put removed the one before
                    self._frames.remove(old)
            self._frames.append(frame)
            self._ready.notify_all()

    def get(self, timeout: float | None = None) -> object:
        """The next frame, waiting at most ``timeout`` seconds (None: as long as it takes); ``END`` once the child is
        gone and nothing is left. Raises ``queue.Empty`` when the time ran out first."""
        with self._ready:
            if not self._ready.wait_for(lambda: self._frames or self._ended, timeout):
                raise queue.Empty
            return self._frames.popleft() if self._frames else END

    def pending(self) -> int:
        """Frames received and not taken yet."""
        with self._ready:
            return len(self._frames)

    def _reap(self) -> None:
        """Wait for the child (once; a second caller waits until the first is done, so the child is gone)."""
        with self._reap_lock:
            if self._reaped:
                return
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self._reaped = True

    def kill(self) -> None:
        """Stop the child now (nobody wants its work any more) and reap it."""
        if not self._reaped:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reap()

    @property
    def reaped(self) -> bool:
        """True once the child was waited for (it is gone)."""
        return self._reaped
