"""Inputs kept from fuzzing (fuzz/fuzz_readers.py) and hand-made look-alikes, replayed through their target.

Each file in tests/data/fuzz is named ``<target>-<what>-<id>``; it runs in a fresh process so its peak
resident memory can be checked: none of them may raise, and none may cost more than a few hundred MB.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile_support import PEAK_KIB

DATA = Path(__file__).resolve().parent / "data" / "fuzz"
KEPT = sorted(DATA.iterdir())

REPLAY = r"""
import json, resource, sys, tempfile
from pathlib import Path
target, path = sys.argv[1], Path(sys.argv[2])
data = path.read_bytes()
if target == "pickle":
    from pimm_inspect.sources.checkpoint.safe_pickle import safe_loads, to_plain
    result, _ = safe_loads(data)
    to_plain(result.value)
    outcome = {"ok": result.ok, "error": result.error}
elif target == "checkpoint":
    from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file
    read = read_checkpoint_file(path, "model/model_last.pth")
    outcome = {"codes": [f.code for f in read.findings]}
elif target == "tfrecord":
    from pimm_inspect.sources.tensorboard.reader import read_event_file
    result = read_event_file(path, "events.out.tfevents.1.host")
    outcome = {"codes": [f.code for f in result.findings]}
elif target == "wandb":
    from pimm_inspect.sources.wandb.reader import read_wandb_run
    folder = Path(tempfile.mkdtemp()) / "run-20260101_000000-fuzz0001"
    folder.mkdir()
    (folder / "run-fuzz0001.wandb").write_bytes(data)
    outcome = {"codes": [f.code for f in read_wandb_run(folder, "wandb/run").findings]}
outcome["max_rss_kib"] = PEAK_KIB_EXPR
print(json.dumps(outcome))
""".replace("PEAK_KIB_EXPR", PEAK_KIB)


def test_there_are_kept_inputs():
    assert {p.name.split("-")[0] for p in KEPT} >= {"pickle"}


@pytest.mark.parametrize("path", KEPT, ids=[p.name for p in KEPT])
def test_kept_input_is_harmless(path):
    target = path.name.split("-")[0]
    run = subprocess.run([sys.executable, "-c", REPLAY, target, str(path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    outcome = json.loads(run.stdout)
    assert outcome["max_rss_kib"] < 400 * 1024, outcome
    if target != "pickle":  # a damaged file is always named in a finding
        assert outcome["codes"], outcome
