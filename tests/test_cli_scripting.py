"""Issue 13's CLI items: output that scripts can rely on and charts that say what they show."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "fixtures" / "runs"


def run_cli(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


def json_findings(path: Path) -> list[dict]:
    return json.loads(run_cli("check", path, "--json", "--fail-on", "never").stdout)["runs"][0]["findings"]


@pytest.mark.parametrize("name", ["e2_crashed", "e2_rollback", "e1_legacy_cursor"])
def test_check_brief_is_one_whole_unpadded_line_per_finding(name):
    result = run_cli("check", "--brief", RUNS / name, "--fail-on", "never")
    lines = result.stdout.splitlines()
    findings = json_findings(RUNS / name)
    assert len(lines) == len(findings)  # no wrapped continuation lines, no blank lines
    for line, finding in zip(lines, findings):
        assert line == f"{name} {finding['severity']} {finding['code']} {finding['message']}"  # unpadded, uncut
    assert max(len(line) for line in lines) > 140 or name != "e2_crashed"  # the 352-character OOM message


def test_check_brief_of_a_tree_has_the_path_on_every_line():
    result = run_cli("check", "--brief", RUNS, "--fail-on", "never")
    lines = result.stdout.splitlines()
    assert all(re.match(r"^\S+ (error|warning|info) \S+ ", line) for line in lines), lines[:5]  # findings only
    assert not any("no findings" in line for line in lines)
    assert "pimm-inspect: e2_clean no findings\n" in result.stderr  # runs without findings are named for people
    assert "runs," in result.stderr and "runs," not in result.stdout  # the summary is for people


def test_min_severity_says_what_it_hid():
    text = run_cli("check", RUNS / "e2_rollback", "--min-severity", "error").stdout
    assert "no findings at error or above; 2 below" in text
    assert "no findings\n" in run_cli("check", RUNS / "e2_clean", "--min-severity", "error").stdout
    brief = run_cli("check", "--brief", RUNS / "e2_rollback", "--min-severity", "error")
    assert brief.stdout == ""  # stdout is finding lines only (issue 24)
    assert brief.stderr == "pimm-inspect: e2_rollback no findings at error or above; 2 below\n"


def test_finding_messages_are_never_cut():
    warning = ("Checkpoint is mid-epoch but has no dataloader state; resuming from the beginning of the saved epoch "
               "and replaying already-completed batches.")
    assert warning in (RUNS / "e1_legacy_cursor" / "train.log").read_text()
    (inexact,) = [f for f in json_findings(RUNS / "e1_legacy_cursor") if f["code"] == "resume.inexact"]
    assert inexact["message"].endswith(warning)  # JSON carries the whole line (it was cut to 120 characters)
    assert warning in run_cli("check", "--brief", RUNS / "e1_legacy_cursor").stdout


def test_show_cuts_a_long_ending_at_a_word_boundary():
    from pimm_inspect.report.safe_text import shorten

    assert shorten("alpha beta gamma", 100) == "alpha beta gamma"
    assert shorten("alpha beta gamma delta", 14) == "alpha beta…"
    assert len(shorten("x" * 300, 120)) == 120  # one long word: cut, still marked
    text = run_cli("show", RUNS / "e2_crashed").stdout
    ended = re.search(r"crashed: (.*?)…", " ".join(line.strip() for line in text.splitlines()), re.S)
    assert ended, text
    words = set(json.loads(run_cli("show", RUNS / "e2_crashed", "--json").stdout)["runs"][0]["attempts"][0]
                ["end_detail"].split())
    assert ended.group(1).split()[-1] in words  # the last word shown is whole


def test_curves_width_and_height_are_honoured_when_piped():
    for width in (60, 150):
        out = run_cli("curves", RUNS / "e2_rollback", "--tag", "train_batch/loss", "--width", width,
                      "--height", 18).stdout
        chart, legend, note = out.split("\n\n")  # the legend follows the chart after a blank line, then the note
        assert max(len(line) for line in chart.splitlines()) == width
        assert len(chart.splitlines()) == 18
        assert legend.splitlines() == ["  •• train_batch/loss (attempt 1)", "  ++ train_batch/loss (attempt 2)"]
        assert " ".join(note.split()).startswith("Steps written more than once: 51-75: 2 copies (#1 #2);")
        assert max(len(line) for line in note.splitlines()) <= width


def test_curves_colour_follows_force_color_and_no_color():
    args = ("curves", RUNS / "e2_rollback", "--tag", "train_batch/loss", "--width", 80)
    piped = run_cli(*args, env={"FORCE_COLOR": None, "NO_COLOR": None}).stdout
    forced = run_cli(*args, env={"FORCE_COLOR": "1", "NO_COLOR": None}).stdout
    both = run_cli(*args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert "\x1b[" not in piped and "\x1b[" not in both
    assert "\x1b[" in forced
    colours = set(re.findall(r"\x1b\[38;5;(\d+)m──", forced))  # legend swatches
    assert len(colours) == 2  # attempt 1 and attempt 2 of the tag are told apart by colour


def test_curves_legend_names_every_line_with_its_own_marker():
    out = run_cli("curves", RUNS / "e2_rollback", "--tag", "*", "--width", 100, "--height", 20,
                  env={"FORCE_COLOR": None, "NO_COLOR": None}).stdout
    legend = re.findall(r"^  (\S\S) (.+)$", out, re.M)
    tags = json.loads(run_cli("show", RUNS / "e2_rollback", "--json").stdout)["runs"][0]["scalars"]
    assert len(tags) == 14
    labels = [label for _marker, label in legend]
    assert len(labels) == 28 and {label.split(" (attempt")[0] for label in labels} == set(tags)
    markers = [marker[0] for marker, _label in legend]
    assert len(set(markers)) == len(markers)  # without colour every line has its own character
    chart = out.split("\n\n")[0]
    assert markers[-1] in chart and markers[-2] in chart  # the chart draws with them (the last on top)


def test_curves_title_names_the_x_axis_and_scale():
    out = run_cli("curves", RUNS / "e2_rollback", "--tag", "train_batch/loss", "--x", "relative", "--log-y",
                  "--width", 100).stdout
    assert "x: hours since the first point  y: log  policy=all" in out.splitlines()[0]
    out = run_cli("curves", RUNS / "e2_rollback", "--tag", "train_batch/loss", "--width", 100).stdout
    assert "x: global step  y: linear" in out.splitlines()[0]


def test_ls_json_has_the_last_step_the_table_shows():
    doc = json.loads(run_cli("ls", RUNS, "--json").stdout)
    table = run_cli("ls", RUNS).stdout
    for run in doc["runs"]:
        row = next(line for line in table.splitlines() if line.split()[0] == run["path"])
        shown = row.split()[5]  # run kind era status attempts last-step ...
        assert shown == ("-" if run["last_step"] is None else str(run["last_step"])), row
    by_path = {r["path"]: r for r in doc["runs"]}
    assert by_path["e2_rollback"]["last_step"] == 100 and by_path["e2_crashed"]["last_step"] == 40


def test_started_at_iso_says_whether_the_clock_has_a_zone():
    attempts = json.loads(run_cli("show", RUNS / "e2_rollback", "--json").stdout)["runs"][0]["attempts"]
    assert [(a["started_at"], a["started_at_iso"]) for a in attempts] == [
        ("2026-07-16 14:30:09,501", "2026-07-16T14:30:09.501"),  # train.log: local clock, no zone recorded
        ("2026-07-16 15:01:12,493", "2026-07-16T15:01:12.493")]
    (plain,) = json.loads(run_cli("show", RUNS / "tb_plain", "--json").stdout)["runs"][0]["attempts"]
    assert plain["started_at_iso"] == plain["started_at"].replace(" ", "T") + "+00:00"  # an event file's wall clock
    assert f"{plain['started_at']} UTC" in run_cli("show", RUNS / "tb_plain").stdout


def test_show_text_has_the_launch_command():
    meta = json.loads((RUNS / "e2_rollback" / "run_metadata.json").read_text())
    text = run_cli("show", RUNS / "e2_rollback").stdout
    assert f"launch {meta['launch_command']}" in text


@pytest.mark.parametrize("as_json", [False, True])
def test_a_missing_path_still_prints_the_valid_run(as_json):
    args = ["check", RUNS / "e2_rollback", "/missing/run"] + (["--json"] if as_json else [])
    result = run_cli(*args)
    assert result.exit_code == 2
    assert "/missing/run: no such file or directory" in result.stderr
    if as_json:
        (run,) = json.loads(result.stdout)["runs"]
        assert {f["code"] for f in run["findings"]} == {"steps.replayed", "resume.rollback"}
    else:
        assert "resume.rollback" in result.stdout
    shown = run_cli("show", "--json", RUNS / "e2_clean", "/missing/run")
    assert shown.exit_code == 2 and [r["name"] for r in json.loads(shown.stdout)["runs"]] == ["e2_clean"]
    listed = run_cli("ls", RUNS / "e2_clean", "/missing/run")
    assert listed.exit_code == 2 and "e2_clean" in listed.stdout
    assert run_cli("check", "/missing/a", "/missing/b").stdout == ""  # nothing valid: nothing printed


def test_a_mistyped_command_is_suggested(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("chekc", RUNS / "e2_clean")
    assert result.exit_code == 2 and "Did you mean 'check'" in result.stderr
    assert "no such file" not in result.stderr
    shutil.copytree(RUNS / "e2_clean", tmp_path / "chekc")  # a folder by that name is a PATH, as before
    result = run_cli("chekc")
    assert result.exit_code == 0 and "chekc" in result.stdout and "pimm" in result.stdout
    assert run_cli("no_such_run_here").exit_code == 2  # far from every command: still a missing path


def test_config_kind_absent_is_a_usage_error_naming_the_documents_the_run_has():
    """Issue 24: `config --kind wandb_config` on a run without one printed another document and exited 0."""
    result = run_cli("config", RUNS / "hf_clean", "--kind", "wandb_config")
    assert result.exit_code == 2 and result.stdout == ""
    assert "hf_clean has no wandb_config document (it has: hf_training_args, model_config)" in result.stderr


def test_config_prints_first_the_document_the_cfg_filter_reads():
    """Issue 19: one rule picks a run's config: `config RUN --json` leads with `query_config`'s document."""
    import pimm_inspect
    from pimm_inspect.analysis.configs import query_config

    for name in ("hf_clean", "e0_legacy", "e2_clean"):
        doc = query_config(pimm_inspect.load_run(RUNS / name))
        assert doc is not None, name
        printed = json.loads(run_cli("config", RUNS / name, "--json").stdout)
        assert (printed["source"], printed["documents"][0]["kind"]) == (doc.path, doc.kind), name


@pytest.mark.parametrize("inside", ["train.log", "model", "model/model_best.pth"])
def test_a_path_inside_a_run_names_the_run(inside: str) -> None:
    """Issue 24: ``RUN/train.log`` or ``RUN/model`` got "no run found" (or was taken for a run): say whose it is."""
    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    run = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_rollback"
    assert (run / inside).exists()
    for command in ("show", "check", "ls"):
        result = CliRunner().invoke(cli, [command, str(run / inside)])
        assert result.exit_code == 2, (command, result.output)
        assert f"is inside the run {run}" in result.stderr and result.stdout == ""


def test_an_hf_checkpoint_folder_is_part_of_its_run(tmp_path: Path) -> None:
    import pimm_inspect
    from pimm_inspect.session import NotARunError

    run = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "hf_resumed"
    checkpoint = next(p for p in sorted(run.iterdir()) if p.name.startswith("checkpoint-"))
    with pytest.raises(NotARunError) as raised:
        pimm_inspect.load_run(checkpoint)
    assert raised.value.inside == run and "load that run" in str(raised.value)
    with pytest.raises(FileNotFoundError):
        pimm_inspect.load_run(tmp_path / "typo")
    with pytest.raises(NotARunError, match="discover"):
        pimm_inspect.load_run(run.parent)
