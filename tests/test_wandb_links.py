"""W&B links, sync commands, provenance and crash evidence that are true (issue 12).

Fixtures: fixtures/gen_wandb.py with the real wandb client, online ones against fixtures/wandb_stub.py.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.sources.wandb.reader import find_wandb_dirs, read_wandb_run

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FAKE_KEY = "0123456789abcdef" * 2 + "01234567"  # fixtures/gen_wandb.py FAKE_API_KEY


def _url(name: str, *extra: str):
    return CliRunner().invoke(cli, ["url", *extra, str(RUNS / name)])


def _show(name: str) -> dict:
    result = CliRunner().invoke(cli, ["show", "--json", str(RUNS / name)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"][0]


def test_online_run_is_not_called_offline_and_gets_its_link():
    info = pimm_inspect.load_run(RUNS / "wandb_online").wandb
    assert info.mode == "online" and info.sync_command is None
    # The run record has no entity (the server assigned it); debug.log's finishing line names it.
    assert info.entity == "stub-team" and "logs/debug.log" in info.entity_source
    assert info.url == "https://wandb.ai/stub-team/pimm-fixtures/runs/online01"
    assert "server is not recorded" in info.link_note
    result = _url("wandb_online")
    assert result.exit_code == 0 and result.stdout == info.url + "\n"
    assert "wandb sync" not in result.output and "offline" not in result.stderr


def test_killed_online_run_without_entity_says_so_and_where_to_look():
    info = pimm_inspect.load_run(RUNS / "wandb_online_killed").wandb
    assert info.mode == "online" and info.url is None and info.sync_command is None and info.entity is None
    assert "online run" in info.link_note and "no entity is recorded" in info.link_note
    assert "logs/debug.log" in info.link_note and "settings" in info.link_note
    assert "wandb-metadata.json" not in info.link_note  # not in this folder: not offered as a place to look
    assert info.link_note.endswith("https://wandb.ai/<entity>/<project>/runs/onkill01")
    result = _url("wandb_online_killed")
    assert result.exit_code == 1 and result.stdout == ""
    assert "never synced" not in result.stderr and "online run" in result.stderr


def test_run_rejected_by_the_server_gets_no_link():
    info = pimm_inspect.load_run(RUNS / "wandb_rejected").wandb
    assert info.entity == "nobody-here"  # recorded, but the server does not know it
    assert info.url is None and info.sync_command is None
    assert info.server_rejection == "entity nobody-here not found during upsertBucket (HTTP 404)"
    result = _url("wandb_rejected")
    assert result.exit_code == 1 and result.stdout == ""
    assert "rejected" in result.stderr and "no link" in result.stderr
    doc = json.loads(_url("wandb_rejected", "--json").stdout)
    assert doc["url"] is None and doc["server_rejection"] == info.server_rejection and doc["mode"] == "online"


def test_never_synced_offline_run_with_entity_gets_the_sync_command():
    info = pimm_inspect.load_run(RUNS / "wandb_offline_entity").wandb
    folder = find_wandb_dirs(RUNS / "wandb_offline_entity")[0]
    assert info.mode == "offline" and info.url is None
    assert info.url_after_sync == "https://wandb.ai/pimm-team/pimm-fixtures/runs/offent01"
    assert info.sync_command == f"wandb sync {folder.as_posix()}"
    result = _url("wandb_offline_entity")
    assert result.exit_code == 0 and result.stdout == info.sync_command + "\n"
    assert info.url_after_sync in result.stderr


def test_split_offline_run_gets_one_command_for_every_folder_by_absolute_path(tmp_path):
    folders = find_wandb_dirs(RUNS / "wandb_resumed_offline")
    assert len(folders) == 2
    info = pimm_inspect.load_run(RUNS / "wandb_resumed_offline").wandb
    words = shlex.split(info.sync_command)
    assert words[:2] == ["wandb", "sync"] and words[2:] == [f.as_posix() for f in folders]
    # Pasted anywhere, even for a run dir whose path needs quoting.
    odd = tmp_path / "my runs" / "resumed"
    shutil.copytree(RUNS / "wandb_resumed_offline", odd)
    words = shlex.split(pimm_inspect.load_run(odd).wandb.sync_command)
    assert [Path(w).is_dir() and Path(w).is_absolute() for w in words[2:]] == [True, True]


def test_provenance_from_wandb_metadata_with_args_masked():
    run = pimm_inspect.load_run(RUNS / "wandb_online")
    prov = run.provenance
    assert prov.source.endswith("files/wandb-metadata.json")
    assert prov.host == "fixture-host" and prov.git_commit == "4f2c9e1d" * 5
    assert prov.git_remote == "https://github.com/example-lab/pimm.git"
    assert prov.python.startswith("CPython 3.") and prov.created_at.startswith("20")
    assert prov.command.startswith("train.py --lr 0.001 --wandb-api-key ")
    shown = _show("wandb_online")["provenance"]
    assert shown["host"] == "fixture-host" and shown["git_remote"] == prov.git_remote
    assert FAKE_KEY not in json.dumps(shown) and shown["command"] == "train.py --lr 0.001 --wandb-api-key ****"


def test_gpu_from_metadata(tmp_path):
    src = find_wandb_dirs(RUNS / "wandb_online")[0]
    dst = tmp_path / "wandb" / src.name
    shutil.copytree(src, dst)
    meta_path = dst / "files" / "wandb-metadata.json"
    meta = json.loads(meta_path.read_text())
    meta.update(gpu="NVIDIA A100-SXM4-80GB", gpu_count=4)  # what wandb records on a GPU node
    meta_path.write_text(json.dumps(meta))
    result = read_wandb_run(dst, f"wandb/{dst.name}")
    assert result.provenance.gpu == "4 x NVIDIA A100-SXM4-80GB"


def test_crash_evidence_names_the_file_the_traceback_is_in():
    run = pimm_inspect.load_run(RUNS / "wandb_crashed")
    crash = next(f for f in run.findings if f.code == "run.crashed")
    folder = find_wandb_dirs(RUNS / "wandb_crashed")[0]
    output_log = f"wandb/{folder.name}/files/output.log"
    assert crash.paths == (output_log,)
    assert "train.log" not in crash.explanation and f"{output_log}:2" in crash.explanation
    lines = (folder / "files" / "output.log").read_text().splitlines()
    assert lines[1].startswith("Traceback (most recent call last):")
    event = next(e for e in run.events if e.kind == "traceback")
    assert event.message == "RuntimeError: CUDA out of memory (simulated)" and event.attempt == 1
