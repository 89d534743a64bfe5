"""Hostile round five: what a colleague's run on a shared cluster can carry, through every surface.

Each test names what leaked before its fix. Runs come from committed fixtures (real writers) or tensorboard's own
writer (``tests.test_hostile_exports.tb_run``); hand-written bytes only where no writer produces the string.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pimm_inspect.analysis.secrets import MASK, find_in_text, mask_text, mask_value
from tests.test_hostile_exports import tb_run

ROOT = Path(__file__).resolve().parents[1]
SECRET = "Hunter2Pass"
"""A password in no known token shape: only its flag says it is one."""


@pytest.mark.parametrize("line, masked", [
    (f"sshpass -p {SECRET} ssh host", "sshpass -p **** ssh host"),
    (f"python train.py -p {SECRET} --lr 0.1", "python train.py -p **** --lr 0.1"),
    (f"mkdir -p logs && python t.py -p {SECRET}", "mkdir -p logs && python t.py -p ****"),
    (f"x --key {SECRET}", "x --key ****"),
    (f"x --key={SECRET}", "x --key=****"),
    (f"hub upload --pat '{SECRET} x'", "hub upload --pat '****'"),
    (f"x --PAT {SECRET}", "x --PAT ****"),
    (f"docker login -u bob -p {SECRET} registry.example", "docker login -u bob -p **** registry.example"),
])
def test_bare_credential_flags_are_masked(line: str, masked: str) -> None:
    """Was: ``-p``, ``--key`` and ``--pat`` named no secret (the key rule wants ``api-key``, ``password`` ...), so a
    password after them stayed in clear in show, config, the report and the dataset."""
    assert mask_text(line) == masked
    assert find_in_text(line)[0].where == "line 1"


@pytest.mark.parametrize("line", [
    "srun -N 2 -p gpu python train.py", "#SBATCH -p gpu_long", "mkdir -p out/logs", "ssh -p 2222 host",
    "docker run -p 8080:80 img", "cp -p a b", "tar -xzf x.tgz -p", "x --key none", "x --key $WANDB_KEY",
    "x --keys a b", "x --patience 3", "x -P 8", "psql -p 5433 -h db", "mysql -u root -p db",
    "docker run -u 1000:1000 img", "python -u train.py", "curl -u bob https://x.example", "url: https://x.example/a?b=1",
])
def test_flags_where_p_key_pat_are_no_secret_stay(line: str) -> None:
    """A partition, a port, ``mkdir -p``'s folder, a placeholder, and flags that only start like ``--key``/``--pat``."""
    assert mask_text(line) == line


@pytest.mark.parametrize("line, masked", [
    (f"curl -u bob:{SECRET} https://x.example", "curl -u bob:**** https://x.example"),
    (f"curl --user='bob:{SECRET}' x", "curl --user='bob:****' x"),
    ("mysql -u root -pZq9Mysql db", "mysql -u root -p**** db"),
    ("mysqldump -p'Zq9 Mysql' db", "mysqldump -p'****' db"),
    (f"https://hub.example/cb?access_token={SECRET}&page=2", "https://hub.example/cb?access_token=****&page=2"),
    (f"see https://hub.example/?api_key={SECRET}", "see https://hub.example/?api_key=****"),
])
def test_user_passwords_attached_passwords_and_url_queries_are_masked(line: str, masked: str) -> None:
    """Was: ``curl -u user:password`` and MySQL's ``-pPASSWORD`` stayed in clear (no secret-named flag), and a URL's
    ``?access_token=X`` too: the assignment rule read ``https: //...`` as one ``NAME: value`` holding the whole URL,
    so the query's ``access_token=`` was never looked at."""
    assert mask_text(line) == masked


def test_bare_credential_flags_in_an_argument_list() -> None:
    argv = ["train.py", "-p", SECRET, "--key", SECRET, "--pat", SECRET, "-p", "8080", "--key", "--verbose"]
    assert mask_value(argv) == ["train.py", "-p", MASK, "--key", MASK, "--pat", MASK, "-p", "8080", "--key",
                                "--verbose"]
    assert mask_value({"key": "image", "p": 0.5, "pat": "x"}) == {"key": "image", "p": 0.5, "pat": "x"}
    assert mask_value(["curl", "-u", f"bob:{SECRET}", "--user", "alice", "-u", "1000:1000"]) == [
        "curl", "-u", "bob:****", "--user", "alice", "-u", "1000:1000"]


