"""HF Trainer facts that agree with what the run holds (issue 12): eval notes, source labels, declared intervals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.analysis._facts import source_kind
from pimm_inspect.cli.main import cli
from pimm_inspect.report.json_doc import run_notes

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_eval_metrics_only_in_tensorboard_are_not_called_missing():
    run = pimm_inspect.load_run(RUNS / "hf_killed")
    notes = run_notes(run)
    assert not any("no eval_* metrics were logged" in n for n in notes)
    note = next(n for n in notes if n.startswith("eval metrics"))
    assert "eval/loss" in note and "step(s) 10" in note and "only in TensorBoard" in note
    assert "checkpoint-8/trainer_state.json" in note
    # What the note says is what the run holds: eval/loss at step 10 in the event file, not in the state.
    tb = [s for s in run.series_for("eval/loss") if "tfevents" in s.source]
    assert [int(x) for s in tb for x in s.steps] == [10]
    assert not [s for s in run.series_for("eval/loss") if s.source.endswith("trainer_state.json")]
    # A run whose state holds its evaluations keeps the schedule note.
    assert any(n.startswith("eval metrics (eval/loss") and "every 10 steps (eval_steps=10)" in n
               for n in run_notes(pimm_inspect.load_run(RUNS / "hf_clean")))


def test_checkpoint_state_scalars_are_labelled_as_trainer_state():
    run = pimm_inspect.load_run(RUNS / "hf_killed")
    state = [s for s in run.series if s.source == "checkpoint-8/trainer_state.json"]
    assert state and {source_kind(run, s) for s in state} == {"hf_trainer"}
    assert "checkpoint-8/trainer_state.json" in {s.path for s in run.sources}
    frame = run.scalars(tags="train/loss", all_sources=True)
    kinds = {source_kind(run, s) for s in run.series_for("train/loss")}
    assert kinds == {"hf_trainer", "tb_events"} and "train_log" not in kinds
    assert set(frame["source"]) == {s.source for s in run.series_for("train/loss")}


def _strip_declared(root: Path) -> None:
    """What an older transformers wrote: trainer_state.json without logging/eval/save_steps."""
    for path in root.rglob("trainer_state.json"):
        data = json.loads(path.read_text())
        for key in ("logging_steps", "eval_steps", "save_steps"):
            data.pop(key, None)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")  # HF's own json.dumps layout


def test_older_state_takes_intervals_from_training_args(tmp_path):
    root = tmp_path / "hf_old"
    shutil.copytree(RUNS / "hf_clean", root)
    _strip_declared(root)
    notes = run_notes(pimm_inspect.load_run(root))
    assert not any("=None" in n for n in notes)
    loss = next(n for n in notes if n.startswith("loss is logged"))
    assert "logging_steps=5 in training_args.bin" in loss
    assert any("eval_steps=10 in training_args.bin" in n for n in notes)
    for path in root.rglob("training_args.bin"):
        path.unlink()
    notes = run_notes(pimm_inspect.load_run(root))
    assert not any("=None" in n for n in notes)
    assert any("logging_steps not recorded" in n for n in notes)


def test_show_json_notes_agree_for_the_killed_run():
    doc = json.loads(CliRunner().invoke(cli, ["show", "--json", str(RUNS / "hf_killed")]).stdout)["runs"][0]
    assert doc["scalars"]["eval/loss"] == {"points": 1, "first_step": 10, "last_step": 10, "source": "tb_events"}
    assert any("only in TensorBoard" in n for n in doc["notes"])
