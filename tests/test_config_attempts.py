"""`config --attempt N`, `--diff @N`, every W&B folder's config, HF configs, and a diff JSON that tells absent from null."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.analysis.configs import flatten_config
from pimm_inspect.cli.main import cli
from pimm_inspect.sources.train_log.config_dump import parse_dump

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FAKE_HUB_TOKEN = "hf_" + "FixtureFakeToken" * 2 + "xy"  # fixtures/gen_hf.py


def _config(*args: str):
    return CliRunner().invoke(cli, ["config", *args])


def test_each_attempts_config_dump_from_train_log():
    run = pimm_inspect.load_run(RUNS / "e2_config_drift")
    dumps = {d.attempt: d for d in run.configs if d.kind == "log_config"}
    assert sorted(dumps) == [1, 2] and all(d.path == "train.log" for d in dumps.values())
    # Attempt 1's dump is the resolved config pimm wrote at launch; attempt 2 was resubmitted with new options.
    assert flatten_config(dumps[1].data) == flatten_config(run.config("resolved_config").data)
    assert dumps[2].data["batch_size"] == 8 and dumps[2].data["optimizer"]["lr"] == 0.001
    one = json.loads(_config(str(RUNS / "e2_config_drift"), "--attempt", "1", "--json").stdout)
    two = json.loads(_config(str(RUNS / "e2_config_drift"), "--attempt", "2", "--json").stdout)
    assert (one["kind"], one["attempt"], one["source"]) == ("log_config", 1, "train.log")
    assert one["config"]["batch_size"] == 4 and two["config"]["batch_size"] == 8


@pytest.mark.parametrize("name", ["e2_rollback", "e2_exact_resume", "e1_legacy_cursor", "e2_tb_gap", "e2_wandb",
                                  "e0_legacy"])
def test_attempt_configs_for_every_attempt_of_pimm_runs(name):
    run = pimm_inspect.load_run(RUNS / name)
    text = (RUNS / name / "train.log").read_text(errors="replace")
    assert sorted(d.attempt for d in run.configs if d.kind == "log_config") == \
        list(range(1, text.count("] Config:") + 1))
    for attempt in range(1, text.count("] Config:") + 1):
        result = _config(str(RUNS / name), "--attempt", str(attempt), "--flat")
        assert result.exit_code == 0 and "save_path = " in result.stdout


def test_diff_between_attempts_of_one_run():
    result = _config(str(RUNS / "e2_config_drift"), "--attempt", "1", "--diff", "@2")
    assert result.exit_code == 0
    lines = set(result.stdout.splitlines())
    assert {"batch_size: 4 -> 8", "optimizer.lr: 0.002 -> 0.001", "resume: false -> true"} <= lines
    doc = json.loads(_config(str(RUNS / "e2_config_drift"), "--diff", "@2", "--json").stdout)
    assert doc["attempts"] == [1, 2] and doc["kind"] == "log_config"
    assert doc["differences"]["weight"] == {"left": None, "right": "exp/panda/semseg/semseg-drift/model/model_last.pth",
                                            "in_left": True, "in_right": True}  # a real null, not a missing key
    wandb = json.loads(_config(str(RUNS / "e2_config_drift"), "--kind", "wandb_config", "--diff", "@2", "--json").stdout)
    assert wandb["kind"] == "wandb_config" and wandb["differences"]["batch_size"]["right"] == 8
    missing = _config(str(RUNS / "e2_clean"), "--attempt", "2")
    assert missing.exit_code == 2 and "attempts with one: 1" in missing.stderr


def test_diff_json_tells_a_missing_key_from_null():
    doc = json.loads(_config(str(RUNS / "e2_clean"), "--diff", str(RUNS / "e2_config_drift"), "--json").stdout)
    chain = doc["differences"]["chain_jobs"]
    assert chain["left"] is None and chain["in_left"] is False and chain["in_right"] is True


def test_every_wandb_folder_config_not_only_the_first():
    result = _config(str(RUNS / "e2_config_drift"), "--kind", "wandb_config", "--flat")
    headings = [line for line in result.stdout.splitlines() if line.startswith("# ")]
    assert len(headings) == 2 and "attempt 1" in headings[0] and "attempt 2" in headings[1]
    assert result.stdout.count("batch_size = 4") == 1 and result.stdout.count("batch_size = 8") == 1
    doc = json.loads(_config(str(RUNS / "e2_config_drift"), "--kind", "wandb_config", "--json").stdout)
    assert [(d["attempt"], d["config"]["batch_size"]) for d in doc["documents"]] == [(1, 4), (2, 8)]
    second = json.loads(_config(str(RUNS / "e2_config_drift"), "--kind", "wandb_config", "--attempt", "2",
                                "--json").stdout)
    assert second["config"]["batch_size"] == 8 and second["source"].endswith("d3f6h9kq")


def test_wandb_only_run_config_by_attempt():
    doc = json.loads(_config(str(RUNS / "wandb_clean"), "--attempt", "1", "--json").stdout)
    assert doc["kind"] == "wandb_config" and doc["config"]["optimizer"]["name"] == "adamw"


def test_hf_config_shows_model_config_and_training_args():
    result = _config(str(RUNS / "hf_clean"))
    assert result.exit_code == 0
    assert "# config.json (model_config)" in result.stdout and "# training_args.bin (hf_training_args)" in result.stdout
    doc = json.loads(_config(str(RUNS / "hf_clean"), "--json").stdout)
    kinds = {d["kind"]: d for d in doc["documents"]}
    assert kinds["model_config"]["config"]["model_type"] == "gpt2"
    args = kinds["hf_training_args"]["config"]
    assert args["logging_steps"] == 5 and args["eval_strategy"] == "steps" and args["report_to"] == ["tensorboard"]
    flat = _config(str(RUNS / "hf_clean"), "--kind", "hf_training_args", "--flat").stdout
    assert "save_steps = 10" in flat


def test_hf_training_args_secret_is_masked_and_flagged():
    run = pimm_inspect.load_run(RUNS / "hf_killed")  # no top-level files: the newest checkpoint's are used
    assert {d.path for d in run.configs} == {"checkpoint-8/config.json", "checkpoint-8/training_args.bin"}
    for args in (["--json"], [], ["--kind", "hf_training_args", "--flat"]):
        out = _config(str(RUNS / "hf_killed"), *args).stdout
        assert FAKE_HUB_TOKEN not in out
    assert '"hub_token": "****"' in _config(str(RUNS / "hf_killed"), "--kind", "hf_training_args").stdout
    assert any(f.code == "provenance.secret" and "checkpoint-8/training_args.bin" in f.paths for f in run.findings)


def test_config_dump_parser_takes_literals_and_never_runs_code(tmp_path):
    marker = tmp_path / "ran"
    text = (f"lr = -0.5\nmodel = dict(\n    type='X',\n    layers=[1, 2, (3, 4)],\n    extra={{'a': None}})\n"
            f"hook = __import__('os').system('touch {marker}')\nname = 'a' + 'b'\n")
    data = parse_dump(text)
    assert data["lr"] == -0.5 and data["model"] == {"type": "X", "layers": [1, 2, [3, 4]], "extra": {"a": None}}
    assert data["hook"].startswith("__import__(") and data["name"] == "'a' + 'b'"
    assert not marker.exists()
    assert parse_dump("this is = not python (") is None


def test_hf_attempt_configs_from_the_checkpoints_each_attempt_saved():
    run = pimm_inspect.load_run(RUNS / "hf_resumed")
    by_attempt = {d.attempt: d.path for d in run.configs if d.kind == "hf_training_args" and d.attempt}
    # Attempt 1 saved checkpoint-10; attempt 2 resumed from it and saved checkpoint-20 (over attempt 1's).
    assert by_attempt == {1: "checkpoint-10/training_args.bin", 2: "checkpoint-20/training_args.bin"}
    doc = json.loads(_config(str(RUNS / "hf_resumed"), "--attempt", "2", "--json").stdout)
    assert doc["source"] == "checkpoint-20/training_args.bin" and doc["config"]["save_steps"] == 10
    same = _config(str(RUNS / "hf_resumed"), "--attempt", "1", "--diff", "@2")
    assert same.exit_code == 0 and same.stdout == "" and "no differences" in same.stderr


def test_one_document_of_an_older_attempt_is_named_in_text(tmp_path):
    """When the only readable config belongs to an older attempt (the newer training's training_args.bin emptied, as in
    a public HF output dir), the text names its file and attempt, as --json's `source`/`attempt` do; a newest-attempt
    or run-level document alone keeps the bare body."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(RUNS / "hf_two_trainings", run)
    for name in ("checkpoint-10", "checkpoint-20"):
        (run / name / "training_args.bin").write_bytes(b"")
    for config in run.glob("*/config.json"):
        config.unlink()
    text = CliRunner().invoke(cli, ["config", str(run)]).output
    assert text.splitlines()[0] == "# checkpoint-8/training_args.bin (hf_training_args, attempt 1)"
    assert json.loads(text.split("\n", 1)[1])["output_dir"]
    as_json = json.loads(CliRunner().invoke(cli, ["config", str(run), "--json"]).output)
    assert (as_json["source"], as_json["attempt"]) == ("checkpoint-8/training_args.bin", 1)
    bare = CliRunner().invoke(cli, ["config", str(RUNS / "e2_rollback")]).output
    assert bare.startswith("{")
