"""Issue 14, "reads outside the run": links and Slurm paths that point out of a run are named, never read.

Inputs in tests/data/hostile/outside: a private key and a docker config.json the run links to, and a
launch.sbatch whose --output names any file (with the job id) and whose --error is a pattern over a folder.
Every test runs the CLI in a fresh process (-P) and asserts the content never appears and the finding names
the link or path. pimm's own layout (``model`` -> ``$MODEL_DIR/.../model``, ``<cwd>/slurm_logs/slurm-<id>.out``)
is still read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pimm_inspect import load_run
from tests.hostile_support import HOSTILE, RUNS, run_cli

MARK = "OUTSIDE-FILE-CONTENT"
JOB = "41877302"
ALL = [["show"], ["show", "--json"], ["check", "--fail-on", "never"], ["check", "--json", "--fail-on", "never"],
       ["config"], ["config", "--json"], ["config", "--kind", "config_py"], ["ls"]]


def _outside(tmp_path: Path) -> Path:
    """Somebody else's files, outside the run."""
    home = tmp_path / "victim"
    (home / ".ssh").mkdir(parents=True)
    (home / ".docker").mkdir()
    (home / "private").mkdir()
    shutil.copy(HOSTILE / "outside" / "fake_key.txt", home / ".ssh" / "id_rsa")
    shutil.copy(HOSTILE / "outside" / "docker_config.json", home / ".docker" / "config.json")
    shutil.copy(HOSTILE / "outside" / "notes.txt", home / "private" / f"notes-{JOB}.txt")
    (home / "home").mkdir()
    (home / "home" / "alice").write_text(f"{MARK} in a file found by a glob\n")
    return home


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "linked"
    shutil.copytree(RUNS / "e2_crashed", run, symlinks=True)
    (run / f"slurm-{JOB}.out").unlink()  # so the tool looks outside the run for it
    (run / "code").mkdir()
    (run / "code" / f".pimm_snapshot_complete_{JOB}").write_text("")
    return run


def _findings(run: Path) -> list[dict]:
    outcome = run_cli("check", "--json", "--fail-on", "never", str(run))
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    return json.loads(outcome.stdout)["runs"][0]["findings"]


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("outside")
    home = _outside(tmp_path)
    run = _run(tmp_path)
    (run / "config.py").unlink()
    (run / "config.py").symlink_to(home / ".ssh" / "id_rsa")
    (run / "resolved_config.json").unlink()
    (run / "resolved_config.json").symlink_to(home / ".docker" / "config.json")
    (run / "launch.sbatch").write_text((HOSTILE / "outside" / "launch.sbatch").read_text().replace("OUTSIDE", str(home)))
    return run, home


@pytest.mark.parametrize("args", ALL, ids=" ".join)
def test_content_outside_the_run_never_printed(linked, args):
    run, _home = linked
    outcome = run_cli(*args, str(run))
    if "--kind" in args:  # the linked document was not read: a usage error naming the documents the run has
        assert outcome.returncode == 2 and "has no" in outcome.stderr, outcome.stderr[-2000:]
    else:
        assert outcome.returncode in (0, 1), outcome.stderr[-2000:]
    assert MARK not in outcome.stdout + outcome.stderr
    assert "T1VUU0lERS1" not in outcome.stdout + outcome.stderr  # the docker "auth" value


def test_links_out_of_the_run_are_named_with_their_target(linked):
    run, home = linked
    outside = {f["paths"][0]: f["message"] for f in _findings(run) if f["code"] == "file.outside-run"
               and f["paths"][0] != "launch.sbatch"}
    assert outside == {
        "config.py": f"config.py is a link to {home / '.ssh' / 'id_rsa'}, outside the run; not read",
        "resolved_config.json": f"resolved_config.json is a link to {home / '.docker' / 'config.json'}, outside "
                                "the run; not read"}


def test_sbatch_paths_outside_pimm_layout_are_named_not_read_nor_globbed(linked):
    run, home = linked
    named = [f["message"] for f in _findings(run) if f["code"] == "file.outside-run" and f["paths"] == ["launch.sbatch"]]
    assert any(str(home / "private" / f"notes-{JOB}.txt") in m and "not read" in m for m in named), named
    assert any(str(home / "home" / "*") in m and "not searched" in m for m in named), named
    show = json.loads(run_cli("show", "--json", str(run)).stdout)["runs"][0]
    assert all(str(home) not in s for a in show["attempts"] for s in a["sources"])  # no attempt cites them


