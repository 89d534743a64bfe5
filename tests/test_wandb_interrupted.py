"""A W&B run stopped by Ctrl-C (SIGINT) ended with a non-zero exit code: stopped, not crashed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from pimm_inspect.sources.wandb import read
from pimm_inspect.sources.wandb._files import ConsoleCollector, RunFiles
from pimm_inspect.sources.wandb.reader import _interrupt, _status

CONSOLE = Path(__file__).resolve().parents[1] / "fixtures" / "wandb_console"


def _folder(shape: str) -> Path:
    return next((CONSOLE / shape / "wandb").glob("offline-run-*"))


def test_an_uncaught_keyboard_interrupt_is_a_stop_not_a_crash() -> None:
    """Was: wandb 0.31's run interrupted by SIGINT (exit code 255, a traceback ending in KeyboardInterrupt) was said
    to have crashed (run.crashed, an error), as were the public marc-harary/lit-lm W&B 2025 folders that Lightning
    shut down after Ctrl-C ('Detected KeyboardInterrupt, attempting graceful shutdown ...', exit code 1)."""
    folder = _folder("interrupted")
    result = read(folder, folder.name).value
    assert result is not None and result.exit_code == 255
    assert result.status == "stopped"
    assert result.interrupted == f"{folder.name}/files/output.log:1: KeyboardInterrupt"
    out = CliRunner().invoke(cli, ["--no-cache", "check", "--json", str(CONSOLE / "interrupted")])
    codes = [f["code"] for run in json.loads(out.stdout)["runs"] for f in run["findings"]]
    assert "run.crashed" not in codes
    show = json.loads(CliRunner().invoke(cli, ["--no-cache", "show", "--json", str(CONSOLE / "interrupted")]).stdout)
    assert show["runs"][0]["status"] == "stopped"
    attempt = show["runs"][0]["attempts"][0]
    assert attempt["ended"] == "stopped"  # as the run: one claim, from output.log
    assert attempt["end_detail"] == f"interrupted (wandb/{folder.name}/files/output.log:1: KeyboardInterrupt), exit code 255"


def test_a_crash_stays_a_crash() -> None:
    for shape in ("tqdm_bar", "rank_prefix"):
        folder = _folder(shape)
        result = read(folder, folder.name).value
        assert result is not None and result.status == "crashed" and result.interrupted is None


def _files(text: str) -> RunFiles:
    collector = ConsoleCollector("files/output.log")
    collector.feed("stdout", text, None)
    collector.close()
    return RunFiles(output_log=collector)


def test_the_interrupt_must_be_the_consoles_last_word() -> None:
    lightning = "Epoch 0: 10%\nDetected KeyboardInterrupt, attempting graceful shutdown ...\n"
    assert _interrupt(_files(lightning), [], 0, None, ()) == (
        "files/output.log:2: Detected KeyboardInterrupt, attempting graceful shutdown")
    # An interrupt before a later traceback of a real error: that error ended the run.
    later_crash = ((("files/output.log", 3, "RuntimeError: CUDA out of memory"),))
    assert _interrupt(_files(lightning + "Traceback (most recent call last):\n"), [], 0, None, later_crash) is None
    assert _status(1, None) == "crashed" and _status(1, "x") == "stopped" and _status(0, "x") == "finished"
    assert _status(None, "x") == "unknown"
