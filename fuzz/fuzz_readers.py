"""Coverage-guided fuzzing of the binary readers with atheris (libFuzzer for Python).

Run by hand, not in CI (see fuzz/README.md):

    pip install atheris
    python fuzz/fuzz_readers.py tfrecord fuzz/corpus/tfrecord -max_total_time=600 -rss_limit_mb=2048 -timeout=20

Targets: ``tfrecord`` (TensorBoard event files, with and without CRC checks), ``wandb`` (the ``.wandb``
transaction log, through the whole W&B folder reader), ``wandb-records`` (the same, structure-aware: one record payload is mutated and the log re-framed with
valid CRCs, so the record decoder is reached), ``pickle`` (the allow-listing unpickler and
``to_plain``, whose result must print as JSON), ``checkpoint`` (zip / legacy torch files through the
checkpoint reader), ``zip-member`` (one zip member of any compression method and declared size, inflated
by the bounded reader), ``dcp`` (a DCP ``.metadata`` inside a ``model/`` folder whose valid sibling must
always be listed), ``trainlog-long-lines``
(the train.log reader on a log whose lines are the input repeated up to 2 MiB, so every line regex meets long runs
of non-space characters; it fails if reading takes longer than a linear budget). The pickle and checkpoint
targets also check that no stand-in shared by later files was changed. ``terminal`` puts the input, as text,
into every printed field of a run and fails if any control character but Rich's own styling reaches the output. A target must never raise, never run code named by its input, and stay within the RSS limit; libFuzzer saves any input that
breaks this as ``crash-*`` / ``oom-*`` / ``timeout-*`` for a regression test in ``tests/``.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import struct
import sys
import tempfile
import zipfile
import time
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.wandb_support
from tests.wandb_support import frame_records  # noqa: E402  (the test-side .wandb writer)

with atheris.instrument_imports():
    from pimm_inspect.sources.checkpoint import _stand_ins
    from pimm_inspect.sources.checkpoint._zip_member import MemberError, read_member
    from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file, read_model_dir
    from pimm_inspect.sources.train_log.reader import read_train_log
    from pimm_inspect.sources.checkpoint.safe_pickle import safe_loads, to_plain
    from pimm_inspect.sources.tensorboard.reader import _read_buffer
    from pimm_inspect.sources.wandb._framing import FramingState, iter_records
    from pimm_inspect.sources.wandb.reader import read_wandb_run

SCRATCH = Path(tempfile.mkdtemp(prefix="pimm-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
WANDB_DIR = SCRATCH / "run-20260101_000000-fuzz0001"
WANDB_DIR.mkdir()


def fuzz_tfrecord(data: bytes) -> None:
    check_crc = not data or data[0] & 1 == 0
    _read_buffer(data, len(data), 0, "events.out.tfevents.1.host", check_crc)


def fuzz_wandb(data: bytes) -> None:
    (WANDB_DIR / "run-fuzz0001.wandb").write_bytes(data)
    read_wandb_run(WANDB_DIR, "wandb/run-20260101_000000-fuzz0001")


def mutate_wandb_records(data: bytes, max_size: int, seed: int) -> bytes:
    """Structure-aware: mutate one record payload (or drop/duplicate one), then re-frame with valid CRCs."""
    payloads = [payload for _, payload in iter_records(io.BytesIO(data), FramingState("fuzz"))]
    if not payloads:
        return atheris.Mutate(data, max_size)
    rng = random.Random(seed)
    i = rng.randrange(len(payloads))
    action = rng.randrange(10)
    if action == 0:
        del payloads[i]
    elif action == 1:
        payloads.insert(rng.randrange(len(payloads) + 1), payloads[i])
    else:
        payloads[i] = atheris.Mutate(payloads[i], len(payloads[i]) + 64)
    return frame_records(payloads)[:max(max_size, 64)]


def _stand_in_state() -> list:
    """Everything a pickle could try to change on the shared stand-ins (class dicts, function defaults)."""
    return [(dict(vars(obj)) if hasattr(obj, "__dict__") else None, getattr(obj, "__defaults__", None))
            for obj in _stand_ins._FIXED.values()]


STAND_INS = _stand_in_state()


def _check_stand_ins() -> None:
    if _stand_in_state() != STAND_INS:
        raise AssertionError("an input changed a shared stand-in (cross-file poisoning)")


def fuzz_pickle(data: bytes) -> None:
    result, _ = safe_loads(data)
    json.dumps(to_plain(result.value), default=str)  # printable: no huge int, no cycle
    _check_stand_ins()


def fuzz_checkpoint(data: bytes) -> None:
    path = SCRATCH / "model_last.pth"
    path.write_bytes(data)
    read_checkpoint_file(path, "model/model_last.pth")
    _check_stand_ins()


def fuzz_zip_member(data: bytes) -> None:
    """Byte 0 picks the method, bytes 1-4 the declared size, the rest is the raw member data."""
    if len(data) < 5:
        return
    method = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)[data[0] % 4]
    declared = struct.unpack("<I", data[1:5])[0] % (1 << 24)
    info = zipfile.ZipInfo("archive/data.pkl")
    info.compress_type, info.file_size, info.compress_size = method, declared, len(data) - 5
    info.header_offset, info.CRC = 0, 0
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0, 0, len(data) - 5, declared, 16, 0)
    try:
        out = read_member(io.BytesIO(local + b"archive/data.pkl" + data[5:]), info, 1 << 20)
    except MemberError:
        return
    if len(out) != declared:
        raise AssertionError("read_member returned a size other than the declared one")


MODEL_DIR = SCRATCH / "dcp-run" / "model"
(MODEL_DIR / "last" / "trainer.dcp").mkdir(parents=True)
_WEIGHTS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "weights_only.pth"
shutil.copy(_WEIGHTS, MODEL_DIR / "model_best.pth")


def fuzz_dcp(data: bytes) -> None:
    (MODEL_DIR / "last" / "trainer.dcp" / ".metadata").write_bytes(data)
    result = read_model_dir(MODEL_DIR, MODEL_DIR.parent)
    if "model/model_best.pth" not in {c.path for c in result.checkpoints}:
        raise AssertionError("a bad DCP .metadata hid its sibling checkpoint")
    _check_stand_ins()


TRAIN_HEAD = b"[2026-07-15 09:00:16,390 INFO logging.py line 332] "
TRAIN_LINE = TRAIN_HEAD + (b"Train: [1/3][%d/25] Data 0.006 (0.006) Batch 0.408 (0.415) Remain 00:00:29 "
                           b"loss: 1.7804 avg_pts: 48189.2500 Lr: 0.00177\n")
LONG_PREFIXES = (TRAIN_HEAD + b"Train: [1/3][7/25] ", TRAIN_HEAD + b"Train: [1/3][7/25] loss: 1.0 ",
                 TRAIN_HEAD + b"Val result: mIoU/mAcc/allAcc ", TRAIN_HEAD, b"", TRAIN_HEAD + b"Saving checkpoint to: ")
LINEAR_BUDGET_S_PER_MIB = 2.0
"""A regex that is linear in the line reads a MiB in well under this (the quadratic TAIL_TOKEN took minutes)."""


def long_line_log(data: bytes) -> bytes:
    """A train.log with ordinary Train: lines around lines made of ``data`` repeated to 1 KiB - 2 MiB.

    Byte 0 picks the line prefix (a Train: head, a Val line, a bare record prefix, none), bytes 1-2 the length,
    byte 3 whether newlines in the filler are dropped (one long line) or kept (many long lines).
    """
    head, filler = data[:4].ljust(4, b"\0"), data[4:] or b"x:"
    prefix = LONG_PREFIXES[head[0] % len(LONG_PREFIXES)]
    length = 1024 + (int.from_bytes(head[1:3], "little") * 32) % (2 * 1024 * 1024)
    if head[3] & 1:
        filler = filler.replace(b"\n", b"")
        filler = filler or b"x:"
    body = (filler * (length // len(filler) + 1))[:length]
    normal = b"".join(TRAIN_LINE % i for i in (5, 10))
    return normal + prefix + body + b"\n" + normal


def fuzz_trainlog_long_lines(data: bytes) -> None:
    log = long_line_log(data)
    path = SCRATCH / "train.log"
    path.write_bytes(log)
    start = time.monotonic()
    read_train_log(path, "train.log")
    elapsed = time.monotonic() - start
    budget = 1.0 + LINEAR_BUDGET_S_PER_MIB * len(log) / 2**20
    if elapsed > budget:
        raise AssertionError(f"train.log reader took {elapsed:.1f} s on {len(log)} bytes of long lines "
                             f"(budget {budget:.1f} s): a line regex is super-linear")


def fuzz_terminal(data: bytes) -> None:
    """Any string from a run file, in every printed field of a run, reaches the terminal inert (no control
    character but Rich's own SGR styling), in colour and without."""
    from tests.terminal_oracle import foreign_controls, render_all, run_with

    text = data.decode("utf-8", "replace")
    for color_system in (None, "truecolor"):
        bad = foreign_controls(render_all(run_with(text), color_system), coloured=color_system is not None)
        if bad:
            raise AssertionError(f"control characters from data reached the terminal: {bad[:3]}")


TARGETS = {"tfrecord": fuzz_tfrecord, "wandb": fuzz_wandb, "wandb-records": fuzz_wandb, "pickle": fuzz_pickle,
           "checkpoint": fuzz_checkpoint, "zip-member": fuzz_zip_member, "dcp": fuzz_dcp,
           "trainlog-long-lines": fuzz_trainlog_long_lines, "terminal": fuzz_terminal}
MUTATORS = {"wandb-records": mutate_wandb_records}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(TARGETS)}}} [CORPUS_DIR] [libFuzzer options]")
    name = sys.argv.pop(1)
    try:
        atheris.Setup(sys.argv, TARGETS[name], custom_mutator=MUTATORS.get(name))
        atheris.Fuzz()
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)


if __name__ == "__main__":
    main()
