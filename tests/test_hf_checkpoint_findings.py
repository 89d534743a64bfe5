"""An HF checkpoint-N folder that lacks files gets one ``checkpoint.incomplete`` finding, saying what is missing and
what ``resume_from_checkpoint`` does without it (claims round five: each folder got two, the second a run-level
"N Trainer checkpoint(s) are missing files" saying every one of them would fail).

Fixture: fixtures/runs/hf_clean (the real HF Trainer, fixtures/gen_hf.py); files are deleted from a copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli

CLEAN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "hf_clean"


def _damaged(tmp_path: Path) -> Path:
    run = tmp_path / "hf_clean"
    shutil.copytree(CLEAN, run)
    (run / "checkpoint-10" / "model.safetensors").unlink()  # no weights: a resume fails
    (run / "checkpoint-20" / "optimizer.pt").unlink()  # optimizer and scheduler start afresh
    (run / "checkpoint-30" / "rng_state.pth").unlink()
    (run / "checkpoint-30" / "trainer_state.json").unlink()  # restarts at step 0; its save may have been cut
    return run


def test_one_finding_per_checkpoint_folder_with_both_facts(tmp_path):
    run = pimm_inspect.load_run(_damaged(tmp_path))
    incomplete = [f for f in run.findings if f.code == "checkpoint.incomplete"]
    # Before: 4 findings, three from the HF reader and one naming all three folders.
    assert sorted(f.paths for f in incomplete) == [("checkpoint-10",), ("checkpoint-20",), ("checkpoint-30",)]
    by = {f.paths[0]: f for f in incomplete}
    assert "missing model.safetensors" in by["checkpoint-10"].message
    assert by["checkpoint-10"].explanation.startswith("Resuming from it fails (no readable weights")
    assert "missing optimizer.pt" in by["checkpoint-20"].message
    assert ("the optimizer and scheduler start afresh" in by["checkpoint-20"].explanation
            and "fails" not in by["checkpoint-20"].explanation)
    assert "Its save ran to its end" in by["checkpoint-20"].explanation  # its trainer_state.json is there
    assert "missing trainer_state.json, rng_state.pth" in by["checkpoint-30"].message
    assert "restarts at step 0" in by["checkpoint-30"].explanation
    assert "the random state is not restored" in by["checkpoint-30"].explanation
    assert "The save was interrupted, or files were deleted" in by["checkpoint-30"].explanation


def test_check_json_lists_each_folder_once(tmp_path):
    done = CliRunner().invoke(cli, ["check", "--json", str(_damaged(tmp_path))])
    doc = json.loads(done.stdout)
    findings = doc["runs"][0]["findings"] if "runs" in doc else doc["findings"]
    named = [p for f in findings if f["code"] == "checkpoint.incomplete" for p in f["paths"]]
    assert sorted(named) == ["checkpoint-10", "checkpoint-20", "checkpoint-30"]


def test_files_emptied_after_the_save_are_named_as_empty(tmp_path):
    """The public Hristo-Karagyozov/large-language-models results/ ("no saved models, just the necessary precious
    files"): every checkpoint's weights, optimizer, scheduler and RNG state are 0 bytes beside an intact
    trainer_state.json. It was said "a weights file is damaged", naming none of them."""
    run_dir = tmp_path / "hf_clean"
    shutil.copytree(CLEAN, run_dir)
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (run_dir / "checkpoint-20" / name).write_bytes(b"")
    (run_dir / "checkpoint-30" / "optimizer.pt").write_bytes(b"")
    by = {f.paths[0]: f for f in pimm_inspect.load_run(run_dir).findings if f.code == "checkpoint.incomplete"}
    assert set(by) == {"checkpoint-20", "checkpoint-30"}
    assert by["checkpoint-20"].message == (
        "checkpoint-20 is incomplete: empty (0 bytes): model.safetensors, optimizer.pt, rng_state.pth, scheduler.pt; "
        "its trainer_state.json, which the Trainer writes after the weights and optimizer, is there: the save finished "
        "and these files were emptied since")
    assert by["checkpoint-20"].explanation.startswith("Resuming from it fails: loading the empty model.safetensors")
    assert by["checkpoint-30"].explanation.startswith("Resuming from it fails: torch.load raises on the empty "
                                                      "optimizer.pt.")


def test_an_adapter_checkpoint_without_its_weights_names_the_adapter_file(tmp_path):
    """A PEFT adapter checkpoint (adapter_config.json) saves adapter_model.safetensors; the public
    SecurityLab-UCD/UniTSyn checkpoints lacked it and were said to miss model.safetensors."""
    run_dir = tmp_path / "hf_clean"
    shutil.copytree(CLEAN, run_dir)
    folder = run_dir / "checkpoint-20"
    (folder / "model.safetensors").unlink()
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    (finding,) = [f for f in pimm_inspect.load_run(run_dir).findings if f.code == "checkpoint.incomplete"]
    assert finding.message.startswith("checkpoint-20 is incomplete: missing adapter_model.safetensors;")
    assert finding.explanation.startswith("Resuming from it fails (no readable weights")
