"""Inputs with a huge number of distinct metric names (issue 21, "names that multiply"), built byte by byte.

Hostile inputs no training writes: hand-built bytes, in the exact formats of the real writers (a pimm train.log
``Train:`` line; TFRecord-framed ``Event`` protos with one ``simple_value`` each, as tensorboardX writes them).
Used by tests/test_many_names.py.
"""

from __future__ import annotations

import struct
from pathlib import Path

from crc32c import crc32c

_MASK_DELTA = 0xA282EAD8


def _masked(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _frame(payload: bytes) -> bytes:
    header = struct.pack("<Q", len(payload))
    return header + struct.pack("<I", _masked(crc32c(header))) + payload + struct.pack("<I", _masked(crc32c(payload)))


def _scalar_event(wall: float, step: int, tag: bytes, value: float) -> bytes:
    value_msg = b"\x0a" + _varint(len(tag)) + tag + b"\x15" + struct.pack("<f", value)  # Summary.Value tag, simple_value
    summary = b"\x0a" + _varint(len(value_msg)) + value_msg  # Summary.value
    return (b"\x09" + struct.pack("<d", wall) + b"\x10" + _varint(step)  # Event.wall_time, Event.step
            + b"\x2a" + _varint(len(summary)) + summary)  # Event.summary


def write_event_file(folder: Path, names: int, points_per_name: int = 1) -> Path:
    """``events.out.tfevents.*`` holding ``names`` distinct tags (``m0000000`` ...), each at steps 1..points."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.out.tfevents.1760000000.hostile-host.4242.0"
    version = b"\x09" + struct.pack("<d", 1_760_000_000.0) + b"\x1a\x0dbrain.Event:2"  # Event.file_version
    with open(path, "wb") as out:
        out.write(_frame(version))
        chunk = []
        for i in range(names * points_per_name):
            name, step = i % names, i // names + 1
            chunk.append(_frame(_scalar_event(1_760_000_000.0 + i * 1e-3, step, b"m%07d" % name, 0.5)))
            if len(chunk) >= 65536:
                out.write(b"".join(chunk))
                chunk = []
        out.write(b"".join(chunk))
    return path


def write_train_log(folder: Path, names: int, names_per_line: int = 100) -> Path:
    """A pimm E2 train.log whose ``Train:`` lines carry ``names`` distinct metric names in all."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train.log"
    lines = names // names_per_line
    with open(path, "w", encoding="ascii") as out:
        out.write("[2026-07-15 09:00:09,501 INFO train.py line 251] => Loading config ...\n")
        for line in range(lines):
            second = 10 + line // 1000
            stamp = f"2026-07-15 {9 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d},{line % 1000:03d}"
            terms = " ".join(f"m{line * names_per_line + k:07d}: 0.5" for k in range(names_per_line))
            out.write(f"[{stamp} INFO logging.py line 332] Train: [1/1][{line + 1}/{lines}] Data 0.006 (0.006) "
                      f"Batch 0.408 (0.415) Remain 00:00:29 loss: 1.7804 {terms}\n")
    return path
