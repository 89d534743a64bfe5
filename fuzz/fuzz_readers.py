"""Coverage-guided fuzzing of the binary readers with atheris (libFuzzer for Python).

Run by hand, not in CI (see fuzz/README.md):

    pip install atheris
    python fuzz/fuzz_readers.py tfrecord fuzz/corpus/tfrecord -max_total_time=600 -rss_limit_mb=2048 -timeout=20

Targets: ``tfrecord`` (TensorBoard event files, with and without CRC checks), ``wandb`` (the ``.wandb``
transaction log, through the whole W&B folder reader), ``wandb-records`` (the same, structure-aware: one record payload is mutated and the log re-framed with
valid CRCs, so the record decoder is reached), ``pickle`` (the allow-listing unpickler and
``to_plain``), ``checkpoint`` (zip / legacy torch files through the checkpoint reader). A target must never
raise, never run code named by its input, and stay within the RSS limit; libFuzzer saves any input that
breaks this as ``crash-*`` / ``oom-*`` / ``timeout-*`` for a regression test in ``tests/``.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.wandb_support
from tests.wandb_support import frame_records  # noqa: E402  (the test-side .wandb writer)

with atheris.instrument_imports():
    from pimm_inspect.sources.checkpoint import read_checkpoint_file
    from pimm_inspect.sources.safe_pickle import safe_loads, to_plain
    from pimm_inspect.sources.tb_events import _read_buffer
    from pimm_inspect.sources._wandb_framing import FramingState, iter_records
    from pimm_inspect.sources.wandb_local import read_wandb_run

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


def fuzz_pickle(data: bytes) -> None:
    result, _ = safe_loads(data)
    to_plain(result.value)


def fuzz_checkpoint(data: bytes) -> None:
    path = SCRATCH / "model_last.pth"
    path.write_bytes(data)
    read_checkpoint_file(path, "model/model_last.pth")


TARGETS = {"tfrecord": fuzz_tfrecord, "wandb": fuzz_wandb, "wandb-records": fuzz_wandb, "pickle": fuzz_pickle,
           "checkpoint": fuzz_checkpoint}
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