def test_bare_credential_flags_never_reach_any_command(tmp_path: Path) -> None:
    """The real pimm fixture's launch command and argv given ``-p``/``--key``/``--pat`` values: no command prints one."""
    import json
    import shutil

    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "runs" / "e2_crashed", run, symlinks=True)
    meta_path = run / "run_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["launch_command"] = f"sshpass -p {SECRET}1 ssh node && pimm submit x --pat {SECRET}2"
    meta["command"] = meta["command"] + ["--key", SECRET + "3", "-p", SECRET + "4"]
    meta_path.write_text(json.dumps(meta))
    for args in (["show", str(run)], ["show", "--json", str(run)], ["config", str(run)],
                 ["config", "--json", str(run)], ["report", str(run), "-o", "-", "--format", "md"]):
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code in (0, 1), result.output[-2000:]
        assert SECRET not in result.stdout + result.stderr, args


def test_a_flag_value_after_a_shell_line_continuation_is_masked(tmp_path: Path) -> None:
    """Was: in a script's long command (``--password \\`` then the password on the next line) the backslash was
    masked as the value and the password on the next line stayed in clear, in show, config and the report."""
    import json
    import shutil

    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    text = f"python train.py \\\n  --password \\\n  {SECRET} \\\n  --lr 0.1\n"
    assert mask_text(text) == "python train.py \\\n  --password \\\n  **** \\\n  --lr 0.1\n"
    assert mask_text(f"x --token \\\r\n{SECRET}") == "x --token \\\r\n****"
    assert mask_text("x --lr \\\n 0.1 --token") == "x --lr \\\n 0.1 --token"
    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "runs" / "e2_crashed", run, symlinks=True)
    meta_path = run / "run_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["launch_command"] = "pimm submit cfg.py \\\n  --wandb-key \\\n  " + SECRET + " \\\n  --run.name x"
    meta_path.write_text(json.dumps(meta))
    for args in (["show", str(run)], ["show", "--json", str(run)], ["report", str(run), "-o", "-", "--format", "md"]):
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code in (0, 1) and SECRET not in result.stdout + result.stderr, args


# -- the crash file never lands in a run ---------------------------------------------------------------------------


def _crash(env: dict[str, str]) -> tuple[Path | None, str]:
    from pimm_inspect.session.crash import write_crash

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        try:
            raise ValueError("boom")
        except ValueError as error:
            return write_crash(error)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("where", ["run", "below", "link", "deep"])
def test_crash_file_is_never_written_inside_a_run(tmp_path: Path, where: str) -> None:
    """Was: ``XDG_STATE_HOME`` pointing into a run (a shared shell profile, or a link into the run) made the crash
    path create ``pimm-inspect/crash-*.txt`` inside the run being read. Now the default state folder is used."""
    run = tb_run(tmp_path / "run", ["loss"])
    before = _listing(run)
    state = {"run": run, "below": run / "state", "deep": run / "a" / "b" / "c" / "d" / "e" / "f" / "g" / "h"}.get(where)
    if where == "link":
        state = tmp_path / "elsewhere"
        state.symlink_to(run, target_is_directory=True)
    assert state is not None
    home = tmp_path / "home"
    path, line = _crash({"XDG_STATE_HOME": str(state), "HOME": str(home)})
    assert _listing(run) == before
    assert path is not None and path.parent == home / ".local" / "state" / "pimm-inspect", line
    assert path.read_text().startswith("pimm-inspect ")


def test_crash_file_with_every_state_folder_inside_a_run_is_not_written(tmp_path: Path) -> None:
    run = tb_run(tmp_path / "run", ["loss"])
    before = _listing(run)
    path, line = _crash({"XDG_STATE_HOME": str(run / "state"), "HOME": str(run / "home")})
    assert path is None and _listing(run) == before
    assert line == (f"pimm-inspect crashed (ValueError); the traceback was not saved: {run}/state/pimm-inspect lies "
                    f"inside {run} (runs are read, never written)")


def test_crash_file_outside_any_run_is_written_where_xdg_says(tmp_path: Path) -> None:
    tb_run(tmp_path / "run", ["loss"])
    path, _line = _crash({"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "home")})
    assert path is not None and path.parent == tmp_path / "state" / "pimm-inspect"


CRASHING_LS = """
import sys
import pimm_inspect.cli._common as common

def boom(*args, **kwargs):
    raise ValueError("boom")

common.print_runs_table = boom
sys.argv = ["pimm-inspect", "--no-cache", "ls", sys.argv[1]]
from pimm_inspect.cli.main import main
main()
"""


@pytest.mark.slow
def test_a_command_crashing_on_a_tree_writes_no_crash_file_into_it(tmp_path: Path) -> None:
    """A command's crash with ``XDG_STATE_HOME`` inside the folder it reads (no run itself): the file goes home."""
    tree = tmp_path / "tree"
    tb_run(tree / "run", ["loss"])
    before = _listing(tree)
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_STATE_HOME=str(tree / "state"), HOME=str(tmp_path / "home"),
               PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, "-P", "-c", CRASHING_LS, str(tree)], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 70, result.stderr[-2000:]
    assert _listing(tree) == before
    assert list((tmp_path / "home" / ".local" / "state" / "pimm-inspect").glob("crash-*.txt"))
