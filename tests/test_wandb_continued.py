"""W&B folders of one id that the server continued (claims round five): each later folder is labelled by what its own
records say, not ``fresh``; a folder left by a second ``wandb.init`` inside a live process is no attempt.

Fixture: fixtures/gen_wandb_claims.py ``continued_017`` (the real wandb 0.17.9 client, online to the local stub,
three processes of id ``cont0017``; the shape of wandb 0.12-0.16 runs in the real-world corpus, whose run record
keeps ``resumed`` False while the telemetry feature ``resumed`` and debug.log's ``run resumed`` say the server
continued the id).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.sources.wandb._files import RunFiles, _own_init

CONTINUED = Path(__file__).resolve().parents[1] / "fixtures" / "wandb_claims" / "continued_017"


def _folders() -> list[Path]:
    return sorted((CONTINUED / "wandb").iterdir())


def test_folders_the_server_continued_are_resumes_and_the_one_that_went_back_a_rollback():
    run = pimm_inspect.load_run(CONTINUED)
    assert [(a.first_step, a.last_step) for a in run.attempts] == [(0, 9), (10, 19), (15, 24)]
    # Before: fresh, fresh, fresh (the run record says resumed=False; its telemetry says resumed).
    assert [a.origin for a in run.attempts] == ["fresh", "resume", "rollback"]
    said = {Path(w.path).name: w.resume_evidence for w in run.wandb_runs}
    first, second, _reinit, third = (p.name for p in _folders())
    assert said[first] is None
    assert said[second] == f"wandb/{second}/run-cont0017.wandb: telemetry feature resumed"
    assert said[third] == f"wandb/{third}/run-cont0017.wandb: telemetry feature resumed"


def test_a_second_init_in_a_live_process_is_no_attempt():
    run = pimm_inspect.load_run(CONTINUED)
    folders = _folders()
    assert len(folders) == 4 and not list(folders[2].glob("*.wandb"))  # only logs/debug.log
    # Before: four attempts, the debug.log-only folder an attempt "killed" with no step.
    assert len(run.attempts) == 3
    assert [Path(s).name for a in run.attempts for s in a.sources] == [folders[0].name, folders[1].name,
                                                                       folders[3].name]
    reinit = {Path(w.path).name: w.reinit_of_active for w in run.wandb_runs}
    assert reinit[folders[2].name] == f"wandb/{folders[2].name}/logs/debug.log:19"
    # The live process's own debug.log records the second init too; it is that folder's own init that counts.
    assert reinit[folders[1].name] is None


def test_every_surface_says_which_attempts_continued_the_id():
    shown = CliRunner().invoke(cli, ["show", "--json", str(CONTINUED)])
    listed = CliRunner().invoke(cli, ["ls", "--json", str(CONTINUED)])
    assert shown.exit_code == 0 and listed.exit_code == 0
    (doc,) = json.loads(shown.stdout)["runs"]
    assert [a["origin"] for a in doc["attempts"]] == ["fresh", "resume", "rollback"]
    assert json.loads(listed.stdout)["runs"][0]["attempts"] == 3
    (note,) = [n for n in doc["notes"] if n.startswith("W&B id cont0017 was continued")]
    assert "by #2, #3 (telemetry feature resumed" in note
    assert any("no process start" in n and "logs/debug.log:19" in n for n in doc["notes"])
    text = CliRunner().invoke(cli, ["show", str(CONTINUED)])
    assert "rollback" in text.stdout and "continued on the server by #2, #3" in text.stdout


def test_debug_log_run_resumed_counts_for_the_folder_whose_init_logged_it(tmp_path):
    # A log without the telemetry record (cut right after the run record): debug.log's line still says it.
    second = _folders()[1]
    text = (second / "logs" / "debug.log").read_text()
    out = RunFiles()
    _own_init(text, "logs/debug.log", second.name, out)
    assert out.resumed_line == "logs/debug.log:25" and out.reinit_line is None
    other = RunFiles()
    _own_init(text, "logs/debug.log", _folders()[2].name, other)  # the later init's lines in the same file
    assert other.resumed_line is None and other.reinit_line == "logs/debug.log:50"
    copy = tmp_path / "launch" / "wandb" / second.name
    shutil.copytree(second, copy)
    log = copy / "run-cont0017.wandb"
    log.write_bytes(b"")  # nothing of the log is readable
    (folder,) = pimm_inspect.load_run(tmp_path / "launch").wandb_runs
    assert folder.resume_evidence == f"wandb/{second.name}/logs/debug.log:25: run resumed"


REUSED = CONTINUED.parent / "reused_id"


def test_an_id_used_again_from_scratch_is_a_restart_not_fresh():
    # fixtures/gen_wandb_claims.py reused_id (wandb 0.31 offline): three folders of reuse001, no resume, each 0-9.
    run = pimm_inspect.load_run(REUSED)
    # Before: fresh, fresh, fresh. Nothing says W&B continued the id, and each started again at step 0.
    assert [(a.first_step, a.last_step, a.origin) for a in run.attempts] == [
        (0, 9, "fresh"), (0, 9, "restart"), (0, 9, "restart")]
    assert {w.resume_evidence for w in run.wandb_runs} == {None}
