"""``check --watch`` prints each finding once as it appears; ``--stalled-after`` exits 3 for a run that logged nothing
for too long; Ctrl-C and a closed pipe end the watch cleanly. The run folder is a temp copy appended to between polls
(the watch's ``sleep`` is replaced), so nothing waits."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli import main as cli_main
from pimm_inspect.cli import watch
from pimm_inspect.cli.main import cli

ROLLBACK_LOG = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_rollback" / "train.log"
LINES = ROLLBACK_LOG.read_text().splitlines(keepends=True)
ATTEMPT_2 = 164  # 0-based index of attempt 2's "=> Loading config" line
PAST_75 = 284  # attempt 2 has replayed up to step 75 (its Train: [4/5][15/20] line), not yet ended


@pytest.fixture
def live_run(tmp_path, monkeypatch):
    """A run folder holding attempt 1 of e2_rollback; each ``sleep`` of the watch appends the next part."""
    run = tmp_path / "run"
    run.mkdir()
    log = run / "train.log"
    log.write_text("".join(LINES[:ATTEMPT_2]))
    parts = ["".join(LINES[ATTEMPT_2:PAST_75]), "", "".join(LINES[PAST_75:])]
    slept = []

    def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        if parts:
            with log.open("a") as fh:
                fh.write(parts.pop(0))

    monkeypatch.setattr(watch, "sleep", fake_sleep)
    return run, slept


def _check(*args: str):
    return CliRunner().invoke(cli, ["check", *map(str, args)], catch_exceptions=False)


def test_watch_prints_each_new_finding_once_as_it_appears(live_run):
    run, slept = live_run
    result = _check("--watch", "--interval", "7", "--max-polls", "10", run)
    lines = result.stdout.splitlines()
    # Poll 1: attempt 1 alone, no finding. Poll 2: attempt 2 rolled back to 50 and replayed 51-75. Poll 3: nothing
    # new. Poll 4: attempt 2 completed, so every run has ended and the watch stops (exit 1: warnings).
    assert lines == ["run warning resume.rollback attempt 2 resumed from step 50 after attempt 1 reached 75: rolled back "
                     "25 steps",
                     "run warning steps.replayed steps 51-75 were trained by attempt 1 and again by attempt 2"]
    assert slept == [7.0, 7.0, 7.0]
    assert result.exit_code == 1


def test_watch_json_is_one_object_per_line(live_run):
    run, _slept = live_run
    result = _check("--watch", "--json", "--interval", "0", "--max-polls", "10", "--fail-on", "never", run)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["schema_version"], e["event"], e["path"], e["finding"]["code"]) for e in events] == [
        (1, "finding", ".", "resume.rollback"), (1, "finding", ".", "steps.replayed")]
    assert events[0]["finding"]["steps"] == [51, 75]
    assert result.exit_code == 0


def test_stalled_after_exits_3_naming_the_run(live_run, monkeypatch):
    run, slept = live_run
    written = (run / "train.log").stat().st_mtime
    monkeypatch.setattr(watch, "now", lambda: written + 3600)  # an hour without a write
    result = _check("--watch", "--stalled-after", "30m", "--interval", "0", "--max-polls", "10", run)
    assert result.exit_code == 3
    assert result.stdout.startswith("run stalled nothing logged for 1h00m00s (longer than 30m00s; last write ")
    assert slept == []  # the first poll found it
    (event,) = [json.loads(line) for line in _check("--watch", "--json", "--stalled-after", "30m", run).stdout.splitlines()]
    assert (event["event"], event["silent_s"], event["stalled_after_s"]) == ("stalled", 3600.0, 1800.0)


def test_stalled_after_without_watch(live_run, monkeypatch):
    run, _slept = live_run
    written = (run / "train.log").stat().st_mtime
    monkeypatch.setattr(watch, "now", lambda: written + 3600)
    stalled = _check("--stalled-after", "30m", "--json", run)
    assert stalled.exit_code == 3
    (doc,) = json.loads(stalled.stdout)["runs"]
    assert (doc["stalled"], doc["silent_s"]) == (True, 3600.0)
    fresh = _check("--stalled-after", "2h", "--json", run)
    assert fresh.exit_code == 0 and json.loads(fresh.stdout)["runs"][0]["stalled"] is False


def test_an_ended_run_is_never_stalled(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_text("".join(LINES))  # attempt 2 completed
    monkeypatch.setattr(watch, "now", lambda: (run / "train.log").stat().st_mtime + 86400)
    result = _check("--stalled-after", "1s", "--fail-on", "never", run)
    assert result.exit_code == 0 and "stalled" not in result.stdout


@pytest.mark.parametrize("text,seconds", [("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("2h", 7200.0),
                                          ("1d", 86400.0), ("1h30m", 5400.0)])
def test_durations(text, seconds):
    assert watch.parse_duration(text) == seconds


def test_a_bad_duration_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(cli, ["check", "--stalled-after", "soon", str(tmp_path)])
    assert result.exit_code == 2 and "not a duration" in result.output


def test_ctrl_c_ends_the_watch_with_one_line(live_run, monkeypatch, capsys):
    run, _slept = live_run

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(watch, "sleep", interrupted)
    monkeypatch.setattr(sys, "argv", ["pimm-inspect", "check", "--watch", "--interval", "0", str(run)])
    assert cli_main._run() == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


class _ClosedPipe(io.StringIO):
    """stdout whose reader went away after the first line (``| head -1``)."""

    def write(self, text: str) -> int:
        if self.getvalue():
            raise BrokenPipeError(32, os.strerror(32))
        return super().write(text)

    def isatty(self) -> bool:
        return False


def test_a_closed_pipe_ends_the_watch_quietly(live_run, monkeypatch, capsys):
    run, _slept = live_run
    (run / "train.log").write_text("".join(LINES[:PAST_75]))  # two findings at the first poll
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    monkeypatch.setattr(sys, "argv", ["pimm-inspect", "check", "--watch", "--json", "--interval", "0", str(run)])
    assert cli_main._run() == 0
    assert capsys.readouterr().err == ""


def test_watch_on_a_tree_picks_up_a_run_that_appears(tmp_path, monkeypatch):
    tree = tmp_path / "exp"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "train.log").write_text("".join(LINES[:ATTEMPT_2]))  # one attempt, not ended, no finding
    calls = []

    def new_run(_seconds: float) -> None:
        calls.append(_seconds)
        if len(calls) == 1:
            (tree / "b").mkdir()
            (tree / "b" / "train.log").write_text("".join(LINES[:PAST_75]))

    monkeypatch.setattr(watch, "sleep", new_run)
    result = _check("--watch", "--interval", "0", "--max-polls", "3", tree)
    assert [line.split(" ", 3)[:3] for line in result.stdout.splitlines()] == [
        ["b", "warning", "resume.rollback"], ["b", "warning", "steps.replayed"]]
    assert len(calls) == 2 and result.exit_code == 1


def test_brief_keeps_stdout_to_finding_lines_when_stalled(live_run, monkeypatch):
    run, _slept = live_run
    monkeypatch.setattr(watch, "now", lambda: (run / "train.log").stat().st_mtime + 3600)
    result = CliRunner().invoke(cli, ["check", "--brief", "--stalled-after", "30m", str(run)])
    assert result.exit_code == 3
    assert result.stdout == ""  # attempt 1 alone has no finding
    assert "run stalled nothing logged for 3600 s (longer than 1800 s)" in result.stderr
