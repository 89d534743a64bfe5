"""W&B claims that follow from the folders (issue 19): ids as W&B accepts them, same-id grouping beside other
ids, attempt order by start evidence, every dropped step.

Fixtures: fixtures/gen_wandb_claims.py (the real wandb client; see fixtures/README.md for the SDK of each).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.load.discover import discover

CLAIMS = Path(__file__).resolve().parents[1] / "fixtures" / "wandb_claims"


def _ls(path: Path) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["ls", "--json", str(path)])
    return result.exit_code, (json.loads(result.stdout)["runs"] if result.exit_code == 0 else [])


def _folders(scenario: str, run_id: str) -> list[Path]:
    return sorted(p for p in (CLAIMS / scenario / "wandb").iterdir() if p.name.endswith(run_id))


def test_an_id_with_a_space_is_found_and_its_two_folders_are_one_run():
    code, runs = _ls(CLAIMS / "custom_id")
    assert code == 0 and len(runs) == 1
    run = pimm_inspect.load_run(CLAIMS / "custom_id")
    assert run.wandb.run_ids == ("Mancala 8",)
    assert [a.first_step for a in run.attempts] == [0, 20] and [a.last_step for a in run.attempts] == [29, 39]
    codes = {f.code for f in run.findings}
    assert {"steps.replayed", "wandb.run-split"} <= codes


def test_the_id_comes_from_the_run_log_not_a_folder_suffix(tmp_path):
    # W&B adds -1 to a folder started in the same second as another; its log still names the id.
    src = _folders("custom_id", "Mancala 8")[1]
    wandb_dir = tmp_path / "launch" / "wandb"
    shutil.copytree(_folders("custom_id", "Mancala 8")[0], wandb_dir / _folders("custom_id", "Mancala 8")[0].name)
    shutil.copytree(src, wandb_dir / (_folders("custom_id", "Mancala 8")[0].name + "-1"))
    run = pimm_inspect.load_run(tmp_path / "launch")
    assert run.wandb.run_ids == ("Mancala 8",) and len(run.attempts) == 2


def test_six_folders_of_one_id_beside_two_other_ids_are_one_run_with_six_attempts():
    code, runs = _ls(CLAIMS / "mixed_ids")
    assert code == 0
    assert sorted(r["wandb_run_ids"][0] for r in runs) == ["other001", "other002", "sixfold1"]
    six = _folders("mixed_ids", "sixfold1")
    assert len(six) == 6
    roots = discover(CLAIMS / "mixed_ids")
    assert six[0] in roots and not any(p in roots for p in six[1:])
    run = pimm_inspect.load_run(six[0])
    assert len(run.attempts) == 6 and len(run.wandb_runs) == 6
    assert [(a.first_step, a.last_step) for a in run.attempts] == [
        (0, 19), (10, 39), (30, 59), (50, 79), (70, 99), (90, 119)]
    split = [f for f in run.findings if f.code == "wandb.run-split"]
    assert split and "6 local W&B folders share run id sixfold1" in split[0].message
    replayed = [f for f in run.findings if f.code == "steps.replayed"]
    assert len(replayed) == 5 and {f.steps for f in replayed} == {(10, 19), (30, 39), (50, 59), (70, 79), (90, 99)}
    other = pimm_inspect.load_run(_folders("mixed_ids", "other001")[0])
    assert len(other.attempts) == 1 and len(other.wandb_runs) == 1


def test_a_folder_with_an_empty_log_is_ordered_by_its_folder_stamp():
    run = pimm_inspect.load_run(CLAIMS / "empty_first")
    folders = [Path(p).name for a in run.attempts for p in a.sources]
    assert folders == [p.name for p in _folders("empty_first", "order001")]  # stamp order: the empty log is third
    assert run.attempts[2].first_step is None and run.attempts[0].first_step == 0
    # Its start comes from the folder stamp on the clock the other folders' run records fix.
    assert run.attempts[2].started_at is not None and run.attempts[2].started_at > run.attempts[1].started_at


def test_every_dropped_step_is_counted_from_every_file_that_records_it():
    run = pimm_inspect.load_run(CLAIMS / "tb_dropped")
    (folder,) = run.wandb_runs
    assert folder.dropped_steps == tuple(range(10, 19))  # the console log holds two, debug-internal.log all nine
    (dropped,) = [f for f in run.findings if f.code == "wandb.step-dropped"]
    assert "dropped 9 log call(s)" in dropped.message and dropped.steps == (10, 18)


def test_wandb_017_server_rejection_in_python_log_text_means_no_link():
    run = pimm_inspect.load_run(CLAIMS / "rejected_017")
    assert run.wandb.server_rejection == "entity nobody-here not found during upsertBucket (HTTP 404)"
    assert run.wandb.url is None and run.wandb.mode == "online"
    result = CliRunner().invoke(cli, ["url", str(CLAIMS / "rejected_017")])
    assert result.exit_code == 1 and result.stdout == "" and "rejected" in result.stderr


def test_one_id_in_two_projects_links_where_the_history_is_and_says_two_runs():
    run = pimm_inspect.load_run(CLAIMS / "two_projects")
    # The first folder (team-a/proj-a) never logged; both logged attempts went to team-b/proj-b.
    assert run.wandb.entity == "team-b" and run.wandb.project == "proj-b"
    assert run.wandb.url is not None and run.wandb.url.endswith("/team-b/proj-b/runs/twoproj1")
    assert "2 projects (team-a/proj-a, team-b/proj-b)" in run.wandb.link_note and "2 W&B runs" in run.wandb.link_note
    split = [f for f in run.findings if f.code == "wandb.run-split" and "projects" in f.message]
    assert len(split) == 1 and "2 W&B runs" in split[0].message
    result = CliRunner().invoke(cli, ["url", str(CLAIMS / "two_projects")])
    assert result.exit_code == 0 and result.stdout.strip().endswith("/team-b/proj-b/runs/twoproj1")


def _replay_views(run) -> list[tuple[dict, str]]:
    return [(dict(f.views), f.explanation) for f in run.findings if f.code == "steps.replayed"]


RUNS = CLAIMS.parent / "runs"


def test_hf_run_reporting_to_wandb_gets_the_view_its_folders_hold():
    # The Trainer logs against train/global_step (define_metric); both folders hold 15-20; nothing was dropped.
    ((views, text),) = _replay_views(pimm_inspect.load_run(RUNS / "hf_resumed_wandb"))
    assert views["W&B"] == "2 copies of steps 15-20 (2 folders' histories), against train/global_step"
    assert "against the step metric train/global_step (define_metric)" in text
    assert "No dropped step is recorded" in text and "going backwards" not in text
    assert "2 folder(s) of W&B id hfres0001" in text


def test_hf_run_without_wandb_gets_no_wandb_claim():
    ((views, text),) = _replay_views(pimm_inspect.load_run(RUNS / "hf_resumed"))
    assert views["W&B"] == "not used by this run"
    assert "dropped" not in text.split("W&B:", 1)[1].split(".")[0]


def test_the_steps_wandb_dropped_are_named_with_the_file_that_records_them():
    ((views, text),) = _replay_views(pimm_inspect.load_run(CLAIMS / "tb_dropped"))
    assert views["W&B"] == "one copy of steps 10-19, the replayed log calls dropped as going backwards"
    assert "W&B dropped 9 log call(s) at steps 10-18 as going backwards" in text
    assert "against _step (W&B's own row counter)" in text


def test_the_view_of_each_replay_in_six_attempts_counts_the_folders_holding_it():
    run = pimm_inspect.load_run(_folders("mixed_ids", "sixfold1")[0])
    views = _replay_views(run)
    assert len(views) == 5
    assert all(v["W&B"].startswith("2 copies of steps") for v, _text in views)
    assert all("6 folder(s) of W&B id sixfold1" in text for _v, text in views)


def test_a_pimm_run_naming_a_wandb_run_without_its_folders_says_they_are_not_here():
    ((views, text),) = _replay_views(pimm_inspect.load_run(RUNS / "e1_legacy_cursor"))
    assert views["W&B"].startswith("not here")
    assert "none of its W&B folders is here" in text


def test_a_rejected_entity_with_a_space_is_read_whole():
    run = pimm_inspect.load_run(CLAIMS / "rejected_017_space")
    assert run.wandb.server_rejection == "entity pimm team not found during upsertBucket (HTTP 404)"
    assert run.wandb.url is None


def test_a_resume_from_rewind_in_the_run_record_is_part_of_the_view():
    run = pimm_inspect.load_run(CLAIMS / "rewound")
    second = [w for w in run.wandb_runs if w.resume_from]
    assert [w.resume_from for w in second] == ["resume_from rewind01?_step=10"]
    ((views, text),) = _replay_views(run)
    assert views["W&B"].endswith("history rewound (resume_from)")
    assert "resume_from rewind01?_step=10" in text and "wandb sync" not in text  # online folders: no sync


def test_online_folders_of_one_id_are_not_called_requeued_offline_attempts():
    run = pimm_inspect.load_run(CLAIMS / "rewound")
    (split,) = [f for f in run.findings if f.code == "wandb.run-split"]
    assert "offline" not in split.explanation and "wandb sync" not in split.explanation
    assert "2 of them online" in split.explanation


def test_one_id_in_two_projects_is_two_histories_not_a_resume():
    """cross_project (wandb 0.31 offline): id xproj001 logs steps 0-19 to proj-256, then, with resume="allow",
    steps 0-9 to proj-512. The public crobbins327/stylegan2-pytorch-WSI id cxeenjh9 (KID_256 then KID_512): the
    second project's folder was a resume "from step -1" (a rollback of 20 steps here), its steps "trained twice",
    the W&B history said to hold them twice and wandb sync to make the uploads conflict."""
    run = pimm_inspect.load_run(CLAIMS / "cross_project")
    assert [(a.origin, a.first_step, a.last_step) for a in run.attempts] == [("fresh", 0, 19), ("restart", 0, 9)]
    codes = [f.code for f in run.findings]
    assert "resume.rollback" not in codes
    (replay,) = [f for f in run.findings if f.code == "steps.replayed"]
    assert replay.message == ("attempt 2 restarted from scratch into the same directory and wrote steps 0-9 again "
                              "(already written by attempt 1)")
    assert "step -1" not in replay.explanation and "Its history holds" not in replay.explanation
    first, second = (p.relative_to(CLAIMS / "cross_project").as_posix() for p in _folders("cross_project", "xproj001"))
    assert (f"Steps 0-9 are in the histories of 2 W&B runs: ?/proj-256 once (folder {first}); ?/proj-512 once "
            f"(folder {second})") in replay.explanation
    (shared,) = [f for f in run.findings if f.message.startswith("2 local W&B folders share run id xproj001")]
    assert "no two of them share a history" in shared.explanation and "conflicts" not in shared.explanation


def test_no_gap_lies_between_two_projects_of_one_id():
    """cross_project_gap (wandb 0.31 offline): steps 0-9 in proj-a, then 100-109 in proj-b, one id. The public
    crobbins327 id 2sqkvnjk (0-930 in KID_512, then 27940-28058 in KID_256) drew "no steps logged between 930 and
    27940": two W&B runs' histories, not one training's gap."""
    run = pimm_inspect.load_run(CLAIMS / "cross_project_gap")
    assert [(a.first_step, a.last_step) for a in run.attempts] == [(0, 9), (100, 109)]
    assert "steps.gap" not in {f.code for f in run.findings}
    assert any(f.message.startswith("W&B id xgap0001 was used in 2 projects") for f in run.findings)
