"""A big train.log read by two processes: a forked child scans the next block while the reader works on this one.

Issue 23: a cold read of a 1 GB log spent about half its time in the per-block numpy work that needs nothing from
the reader's state: the block's newlines and ``Train: [`` hits, and the vectorised template scan (``_fast.scan``).
Here a child process reads the blocks (``_blocks.blocks``, the same cuts), does that work with the template of its
latest Train: lines, and sends each block's bytes and arrays through a pipe; the reader does everything else on
exactly those bytes. A scan is used only for a template equal to the one the reader's attempt uses (the scan is a
function of the block and the template alone), else the reader scans itself: the result is the one-process read's,
bit for bit. The child's writer thread keeps up to ``_AHEAD`` scanned blocks waiting (the pipe holds 1 MB), so the
child stays a few blocks ahead and holds a few blocks' memory.

Only for a big file (``MIN_BYTES``), on Linux, from a process with no other thread (a fork copies only the calling
thread; a lock another thread held would stay held in the child). A child that fails makes the read start again in
one process (``AheadFailed``); an OSError while it reads is raised where the one-process read would raise it.
"""

from __future__ import annotations

import fcntl
import io
import os
import pickle
import queue
import signal
import struct
import sys
import threading
from collections.abc import Generator
from typing import Any, BinaryIO, cast

import numpy as np

from . import _patterns as P
from ._blocks import LineStats, blocks
from ._fast import FastRows
from ._index import BlockContext

MIN_BYTES = 64 << 20
"""Files (from the read's start offset) smaller than this are read in one process (tests lower it)."""
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031
_LEN = struct.Struct("<Q")
_AHEAD = 2
"""Blocks the child may have scanned and not yet written (each a few MB of its memory)."""
_ROWS = ("starts", "ends", "epochs", "max_epochs", "iters", "ipes", "walls", "other_starts", "other_ends")


class AheadFailed(Exception):
    """The scanning child stopped without finishing (the read is done again in one process)."""


class Prescan:
    """What the child computed for one block."""

    __slots__ = ("newlines", "hits", "tail", "rows")

    def __init__(self, newlines: np.ndarray, hits: np.ndarray, tail: bytes | None, rows: FastRows | None) -> None:
        self.newlines, self.hits, self.tail, self.rows = newlines, hits, tail, rows

    def fill(self, ctx: BlockContext) -> None:
        """Give the block's context the arrays found, and the scan for the template it was made with."""
        ctx.preset(self.newlines, self.hits, self.tail, self.rows)


def usable(size_left: int) -> bool:
    """Whether a read of ``size_left`` bytes gets a scanning child."""
    return (size_left >= MIN_BYTES and sys.platform.startswith("linux") and hasattr(os, "fork")
            and threading.active_count() == 1)


