"""Hostile round four: names and strings a colleague's run holds, through every command, the report and the UI.

The runs come from ``tests/hostile4_tree.py`` (committed fixture runs of every kind, their strings made hostile,
event files written by tensorboardX) and from folders given hostile names here. Each test names what leaked before
its fix.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from tests.test_cli_terminal_safety import foreign_controls
from tests.test_hostile_exports import tb_run

RAW_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
FORGED = re.compile(r"(?m)^run0 info all\.clear")
"""The line a folder name with a newline tries to forge."""

HOSTILE_FOLDER_NAMES = {
    "newline": b"nl\nrun0 info all.clear",
    "osc8": b"osc\x1b]8;;https:evil.example\x1b\\click\x1b]8;;\x1b\\",
    "carriage-return": b"cr\rover",
    "bidi": "bidi\u202egnp".encode(),
    "markup": b"[link=https:x]L[bold]",
    "not-utf8": b"bad\xff\xfe",
}


def _inert(text: str) -> list[str]:
    """What in ``text`` is not inert: control characters, raw invisible/bidi characters, a forged line."""
    return (foreign_controls(text) + [f"raw {c!r}" for c in RAW_INVISIBLE.findall(text)]
            + (["forged line"] if FORGED.search(text) else []))


@pytest.fixture(scope="module")
def named_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("names")
    runs = {}
    for label, name in HOSTILE_FOLDER_NAMES.items():
        tb_run(root / "tmp", ["train/loss"])
        os.rename(os.fsencode(root / "tmp"), os.fsencode(root) + b"/" + name)
        runs[label] = Path(os.fsdecode(os.fsencode(root) + b"/" + name))
    return runs


@pytest.mark.parametrize("label", HOSTILE_FOLDER_NAMES)
def test_config_of_a_run_without_one_names_the_folder_inert(named_runs: dict[str, Path], label: str) -> None:
    """Was: ``pimm-inspect: <the folder name, raw> has no config document``: ESC, CR, bidi and a forged line."""
    run = str(named_runs[label])
    for args in (["config", run], ["config", "--kind", "config_py", run], ["config", "--attempt", "2", run]):
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "has no" in result.stderr
        assert not _inert(result.stderr), (args, _inert(result.stderr))


@pytest.mark.parametrize("label", HOSTILE_FOLDER_NAMES)
def test_every_command_on_a_hostile_folder_name_prints_it_inert(named_runs: dict[str, Path], label: str) -> None:
    run = str(named_runs[label])
    for args in (["show", run], ["check", "--brief", run], ["url", run], ["curves", run, "--width", "80"],
                 ["compare", "--brief", run, run], ["report", run, "-o", "-", "--format", "md"]):
        result = CliRunner().invoke(cli, ["--no-cache", *args])
        assert result.exit_code in (0, 1), (args, result.output)
        for text in (result.stdout, result.stderr):
            assert not _inert(text), (args, _inert(text))


def test_stderr_cleans_every_diagnostic(capsys: pytest.CaptureFixture[str]) -> None:
    """The one rule for diagnostics: a message that forgot ``clean`` still reaches stderr inert."""
    from pimm_inspect.cli._common import stderr

    stderr("pimm-inspect: \x1b]8;;https://evil.example/\x1b\\x\x1b]8;;\x1b\\ \x9b2J \u202eexe\nsecond line")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x9b" not in err and "\u202e" not in err
    assert err == "pimm-inspect: \\x1b]8;;https://evil.example/\\x1b\\x\\x1b]8;;\\x1b\\ \\x9b2J \\u202eexe\nsecond line\n"
