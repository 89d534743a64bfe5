"""Issue 14: no command lets a string from a run file reach the terminal as a control sequence or as Rich markup.

A hostile run (tests/hostile_run.py) carries ESC, OSC 52/0, CSI, DCS, C1 and BEL plus Rich markup (`[/x]`,
`[bold red]`, `[link=...]`) in its folder name, TensorBoard tags, a train.log tag, checkpoint file name, unsafe
pickle global, W&B run id, host, git commit, created_at, launch command, traceback lines and config keys. Every
command runs on it through CliRunner (with and without FORCE_COLOR) and in a real subprocess on a pseudo-terminal;
the only ESC allowed in the output starts an SGR colour sequence, and none of the data's own sequences survive.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from tests import hostile_run

ROOT = Path(__file__).resolve().parents[1]
SGR = re.compile(r"\x1b\[[0-9;]*m")
DATA_SEQUENCES = ("\x1b[5m", "\x1b[38;5;199m", "\x1b[2J", "\x1b]", "\x1bP", "\x1b\\")
"""Sequences only the hostile data holds (Rich never writes blink, colour 199, clear screen, OSC, DCS or ST)."""


def foreign_controls(text: str, tty: bool = False) -> list[str]:
    """Control characters in ``text`` that are not part of an SGR sequence (nor newline/tab; CR on a tty)."""
    allowed = "\n\t" + ("\r" if tty else "")
    rest = SGR.sub("", text)
    bad = [f"{ch!r} at {i}: {rest[max(0, i - 30):i + 10]!r}" for i, ch in enumerate(rest)
           if (ord(ch) < 0x20 and ch not in allowed) or 0x7f <= ord(ch) <= 0x9f]
    return bad + [f"data sequence {seq!r}" for seq in DATA_SEQUENCES if seq in text]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hostile")
    run = hostile_run.build(root)
    plain = hostile_run.build(root, hostile=False)
    return {"root": root, "run": run, "plain": plain, "out": tmp_path_factory.mktemp("out") / "points.csv"}


def commands(t: dict[str, Path]) -> list[list[str]]:
    root, run, plain = str(t["root"]), str(t["run"]), str(t["plain"])
    return [
        ["ls", root], ["ls", run], ["show", root], ["show", run], ["show", run, "/missing/run"],
        ["check", root], ["check", "--brief", root], ["check", "--min-severity", "error", run],
        ["curves", run, "--tag", "*", "--width", "100", "--height", "20"],
        ["curves", run, "--tag", "loss*", "--x", "relative", "--log-y"], ["curves", run],
        ["curves", run, "--tag", "nothing*"], ["curves", root],
        ["config", run], ["config", run, "--flat"], ["config", run, "--kind", "config_py"],
        ["config", run, "--diff", plain], ["config", root],
        ["url", run], ["export", run, "-o", str(t["out"])], [root],
    ]


def json_commands(t: dict[str, Path]) -> list[list[str]]:
    root, run = str(t["root"]), str(t["run"])
    return [["ls", "--json", root], ["show", "--json", root], ["check", "--json", root],
            ["curves", run, "--json", "--tag", "*"], ["config", run, "--json"], ["url", run, "--json"]]


@pytest.mark.parametrize("force_color", [False, True], ids=["plain", "FORCE_COLOR"])
def test_every_command_prints_hostile_strings_inert(tree, force_color):
    env = {"FORCE_COLOR": "1", "NO_COLOR": None} if force_color else {"FORCE_COLOR": None, "NO_COLOR": None}
    saw_sgr = False
    for args in commands(tree):
        result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)  # a MarkupError would raise here
        assert result.exit_code in (0, 1, 2), (args, result.exit_code)
        for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
            assert not foreign_controls(text), (args, stream, foreign_controls(text)[:5])
        saw_sgr |= bool(SGR.search(result.stdout))
    assert saw_sgr == force_color  # the colour check above had colour to look at


def test_hostile_strings_are_shown_as_escapes_and_literal_markup(tree):
    show = CliRunner().invoke(cli, ["show", str(tree["run"])], catch_exceptions=False).stdout
    flat = show.replace("\n", "")
    assert "loss\\x1b]52;c;cHduZWQ=" in flat  # the OSC 52 tag is listed, readable, inert
    assert "val/[/x][bold red]tag[/]" in flat  # markup printed as text, not applied and not a crash
    assert "train_batch/[/x]" in flat  # the train.log tag `[/x]: 0.5`
    assert "\\x9b" in flat and "[link=https://evil.example]" in flat
    assert "id\\x1b]0;title\\x07[/x]" in flat  # the W&B run id
    ls = CliRunner().invoke(cli, ["ls", str(tree["root"])], catch_exceptions=False).stdout
    assert "run\\x1b]0;t\\x07\\x9b2J\\x1b[5m[bold red]B" in ls  # the folder name, whole
    check = CliRunner().invoke(cli, ["check", "--brief", str(tree["run"])], catch_exceptions=False).stdout
    assert "checkpoint.unsafe model/model_\\x1b]0;t" in check and "os\\x1b]0;t\\x07" in check


def test_json_keeps_the_data_exact_and_escaped(tree):
    for args in json_commands(tree):
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert not foreign_controls(result.stdout), (args, foreign_controls(result.stdout)[:3])
        json.loads(result.stdout)
    show = json.loads(CliRunner().invoke(cli, ["show", "--json", str(tree["run"])]).stdout)["runs"][0]
    assert hostile_run.TAG in show["scalars"] and hostile_run.MARKUP_TAG in show["scalars"]
    assert show["name"] == hostile_run.RUN_NAME
    assert show["provenance"]["host"] == "host" + hostile_run.HOSTILE  # JSON escapes, the value is unchanged


def test_csv_on_stdout_is_exact_when_piped(tree):
    """Piped, ``export -o -`` is a data stream for another program: the tags are written as they are
    (on a terminal the same command shows them cleaned: see the pseudo-terminal test)."""
    import csv
    import io

    result = CliRunner().invoke(cli, ["export", str(tree["run"]), "-o", "-"], catch_exceptions=False)
    tags = {row["tag"] for row in csv.DictReader(io.StringIO(result.stdout))}
    assert hostile_run.TAG in tags and hostile_run.MARKUP_TAG in tags


def _read_all(fd: int, sink: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return
        if not chunk:
            return
        sink.append(chunk)


def run_on_pty(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """``python -P -m pimm_inspect ARGS`` with stdout and stderr each on its own pseudo-terminal (120x40)."""
    import fcntl
    import pty
    import struct
    import termios

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")}
    env.update(TERM="xterm-256color", PYTHONPATH=str(ROOT), PYTHONSAFEPATH="1")
    masters, slaves = zip(*(pty.openpty() for _ in range(2)))
    for fd in slaves:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    sinks: list[list[bytes]] = [[], []]
    readers = [threading.Thread(target=_read_all, args=(m, s), daemon=True) for m, s in zip(masters, sinks)]
    for reader in readers:
        reader.start()
    proc = subprocess.Popen([sys.executable, "-P", "-m", "pimm_inspect", *args], stdin=subprocess.DEVNULL,
                            stdout=slaves[0], stderr=slaves[1], cwd=cwd, env=env)
    for fd in slaves:
        os.close(fd)
    code = proc.wait(timeout=120)
    for reader in readers:
        reader.join(timeout=10)
    for fd in masters:
        os.close(fd)
    out, err = (b"".join(s).decode("utf-8", "replace") for s in sinks)
    return code, out, err


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_real_terminal_gets_no_control_sequence_from_data(tree):
    run = str(tree["run"])
    cases = [["ls", str(tree["root"])], ["show", run], ["check", str(tree["root"])], ["check", "--brief", run],
             ["curves", run, "--tag", "*"], ["curves", str(tree["root"])], ["config", run, "--flat"],
             ["config", run, "--kind", "config_py"], ["url", run], ["export", run, "-o", "-"]]
    coloured = False
    for args in cases:
        code, out, err = run_on_pty(args, tree["root"])
        assert code in (0, 1, 2), (args, code, err[-2000:])
        assert "Traceback" not in err, (args, err[-2000:])
        for stream, text in (("stdout", out), ("stderr", err)):
            assert not foreign_controls(text, tty=True), (args, stream, foreign_controls(text, tty=True)[:5])
        coloured |= bool(SGR.search(out))
    assert coloured  # a terminal gets colour, so the SGR allowance above was exercised
    _code, csv_text, _err = run_on_pty(["export", run, "-o", "-"], tree["root"])
    assert "loss\\x1b]52;c;" in csv_text  # on a terminal the CSV shows the tag cleaned
