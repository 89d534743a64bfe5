"""Broken output, every command, in real processes: a closed pipe (EPIPE) is a normal end (exit 0, silent); a closed
or full stdout (EBADF, ENOSPC) is one line on stderr and exit 1; Ctrl-C is one line and exit 130, also while `ls`
has worker processes; never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"),
                **extra)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "pimm_inspect", *args]


COMMANDS = [
    ("show", str(RUNS)),
    ("show", "--json", str(RUNS)),
    ("ls", str(RUNS)),
    ("check", str(RUNS / "e2_rollback")),
    ("check", "--brief", str(RUNS)),
    ("config", str(RUNS / "e2_clean")),
    ("curves", str(RUNS / "e2_clean")),
    ("compare", str(RUNS / "e2_requeued_twice"), "--attempts"),
    ("export", str(RUNS / "e2_clean"), "-o", "-"),
    ("export", str(RUNS / "e2_clean"), "--format", "json", "-o", "-"),
    ("url", str(RUNS / "wandb_offline_entity")),
    ("cache", "info"),
    ("--help",),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(x for x in a if not x.startswith("/")))
def test_a_reader_that_closed_the_pipe_is_a_normal_end(args: tuple[str, ...], tmp_path: Path) -> None:
    """The pipe's read end is closed before the command writes (as `| head -1` does once it has its line)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(_cli(*args), stdout=write_end, stderr=subprocess.PIPE, env=_env(tmp_path),
                              text=True, timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Broken pipe" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_show_piped_to_head(tmp_path: Path) -> None:
    """The literal case of the issue: `show fixtures/runs | head -1` prints one line and the pipeline's command
    exits 0."""
    head = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert head.stdin is not None and head.stdout is not None
    proc = subprocess.Popen(_cli("show", str(RUNS)), stdout=head.stdin, stderr=subprocess.PIPE, env=_env(tmp_path),
                            text=True)
    head.stdin.close()
    first = head.stdout.read()
    head.wait(timeout=60)
    _out, err = proc.communicate(timeout=120)
    assert first.count("\n") == 1 and first.startswith("e0_legacy")
    assert proc.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("args", [("ls", str(RUNS)), ("show", "--json", str(RUNS / "e2_clean")),
                                  ("check", str(RUNS / "e2_clean")), ("export", str(RUNS / "e2_clean"), "-o", "-")],
                         ids=["ls", "show-json", "check", "export"])
def test_a_full_stdout_is_one_line_and_exit_1(args: tuple[str, ...], tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(_cli(*args), stdout=full, stderr=subprocess.PIPE, env=_env(tmp_path), text=True,
                              timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "pimm-inspect: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("args", [("ls", str(RUNS / "e2_clean")), ("show", str(RUNS / "e2_clean")),
                                  ("ls", "--json", str(RUNS / "e2_clean")), ("config", str(RUNS / "e2_clean"))],
                         ids=["ls", "show", "ls-json", "config"])
def test_a_closed_stdout_is_one_line_and_exit_1(args: tuple[str, ...], tmp_path: Path) -> None:
    proc = subprocess.run(_cli(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(tmp_path),
                          text=True, timeout=120, preexec_fn=lambda: os.close(1))  # `>&-`
    assert proc.returncode == 1
    assert proc.stderr == "pimm-inspect: cannot write the output: Bad file descriptor\n"


def _hardlinked_tree(source: Path, target: Path, copies: int) -> None:
    """``copies`` copies of a run, its files hard links (cheap), each a run of its own."""
    for i in range(copies):
        for folder, _dirs, files in os.walk(source):
            dest = target / f"run{i:03d}" / Path(folder).relative_to(source)
            dest.mkdir(parents=True, exist_ok=True)
            for name in files:
                os.link(Path(folder) / name, dest / name)


def test_ctrl_c_during_a_multi_root_ls_with_workers(tmp_path: Path) -> None:
    """SIGINT to the whole process group (what a terminal's Ctrl-C does) once the worker processes exist."""
    for root in ("a", "b"):
        _hardlinked_tree(RUNS / "e2_rollback", tmp_path / root, 80)
    proc = subprocess.Popen(_cli("ls", str(tmp_path / "a"), str(tmp_path / "b")), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(tmp_path, PIMM_INSPECT_JOBS="2"), text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a hang guard, not a timing: wait until the workers are there
        group = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
        if len(group) >= 3:
            break
        assert proc.poll() is None, "ls ended before its workers started"
        time.sleep(0.02)
    else:
        pytest.fail("no worker processes appeared")
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err == "pimm-inspect: interrupted\n", err


def test_a_full_stderr_costs_the_diagnostic_not_the_command(tmp_path: Path) -> None:
    """`curves` says on stderr which tags it plots; with stderr full, stdout still gets the chart and exit is 0."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(_cli("curves", str(RUNS / "e2_clean")), stdout=subprocess.PIPE, stderr=full,
                              env=_env(tmp_path), text=True, timeout=120)
    assert proc.returncode == 0
    assert "train/loss" in proc.stdout
