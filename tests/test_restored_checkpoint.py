"""Each attempt carries the checkpoint it restored, run-relative, and every surface that lists attempts or
checkpoints says which attempts restarted from which checkpoint (and at which step)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.load.restored import restored_path
from pimm_inspect.model import CheckpointInfo

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _show(path: Path, *args: str) -> str:
    done = CliRunner().invoke(cli, ["show", str(path), *args])
    assert done.exit_code == 0, done.output
    return done.stdout


def test_both_requeues_restored_the_step_50_checkpoint():
    run = pimm_inspect.load_run(RUNS / "e2_requeued_twice")
    assert [(a.restored_checkpoint, a.restore_step) for a in run.attempts] == [
        (None, None), ("model/model_last.pth", 50), ("model/model_last.pth", 50)]
    assert any(ck.path == "model/model_last.pth" for ck in run.checkpoints)
    doc = json.loads(_show(RUNS / "e2_requeued_twice", "--json"))["runs"][0]
    assert [a["restored_checkpoint"] for a in doc["attempts"]] == [None, "model/model_last.pth", "model/model_last.pth"]
    last = next(ck for ck in doc["checkpoints"] if ck["path"] == "model/model_last.pth")
    assert last["restored_by"] == [{"attempt": 2, "step": 50}, {"attempt": 3, "step": 50}]
    assert last["global_step"] == 100  # the file holds step 100 now; the restores read it while it held 50
    assert [(r["first_step"], r["last_step"], r["copies"], r["attempts"]) for r in doc["replayed"]] == [
        (51, 75, 3, [1, 2, 3]), (76, 90, 2, [2, 3])]
    text = _show(RUNS / "e2_requeued_twice")
    assert text.count("model/model_last.pth @50") == 2 and "#2 #3 @50" in text


def test_hf_attempt_restored_checkpoint_n():
    run = pimm_inspect.load_run(RUNS / "hf_resumed")
    assert [(a.restored_checkpoint, a.restore_step) for a in run.attempts] == [(None, None), ("checkpoint-10", 10)]


def test_a_logged_path_is_made_run_relative():
    root = Path("/scratch/exp/panda/run1")
    checkpoints = [CheckpointInfo("model/model_last.pth", "legacy", "last", True),
                   CheckpointInfo("model/last", "standard", "last", True)]
    assert restored_path("/cluster/exp/panda/run1/model/model_last.pth", checkpoints, root, []) == "model/model_last.pth"
    assert restored_path("exp/panda/run1/model/last/", checkpoints, root, []) == "model/last"
    # Not among the run's checkpoints (deleted since): relative to the save path, else to the run.
    assert restored_path("exp/panda/run1/model/iter_50.pth", checkpoints, root, ["exp/panda/run1"]) == "model/iter_50.pth"
    assert restored_path("/scratch/exp/panda/run1/model/iter_50.pth", checkpoints, root, []) == "model/iter_50.pth"
    assert restored_path("/elsewhere/w.pth", checkpoints, root, []) == "/elsewhere/w.pth"
    assert restored_path(None, checkpoints, root, []) is None
