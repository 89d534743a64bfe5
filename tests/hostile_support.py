"""Run the CLI on a hostile input in a fresh process, with a time ceiling and a memory ceiling.

The process gets a hard address-space limit (so a regression fails the test instead of swapping the
machine) and its peak resident memory is its own high-water mark (``VmHWM``, written at exit by a small
``runpy`` wrapper: ``wait4``'s ``ru_maxrss`` of a forked child also counts the pages of the parent it was forked
from, so a large pytest process made every child look large); ``-P`` keeps the cwd (which may be a hostile run)
off ``sys.path``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADDRESS_SPACE_LIMIT = 3 * 1024**3
"""Hard cap on virtual memory (imports alone reserve several hundred MB of address space)."""


PEAK_KIB = "int(next(_l.split()[1] for _l in open('/proc/self/status') if _l.startswith('VmHWM:')))"
"""A Python expression for a child script: that process's own peak resident memory in KiB (``VmHWM``; see the
module doc for why not ``ru_maxrss``). Every fresh-process memory ceiling in the tests reads it."""


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    max_rss_mb: float
    seconds: float


PEAK_WRAPPER = (
    "import atexit, os, runpy, sys\n"
    "def _peak():\n"
    "    with open('/proc/self/status') as status, open(os.environ['HOSTILE_PEAK_FILE'], 'w') as out:\n"
    "        out.write(next(line.split()[1] for line in status if line.startswith('VmHWM:')))\n"
    "atexit.register(_peak)\n"
    "sys.argv = [sys.argv[1]] + sys.argv[2:]\n"
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
)
"""``python -m MODULE ARGS`` as ``python -c PEAK_WRAPPER MODULE ARGS``: same ``sys.path`` rules (``-c`` and ``-m``
both put the cwd first unless ``-P``), plus the process's own peak RSS in KiB written at exit."""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 60, python_flags: tuple[str, ...] = ("-P",),
            module: str = "pimm_inspect") -> Outcome:
    """``python -P -m pimm_inspect ARGS`` in ``cwd``; returns output, peak RSS (MB, from ``wait4``) and wall time."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(REPO),
               NO_COLOR="1", COLUMNS="160")
    peak = tempfile.NamedTemporaryFile("w+", delete=False)
    peak.close()
    env["HOSTILE_PEAK_FILE"] = peak.name
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, *python_flags, "-c", PEAK_WRAPPER, module, *args], cwd=cwd, env=env,
                                stdout=out, stderr=err, text=True, preexec_fn=_limit)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if seconds >= timeout:
        raise AssertionError(f"{' '.join(args)}: killed after {timeout} s\n{stderr[-2000:]}")
    try:
        peak_kib = float(Path(peak.name).read_text() or "nan")
    except (OSError, ValueError):
        peak_kib = float("nan")  # killed before exit: the time ceiling above has already failed the test
    finally:
        os.unlink(peak.name)
    del usage
    return Outcome(proc.returncode, stdout, stderr, peak_kib / 1024, seconds)


HOSTILE = REPO / "tests" / "data" / "hostile"
RUNS = REPO / "fixtures" / "runs"


def wandb_folder(parent: Path, run_id: str, config: dict, metadata: dict | None = None) -> Path:
    """A W&B offline run folder whose ``.wandb`` log holds a run record and one config record (real protobufs)."""
    import json

    from wandb.proto import wandb_internal_pb2 as pb

    from tests.wandb_support import frame_records

    folder = parent / f"offline-run-20260101_000000-{run_id}"
    folder.mkdir(parents=True)
    run = pb.Record()
    run.run.run_id, run.run.project = run_id, "hostile"
    cfg = pb.Record()
    for key, value in config.items():
        cfg.config.update.add(key=key, value_json=value if isinstance(value, str) else json.dumps(value))
    (folder / f"run-{run_id}.wandb").write_bytes(frame_records([run.SerializeToString(), cfg.SerializeToString()]))
    if metadata is not None:
        (folder / "files").mkdir()
        (folder / "files" / "wandb-metadata.json").write_text(json.dumps(metadata))
    return folder


# Token-shaped fakes are put together here, not committed as literals (secret scanners would stop the push).
FAKE_HF_TOKEN = "hf_" + "Q" * 34
FAKE_PEM_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE"
FAKE_PEM = ("-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + FAKE_PEM_BODY + "bm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
            "QyNTUxOQAAACBSb2Y3ZmFrZWtleWZha2VrZXlmYWtla2V5ZmFrZWtleQAAAJgAAAAAAAAA\n-----END OPENSSH " + "PRIVATE KEY-----\n")


def _planted(text: str, as_json: bool) -> str:
    """Fill the placeholders of a committed hostile file (JSON strings escaped where needed)."""
    import json

    pem = json.dumps(FAKE_PEM)[1:-1] if as_json else FAKE_PEM
    return text.replace("@@HF_TOKEN@@", FAKE_HF_TOKEN).replace("@@PEM_BODY@@", FAKE_PEM_BODY).replace("@@PEM@@", pem)


def leaky_run(tmp_path: Path) -> Path:
    """The crashed fixture run with every leak of issue 14 planted (tests/data/hostile/secrets)."""
    import json
    import shutil

    src = HOSTILE / "secrets"
    run = tmp_path / "leak"
    shutil.copytree(RUNS / "e2_crashed", run, symlinks=True)
    for name in ("run_metadata.json", "resolved_config.json", "config.py"):
        (run / name).write_text(_planted((src / name).read_text(), name.endswith(".json")))
    with open(run / "train.log", "a", encoding="utf-8") as log:
        log.write((src / "train_tail.log").read_text(encoding="utf-8"))
    wandb_folder(run / "wandb", "leak0001", json.loads((src / "wandb_config.json").read_text()),
                 json.loads((src / "wandb-metadata.json").read_text()))
    shutil.copy(src / "wandb_settings", run / "wandb" / "settings")
    return run


def planted_secrets() -> dict[str, str]:
    import json

    return json.loads(_planted((HOSTILE / "secrets" / "expected_secrets.json").read_text(), True))