def test_pimm_layout_outside_the_run_is_still_read(tmp_path):
    """``<cwd>/slurm_logs/slurm-<id>.out`` (a regular file) is read; the same name as a link is not."""
    repo = tmp_path / "repo"
    (repo / "slurm_logs").mkdir(parents=True)
    run = _run(tmp_path)
    (run / "launch.sbatch").unlink()
    meta = json.loads((run / "run_metadata.json").read_text())
    meta["cwd"] = str(repo)
    (run / "run_metadata.json").write_text(json.dumps(meta))
    log = repo / "slurm_logs" / f"slurm-{JOB}.out"
    shutil.copy(RUNS / "e2_crashed" / f"slurm-{JOB}.out", log)
    assert log.as_posix() in {s.path for s in load_run(run).sources}
    secret = _outside(tmp_path / "x") / "private" / f"notes-{JOB}.txt"
    log.unlink()
    log.symlink_to(secret)
    outcome = run_cli("show", "--json", str(run))
    assert MARK not in outcome.stdout + outcome.stderr
    assert log.as_posix() not in {s.path for s in load_run(run).sources}


def test_model_link_to_model_dir_is_followed_other_links_are_not(tmp_path):
    """pimm links ``<exp>/model`` to ``$MODEL_DIR/<exp>/model``: checkpoints there are read. A link to any other
    folder (here one named ``.ssh``) is not followed."""
    run = _run(tmp_path)
    store = tmp_path / "model_store" / "exp" / "model"
    store.parent.mkdir(parents=True)
    shutil.move(str(run / "model"), store)
    (run / "model").symlink_to(store)
    show = json.loads(run_cli("show", "--json", str(run)).stdout)["runs"][0]
    assert show["checkpoints"] and all(c["global_step"] is not None for c in show["checkpoints"])
    elsewhere = tmp_path / "elsewhere" / ".ssh"
    elsewhere.parent.mkdir()
    (run / "model").unlink()
    shutil.move(str(store), elsewhere)
    (run / "model").symlink_to(elsewhere)
    codes = {f["code"] for f in _findings(run)}
    assert "file.outside-run" in codes
    show = json.loads(run_cli("show", "--json", str(run)).stdout)["runs"][0]
    assert all(c["global_step"] is None for c in show["checkpoints"])


def test_log_tab_does_not_show_a_train_log_linked_out_of_the_run(tmp_path):
    pytest.importorskip("textual")
    import asyncio

    from tests.tui_support import opened, settle

    home = _outside(tmp_path)
    run = _run(tmp_path)
    (run / "train.log").unlink()
    (run / "train.log").symlink_to(home / "private" / f"notes-{JOB}.txt")

    async def scenario() -> tuple[int, str]:
        from textual.widgets import Static

        from pimm_inspect.tui.widgets.log_view import LogView

        async with opened(run, (120, 36), tab="6") as (app, pilot):  # opened on the tab and settled
            await settle(pilot)  # and once more: whatever the log tab started has ended
            view = app.screen.query_one(LogView)
            status = str(app.screen.query_one("#log-status", Static).render())
            return view.line_count, status

    count, status = asyncio.run(scenario())
    assert count == 0
    assert "outside the run" in status and MARK not in status


def test_folders_linked_out_of_the_run_are_not_read_through(tmp_path):
    """A link to a folder outside (``eval``, ``structured_logs``): every file under it is outside too."""
    home = _outside(tmp_path)
    run = _run(tmp_path)
    (home / "evals" / "20260101-000000").mkdir(parents=True)
    (home / "evals" / "20260101-000000" / "test_metrics.json").write_text(json.dumps({"note": MARK, "mIoU": 0.5}))
    (run / "eval").symlink_to(home / "evals")
    (run / "structured_logs").mkdir()
    rank_log = "training.global_rank_0.20260714-143000-123456-AB12CD.jsonl"
    (run / "structured_logs" / rank_log).symlink_to(home / ".docker" / "config.json")
    outside = {f["paths"][0] for f in _findings(run) if f["code"] == "file.outside-run"}
    assert {"eval/20260101-000000/test_metrics.json", f"structured_logs/{rank_log}"} <= outside
    outcome = run_cli("show", "--json", str(run))
    assert MARK not in outcome.stdout + outcome.stderr
