"""The resume command of ``show``: the exact option that resumes from the checkpoint a resume would pick."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from click.testing import CliRunner

from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _show_json(path: Path) -> dict:
    result = CliRunner().invoke(cli, ["show", str(path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    return run


def test_pimm_resume_option_and_warning_for_a_newer_incomplete_checkpoint():
    resume = _show_json(RUNS / "e2_incomplete_checkpoint")["resume"]
    assert resume["option"] == "weight=exp/panda/semseg/semseg-incomplete/model/last.prev resume=True"
    assert (resume["checkpoint"], resume["step"], resume["tool"]) == ("model/last.prev", 50, "pimm")
    assert resume["newer_incomplete"] == ["model/last"]  # the g 75 publish that never finished
    assert "run_metadata.json cwd" in resume["path_base"] and "/particle-imaging-models" in resume["path_base"]
    text = CliRunner().invoke(cli, ["show", str(RUNS / "e2_incomplete_checkpoint")]).stdout
    assert "resume with: weight=exp/panda/semseg/semseg-incomplete/model/last.prev resume=True" in text
    assert "warning: model/last.prev is older than the incomplete model/last" in text


def test_no_warning_when_the_picked_checkpoint_is_the_newest():
    resume = _show_json(RUNS / "e2_rollback")["resume"]
    assert resume["option"] == "weight=exp/panda/semseg/semseg-rollback/model/last resume=True"
    assert resume["newer_incomplete"] == []
    assert "warning:" not in CliRunner().invoke(cli, ["show", str(RUNS / "e2_rollback")]).stdout


def test_hf_trainer_resume_from_checkpoint():
    resume = _show_json(RUNS / "hf_killed")["resume"]
    assert (resume["tool"], resume["option"]) == ("hf-trainer", "resume_from_checkpoint=hf_killed/checkpoint-8")
    assert "output_dir from checkpoint-8/training_args.bin" in resume["path_base"]


def test_no_resume_option_without_a_picked_checkpoint():
    assert _show_json(RUNS / "tb_plain" / "runs" / "baseline")["resume"] is None


def test_a_hostile_save_path_is_shell_quoted(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_exact_resume", run, symlinks=True)
    config = json.loads((run / "resolved_config.json").read_text())
    config["save_path"] = "exp/it's $(touch pwned)/run; rm -rf ~"
    (run / "resolved_config.json").write_text(json.dumps(config))
    option = _show_json(run)["resume"]["option"]
    # One word for the shell, the path byte for byte: nothing in it is run or split.
    assert shlex.split(option) == ["weight=exp/it's $(touch pwned)/run; rm -rf ~/model/model_last.pth", "resume=True"]
