"""Issue 24's ``export`` edges for scripts: ``-o`` is optional (stdout when it is not a terminal; a terminal gets a
clear error), a tree given to a one-run export says how many runs it left unnamed and points at the dataset, and
output to a pipe never claims on stderr that every point arrived (a reader may stop early: ``| head``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli import cmd_export
from pimm_inspect.cli.main import cli

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
RUN = str(RUNS / "e2_clean")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "pimm_inspect", *args]


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"))


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_without_o_the_table_goes_to_stdout_when_it_is_not_a_terminal(fmt: str) -> None:
    omitted = CliRunner().invoke(cli, ["export", RUN, "--format", fmt])
    dash = CliRunner().invoke(cli, ["export", RUN, "--format", fmt, "-o", "-"])
    assert omitted.exit_code == 0, omitted.stderr
    assert omitted.stdout == dash.stdout and omitted.stdout.count("\n") > 100
    assert "params/lr" in omitted.stdout
    assert omitted.stderr == ""  # the table is the whole output: no "wrote N points" over a pipe


def test_without_o_a_terminal_gets_an_error_not_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd_export, "_stdout_is_terminal", lambda: True)
    result = CliRunner().invoke(cli, ["export", RUN])
    assert result.exit_code == 2 and result.stdout == ""
    assert "stdout is a terminal" in result.stderr and "-o FILE" in result.stderr and "-o -" in result.stderr
    assert CliRunner().invoke(cli, ["export", RUN, "-o", "-"]).exit_code == 0  # asked for: printed
    parquet = CliRunner().invoke(cli, ["export", RUN, "--format", "parquet"])
    assert parquet.exit_code == 2 and "parquet needs -o" in parquet.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_without_o_on_a_real_terminal_exit_2(tmp_path: Path) -> None:
    import pty

    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run(_cli("export", RUN), stdout=slave, stderr=subprocess.PIPE, env=_env(tmp_path), text=True,
                          timeout=120)
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    assert proc.returncode == 2 and "stdout is a terminal" in proc.stderr
    assert b"params/lr" not in b"".join(chunks)


def test_a_tree_names_how_many_runs_it_left_out_and_points_at_the_dataset() -> None:
    result = CliRunner().invoke(cli, ["export", str(RUNS), "--format", "csv"])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    listed = [line for line in lines if line.startswith("  ") and not line.startswith("  ...")]
    more = next(line for line in lines if line.startswith("  ... and "))
    total = int(lines[0].split(" holds ")[1].split(" runs")[0])
    assert len(listed) == 20 and more == f"  ... and {total - 20} more"
    assert f"the {total} runs of" in result.stderr and "--format parquet -o DIR" in result.stderr


@pytest.mark.parametrize(("fmt", "dash"), [("csv", ()), ("json", ("-o", "-"))])
def test_piped_to_head_stderr_claims_nothing_and_exit_0(fmt: str, dash: tuple[str, ...], tmp_path: Path) -> None:
    """`export RUN | head -1` in real processes: one line arrives, the export exits 0, stderr stays empty (the old
    code said it wrote every point, although head read one line)."""
    head = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert head.stdin is not None and head.stdout is not None
    proc = subprocess.Popen(_cli("export", RUN, "--format", fmt, *dash), stdout=head.stdin, stderr=subprocess.PIPE,
                            env=_env(tmp_path), text=True)
    head.stdin.close()
    first = head.stdout.read()
    head.wait(timeout=60)
    _out, err = proc.communicate(timeout=120)
    assert first.count("\n") == 1 and (first.startswith('"tag"') or first.startswith("["))
    assert proc.returncode == 0 and err == ""


def test_a_file_still_gets_its_summary(tmp_path: Path) -> None:
    out = tmp_path / "scalars.csv"
    result = CliRunner().invoke(cli, ["export", RUN, "-o", str(out)])
    assert result.exit_code == 0 and result.stderr.startswith("pimm-inspect: wrote ")
    assert out.read_text().count("\n") > 100