def scanned_blocks(fh: BinaryIO, start_offset: int, size: int, stats: LineStats, block_bytes: int,
                   cap: int, ahead: bool = True) -> Generator[tuple[bytes, int, int, Prescan | None], None, None]:
    """``_blocks.blocks`` with each block's ``Prescan`` (None for every block when no child is used: ``ahead`` false
    or not ``usable``). ``stats`` is the child's at the end (or at an OSError, raised here as the one-process read
    raises it)."""
    if not (ahead and usable(size - start_offset)):
        for block, offset, real_end in blocks(fh, start_offset, size, stats, block_bytes, cap):
            yield block, offset, real_end, None
        return
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, _F_SETPIPE_SZ, _PIPE_BYTES)
    except OSError:
        pass  # the default pipe size only means smaller writes
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's Ctrl-C ends the read (and kills this)
            os.close(r)
            _keep_freed_memory()
            _child(fh, start_offset, size, stats, block_bytes, cap, w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    pipe = io.BufferedReader(io.FileIO(r, "rb", closefd=True), 1 << 16)  # big reads go straight into their buffer
    done = False
    try:
        while True:
            head = _receive(pipe)
            kind = head["k"]
            if kind == "b":
                block = pipe.read(head["n"])
                if len(block) != head["n"]:
                    raise AheadFailed("the scanning child stopped")
                arrays = [_payload(pipe, np.dtype(dt), n) for dt, n in head["a"]]
                rows = None
                if head["r"]:
                    named = dict(zip(_ROWS, arrays[2:2 + len(_ROWS)]))
                    rows = FastRows(arrays[1], named["starts"], named["epochs"], named["max_epochs"], named["iters"],
                                    named["ipes"], named["walls"], arrays[2 + len(_ROWS):], named["other_starts"],
                                    named["other_ends"])
                    rows.ends = named["ends"]
                yield block, head["o"], head["e"], Prescan(arrays[0], arrays[1], head["t"], rows)
                continue
            stats.long_lines, stats.long_line_count, stats.skipped_bytes, stats.partial_bytes = head["s"]
            if kind == "end":
                done = True
                return
            if kind == "os":
                done = True
                raise OSError(head["errno"], head["strerror"])
            raise AheadFailed(str(head.get("why")))
    finally:
        pipe.close()
        if not done:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass


def _child(fh: BinaryIO, start_offset: int, size: int, stats: LineStats, block_bytes: int, cap: int,
           w: int) -> None:
    """Read and scan every block, sending each (then the line stats) to the parent."""
    template: P.Template | None = None
    tail: bytes | None = None
    writer = _Writer(w)
    writer.start()

    def state() -> tuple[list[tuple[int, int]], int, int, int]:
        return list(stats.long_lines), stats.long_line_count, stats.skipped_bytes, stats.partial_bytes

    try:
        reads = cast(BinaryIO, _PositionalReads(fh.fileno()))
        for block, offset, real_end in blocks(reads, start_offset, size, stats, block_bytes, cap):
            ctx = BlockContext(block, 1)
            rows = ctx.fast_rows(template) if template is not None else None
            hits = ctx.hits
            if hits.size and (rows is None or rows.starts.size * 2 < hits.size):  # (another) template of this block
                m = P.GENERIC_TRAIN.search(block)
                fresh = P.build_template(m.group(7)) if m is not None and not m.group(2) else None
                if fresh is not None:
                    template, tail = fresh, m.group(7) if m is not None else None
                    rows = ctx.fast_rows(template)
            arrays = [ctx.newlines, hits]
            if rows is not None:
                arrays += [getattr(rows, name) for name in _ROWS] + list(rows.values)
            arrays = [np.ascontiguousarray(a) for a in arrays]
            head = {"k": "b", "o": offset, "e": real_end, "n": len(block), "t": tail if template is not None else None,
                    "r": rows is not None, "a": [(a.dtype.str, int(a.size)) for a in arrays]}
            writer.send(head, [memoryview(block)] + [a.view(np.uint8).data for a in arrays])
    except OSError as exc:
        writer.send({"k": "os", "errno": exc.errno, "strerror": exc.strerror, "s": state()}, [])
        writer.close()
        return
    except BaseException as exc:  # anything else: the parent reads alone
        writer.send({"k": "x", "why": f"{type(exc).__name__}: {exc}", "s": state()}, [])
        writer.close()
        raise
    writer.send({"k": "end", "s": state()}, [])
    writer.close()


class _Writer(threading.Thread):
    """The child's messages written in order by a thread of their own, up to ``_AHEAD`` of them waiting: the scan
    of the next blocks goes on while the reader has not yet taken one (the pipe itself holds at most 1 MB)."""

    def __init__(self, w: int) -> None:
        super().__init__(daemon=True)
        self.w = w
        self.queue: queue.Queue[tuple[dict[str, Any], list[memoryview]] | None] = queue.Queue(maxsize=_AHEAD)
        self.failed: OSError | None = None

    def run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            if self.failed is None:  # after a failure the rest is taken and dropped (the sender never blocks)
                try:
                    _send(self.w, *item)
                except OSError as exc:
                    self.failed = exc

    def send(self, head: dict[str, Any], payloads: list[memoryview]) -> None:
        if self.failed is not None:
            raise self.failed  # the parent is gone (a broken pipe)
        self.queue.put((head, payloads))

    def close(self) -> None:
        self.queue.put(None)
        self.join()
        if self.failed is not None:
            raise self.failed


class _PositionalReads(io.RawIOBase):
    """The child's reads of the file at its own position (``os.pread``): the descriptor's offset, which it shares with
    the parent's file object, is never moved, so the parent's later seek and read of the file's last bytes are right
    whatever that object buffered."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd, self.pos = fd, 0

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence != 0:
            raise io.UnsupportedOperation("only absolute positions")
        self.pos = offset
        return offset

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            raise io.UnsupportedOperation("reads of a given size only")
        data = os.pread(self.fd, size, self.pos)
        self.pos += len(data)
        return data


def _send(w: int, head: dict[str, Any], payloads: list[memoryview]) -> None:
    data = pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL)
    for piece in [memoryview(_LEN.pack(len(data)) + data), *payloads]:
        sent = 0
        while sent < piece.nbytes:
            sent += os.write(w, piece[sent:])


def _keep_freed_memory() -> None:
    """In the child: blocks and their arrays (a few MB each, one after another) reuse the heap's freed memory instead
    of fresh mappings, whose page faults cost it ~0.5 s of system time per GB (glibc ``mallopt``; elsewhere
    nothing). Only the child's own memory grows by it."""
    try:
        import ctypes

        mallopt = ctypes.CDLL("libc.so.6").mallopt
        mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD: malloc from the heap below 64 MB
        mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD: keep up to 256 MB freed at the heap's top
    except (OSError, AttributeError):
        pass


def _exactly(pipe: io.BufferedIOBase, view: memoryview) -> None:
    got = 0
    while got < view.nbytes:
        n = pipe.readinto(view[got:])
        if not n:
            raise AheadFailed("the scanning child stopped")
        got += n


def _receive(pipe: io.BufferedIOBase) -> dict[str, Any]:
    size = bytearray(_LEN.size)
    _exactly(pipe, memoryview(size))
    data = bytearray(_LEN.unpack(size)[0])
    _exactly(pipe, memoryview(data))
    head: dict[str, Any] = pickle.loads(data)
    return head


def _payload(pipe: io.BufferedIOBase, dtype: Any, count: int) -> np.ndarray:
    out = np.empty(count, dtype=dtype)
    if count:
        _exactly(pipe, out.view(np.uint8).data)
    return out
