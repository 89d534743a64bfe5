"""A hostile run for the terminal-output tests: every string a run file can carry holds control sequences and markup.

Built from the committed ``e2_crashed`` fixture (train.log with a traceback, run_metadata.json, checkpoints, an
event file) plus files written here with the real TensorBoard writer and a hand-built checkpoint zip (a pickle
naming an unsafe global and carrying a W&B run id), so ``ls``, ``show``, ``check``, ``curves``, ``config``,
``url`` and ``export`` all meet hostile data.
"""

from __future__ import annotations

import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OSC52 = "\x1b]52;c;cHduZWQ=\x1b\\"
"""Writes 'pwned' to the clipboard."""
TITLE = "\x1b]0;title\x07"
CSI = "\x1b[2J\x1b[38;5;199m"
DCS = "\x1bP1$qm\x1b\\"
C1 = "\x9b31m\x9d0;c1\x9c\x85"
MARKUP = "[bold red]R[/][link=https://evil.example]L[/link][/x]"
HOSTILE = OSC52 + TITLE + CSI + DCS + C1 + "\x07" + MARKUP
"""Every kind of control sequence (ESC, OSC, CSI, DCS, C1, BEL) and Rich markup, in one string."""
SHORT = "\x1b]0;t\x07\x9b2J\x1b[5m[bold red]B"
"""A shorter hostile piece for file and folder names (no ``/``, so no closing markup tag)."""

RUN_NAME = "run" + SHORT
TAG = "loss" + OSC52
MARKUP_TAG = "val/[/x][bold red]tag[/]"
WANDB_ID = "id" + TITLE + "[/x]"


def _torch_zip(data_pkl: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", data_pkl)
        archive.writestr("archive/byteorder", "little")
        archive.writestr("archive/version", "3\n")
    return buf.getvalue()


def _unsafe_pickle() -> bytes:
    """A protocol-2 dict with a W&B id, a step and a GLOBAL naming a hostile module/function (never called)."""
    body = pickle.dumps({"epoch": 1, "global_step": 30, "wandb_run_id": WANDB_ID, "note": None}, protocol=2)
    module = ("os" + SHORT).encode("utf-8")
    name = ("system" + SHORT).encode("utf-8")
    # The GLOBAL opcode replaces the last value (None) just before SETITEMS/STOP: reduce the global with ().
    call = b"c" + module + b"\n" + name + b"\n)R"
    index = body.rindex(b"N")
    return body[:index] + call + body[index + 1:]


def _append_events(event_file: Path, tags: list[str]) -> None:
    """Append scalars under ``tags`` (written by TensorBoard's own writer) to an existing event file."""
    import struct
    import tempfile

    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    with tempfile.TemporaryDirectory() as scratch:
        writer = EventFileWriter(scratch, max_queue_size=1000, flush_secs=3600)
        for step in range(1, 41):
            values = [summary_pb2.Summary.Value(tag=tag, simple_value=1.0 / step + i) for i, tag in enumerate(tags)]
            writer.add_event(event_pb2.Event(wall_time=1784293210.0 + step, step=step,
                                             summary=summary_pb2.Summary(value=values)))
        writer.close()
        (written,) = Path(scratch).glob("events.out.tfevents.*")
        data = written.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    records = data[8 + 4 + length + 4:]  # the writer's own file_version record is already in the file
    with open(event_file, "ab") as fh:
        fh.write(records)


def build(parent: Path, hostile: bool = True) -> Path:
    """The run under ``parent``; ``hostile=False`` builds the same run with harmless strings (the baseline)."""
    name = RUN_NAME if hostile else "run_plain"
    run = parent / name
    shutil.copytree(ROOT / "fixtures" / "runs" / "e2_crashed", run, symlinks=True)
    pick = (lambda bad, good: bad) if hostile else (lambda bad, good: good)
    meta_path = run / "run_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["host"] = pick("host" + HOSTILE, "host")
    meta["git"]["commit"] = pick("9f44d8" + HOSTILE, "9f44d8d4e895")
    meta["created_at"] = pick("2026-07-17" + HOSTILE, "2026-07-17T13:00:05+00:00")
    meta["launch_command"] = pick("pimm submit " + HOSTILE, "pimm submit x")
    meta_path.write_text(json.dumps(meta))
    log = run / "train.log"
    text = log.read_text()
    text = text.replace("self.run_step()", pick("self.run_step()" + HOSTILE, "self.run_step()"))
    text = text.replace("torch.OutOfMemoryError: CUDA", pick("torch.OutOfMemoryError: " + HOSTILE + " CUDA",
                                                             "torch.OutOfMemoryError: CUDA"))
    text = text.replace("avg_pts: 48282.7500 Lr: 0.00146",
                        pick("avg_pts: 48282.7500 Lr: 0.00146 [/x]: 0.5", "avg_pts: 48282.7500 Lr: 0.00146 x: 0.5"))
    log.write_text(text)
    (event_file,) = run.glob("events.out.tfevents.*")
    _append_events(event_file, [pick(TAG, "loss_plain"), pick(MARKUP_TAG, "val/tag_plain"), pick("b" + HOSTILE, "b_plain")])
    ckpt_name = pick("model_" + SHORT + ".pth", "model_plain.pth")
    (run / "model" / ckpt_name).write_bytes(_torch_zip(_unsafe_pickle() if hostile else
                                                       pickle.dumps({"epoch": 1, "global_step": 30,
                                                                     "wandb_run_id": "idplain"}, protocol=2)))
    config = run / "resolved_config.json"
    data = json.loads(config.read_text())
    data[pick("key" + SHORT, "key_plain")] = pick("value" + HOSTILE, "value_plain")
    config.write_text(json.dumps(data))
    return run
