"""Interesting records of a train.log block: what they mean, and events kept in file order.

A record is a prefixed line plus its continuation lines. WARNING/ERROR/CRITICAL records
become events with their whole text (head and tail kept, the middle of a huge one
counted); a record still open at a block end takes the next block's leading
continuation lines. The functions act on the reader (``reader._Reader``) they are given.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import _patterns as P

if TYPE_CHECKING:
    from ._segments import SegmentState
    from .reader import _Reader

MAX_MESSAGE_BYTES = 256 * 1024
"""Event messages longer than this keep their head and the last 4 KiB."""


def record(reader: _Reader, block: bytes, ls: int, line_end: int, pm: re.Match[bytes], line_no: int, delta: int) -> None:
    """Interpret one interesting record (first line in ``block[pm.end():line_end]``)."""
    ts = pm.group(1).decode()
    level = pm.group(2).decode()
    first = block[pm.end():min(line_end, pm.end() + MAX_MESSAGE_BYTES)]
    text = first.decode("utf-8", "replace")
    if text.startswith("=> Loading config"):
        reader.boundary(block, ls, delta, line_no, ts, header=True)
    seg = reader.seg(line_no, delta + ls)
    if seg.started_at is None:
        seg.started_at = ts
    kind = seg.interpret(text, first, ts, line_no, reader)
    if level in ("WARNING", "ERROR", "CRITICAL"):
        if level == "WARNING":
            seg.warnings += 1
        nxt = P.RECORD_START.search(block, line_end)
        end = nxt.start() if nxt is not None else len(block) - 1
        rec = new_event(reader, "warning" if level == "WARNING" else "error", level, ts, line_no, seg)
        append_text(rec, block[pm.end():end])
        if nxt is None:
            reader.open_rec = rec
        else:
            finish_record(reader, rec)
    elif kind is not None:  # a one-line INFO/DEBUG record: its message is its first line (``record_text``)
        reader.events.append({"kind": kind, "level": level, "ts": ts, "line": line_no, "seg": seg,
                              "step": seg.last_g, "message": text})


def new_event(reader: _Reader, kind: str, level: str, ts: str, line_no: int, seg: SegmentState) -> dict[str, Any]:
    """A mutable event record, kept in file order."""
    rec: dict[str, Any] = {"kind": kind, "level": level, "ts": ts, "line": line_no, "seg": seg,
           "step": seg.last_g, "head": bytearray(), "tail": b"", "size": 0}
    reader.events.append(rec)
    return rec


def continue_record(reader: _Reader, block: bytes) -> None:
    """Append this block's leading continuation lines to a record left open by the last block."""
    if reader.open_rec is None:
        return
    nxt = P.RECORD_START.search(block)
    end = nxt.start() if nxt is not None else len(block) - 1
    append_text(reader.open_rec, block[:end])
    if nxt is not None:
        finish_record(reader, reader.open_rec)


def finish_record(reader: _Reader, rec: dict[str, Any]) -> None:
    """Complete a WARNING/ERROR record: classify tracebacks and mark the crash."""
    if rec is reader.open_rec:
        reader.open_rec = None
    text = record_text(rec)
    rec["message"] = text
    if rec["level"] in ("ERROR", "CRITICAL") and "Traceback (most recent call last)" in text:
        rec["kind"] = "traceback"
        lines = [ln for ln in rec["tail"].decode("utf-8", "replace").splitlines() if ln.strip()]
        rec["seg"].mark_end("crashed", lines[-1].strip() if lines else None)


def append_text(rec: dict[str, Any], chunk: bytes) -> None:
    """Add text to a record, keeping at most MAX_MESSAGE_BYTES of head and 4 KiB of tail."""
    room = MAX_MESSAGE_BYTES - len(rec["head"])
    if room > 0:
        rec["head"] += chunk[:room]
    rec["tail"] = (rec["tail"] + chunk[-4096:])[-4096:]
    rec["size"] += len(chunk)


def record_text(rec: dict[str, Any]) -> str:
    """The record's message, with an omission note when it was too long to keep."""
    head = bytes(rec["head"])
    if rec["size"] > len(head):
        head += b"\n... [%d bytes omitted] ...\n" % (rec["size"] - len(head) - len(rec["tail"])) + rec["tail"]
    return head.decode("utf-8", "replace").rstrip("\n")
