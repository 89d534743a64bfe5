"""A big event file costs its points once: the reader's peak memory (in a fresh process, what Python and numpy
allocate during the read, by tracemalloc: the same on every machine) is the decoded columns plus one window, not a
64 MiB window with its buckets and a second copy of every window's columns made at the end."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

REPO = Path(__file__).resolve().parents[1]
TAGS = ("train_batch/loss", "params/lr", "val/mIoU", "val/mAcc", "val/loss", "grad/norm", "lr", "epoch")
"""Mixed name lengths, three of one length (a bucket of several tags)."""
STEPS = 2_500
COPIES = 40
"""The file: 20,000 records written once, then repeated: 800,000 points (19 MB of columns), 37 MB."""


def _record(payload: bytes) -> bytes:
    header = struct.pack("<Q", len(payload))
    return header + struct.pack("<I", masked_crc32c(header)) + payload + struct.pack("<I", masked_crc32c(payload))


def _event_file(folder: Path) -> Path:
    rng = np.random.default_rng(7)
    chunk = b"".join(
        _record(event_pb2.Event(wall_time=1.7e9 + step * 0.25, step=step, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=tag, simple_value=float(rng.standard_normal()))])).SerializeToString())
        for step in range(STEPS) for tag in TAGS)
    path = folder / "events.out.tfevents.1700000000.memory"
    with open(path, "wb") as out:
        for _ in range(COPIES):
            out.write(chunk)
    return path


CHILD = r"""
import json, sys, tracemalloc
import numpy
from pimm_inspect.sources.tensorboard import reader
if len(sys.argv) > 2:
    reader.WINDOW_BYTES = int(sys.argv[2])
tracemalloc.start()  # numpy reports its arrays' memory too
result = reader.read_event_file(sys.argv[1], "events")
peak = tracemalloc.get_traced_memory()[1]
columns = sum(s.steps.nbytes + s.values.nbytes + s.wall_times_s.nbytes for s in result.series.values())
print(json.dumps({"above": peak, "columns": columns,
                  "points": {tag: int(s.steps.shape[0]) for tag, s in result.series.items()},
                  "step_sum": int(sum(int(s.steps.sum()) for s in result.series.values()))}))
"""


def test_the_peak_is_the_points_once_plus_a_window(tmp_path: Path) -> None:
    path = _event_file(tmp_path)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=tmp_path, check=True)
    got = json.loads(done.stdout)
    assert got["points"] == {tag: STEPS * COPIES for tag in TAGS}
    assert got["step_sum"] == len(TAGS) * COPIES * STEPS * (STEPS - 1) // 2
    # 19 MB of columns: the old reader peaked at 175 MB (its 64 MiB window, the window's buckets and columns); this
    # one at 56 MB (the columns and one 8 MiB window's work).
    assert got["above"] < got["columns"] + 48 * 2**20, got
