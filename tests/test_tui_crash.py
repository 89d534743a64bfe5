"""The UI never crashes on a hidden row, and a crash never prints locals or run data (issue 22 N1)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Input  # noqa: E402

from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.crash import CRASH_EXIT_CODE  # noqa: E402
from pimm_inspect.analysis.summary import run_row  # noqa: E402
from pimm_inspect.tui.messages import RowLoaded  # noqa: E402
from tests.tui_support import REPO, RUNS, fixed_loader, settle  # noqa: E402

if not (RUNS / "tb_plain").is_dir():
    pytest.skip("fixture runs not generated", allow_module_level=True)


@pytest.mark.asyncio
async def test_a_background_update_of_a_filtered_out_row_is_kept_silently(tmp_path):
    for name in ("tb_plain", "rw_tb_restart"):
        shutil.copytree(RUNS / name, tmp_path / name)
    app = make_app(tmp_path, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        app.screen.query_one("#runs-filter", Input).value = "restart"
        await settle(pilot)
        hidden = (tmp_path / "tb_plain").absolute()
        assert hidden.as_posix() not in table.rows
        # A live reload of the hidden run arrives (as the follow timer's worker posts it).
        run = dataclasses.replace(fixed_loader(hidden), status="crashed")
        app.post_message(RowLoaded(hidden, run_row(run)))
        await settle(pilot)
        assert hidden.as_posix() not in table.rows
        assert app.screen.table.runs[hidden.as_posix()].status == "crashed"  # stored, not shown
        app.screen.query_one("#runs-filter", Input).value = ""
        await settle(pilot)
        assert "crashed" in [str(c) for c in table.get_row(hidden.as_posix())]  # shown once the filter lets it


CRASHING = textwrap.dedent("""
    import sys
    from pimm_inspect.tui import table_load
    from pimm_inspect.tui.app import make_app, run_app

    def crash(self):
        launch_command = "sbatch --account=acct_LOCAL_ONLY train.sh"  # a local: must never be printed
        raise RuntimeError("read failed near token hf_" + "Ab3" * 12 + " in " + launch_command[:6])

    table_load.TablePass.run = crash
    sys.exit(run_app(make_app(sys.argv[1], follow_interval_s=0), headless=True))
""")


def test_a_crash_in_a_worker_writes_a_private_file_without_locals_and_exits_70(tmp_path):
    state = tmp_path / "state"
    env = dict(os.environ, XDG_STATE_HOME=str(state), PYTHONPATH=str(REPO), NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-c", CRASHING, str(RUNS / "tb_plain")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == CRASH_EXIT_CODE, proc.stderr[-2000:]
    reports = list((state / "pimm-inspect").glob("crash-*.txt"))
    assert len(reports) == 1
    report = reports[0]
    assert stat.S_IMODE(report.stat().st_mode) == 0o600
    text = report.read_text()
    assert "RuntimeError: read failed near token **** in sbatch" in text  # the message, its secret masked
    assert ", in crash" in text and ", in _load_all" in text  # the frames that led there
    assert "acct_LOCAL_ONLY" not in text and "Ab3Ab3Ab3" not in text  # no local's value, no secret
    out = (proc.stdout + proc.stderr).strip()
    assert out.splitlines()[-1] == f"pimm-inspect crashed; the traceback (no values) is in {report.as_posix()}"
    assert "acct_LOCAL_ONLY" not in out and "Ab3Ab3Ab3" not in out and "locals" not in out.lower()


def test_a_crash_never_writes_into_the_tree_the_ui_was_reading(tmp_path):
    """Was: the UI's crash path did not name the folder it was reading, so ``$XDG_STATE_HOME`` pointing into that
    tree (outside any run) put ``pimm-inspect/crash-*.txt`` inside it. Now the default state folder is used."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(RUNS / "tb_plain", tree / "tb_plain", symlinks=True)
    state = tree / "state"  # inside the tree, not inside a run
    home = tmp_path / "home"
    env = dict(os.environ, XDG_STATE_HOME=str(state), HOME=str(home), PYTHONPATH=str(REPO), NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-c", CRASHING, str(tree)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == CRASH_EXIT_CODE, proc.stderr[-2000:]
    assert not state.exists(), "the crash file was written inside the tree being read"
    reports = list((home / ".local" / "state" / "pimm-inspect").glob("crash-*.txt"))
    assert len(reports) == 1
    assert (proc.stdout + proc.stderr).strip().splitlines()[-1].endswith(reports[0].as_posix())
