"""``compare`` and ``curves RUN... --attempt N``: runs and attempts side by side, exact values, through click's runner."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.report.plot_ticks import step_ticks, wall_ticks
from tests.test_hostile_exports import tb_run

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
TWICE = RUNS / "e2_requeued_twice"
"""Three attempts: 51-75 written three times (#1 #2 #3), 76-90 twice (#2 #3), every copy in the event files."""
LOSS = "train_batch/loss"


def run_cli(*args: object):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result


@pytest.fixture(scope="module")
def twice():
    return pimm_inspect.load_run(TWICE)


def _logged(run, tag: str, attempt: int) -> dict[int, float]:
    """What the attempt's event file holds for a tag, step -> value (the reference the output must equal)."""
    out: dict[int, float] = {}
    for s in run.series:
        if s.tag == tag and s.attempt == attempt and s.source.startswith("events."):
            out.update(zip(s.steps.tolist(), s.values.tolist()))
    return out


def test_compare_attempts_json_gives_every_copy_exactly(twice):
    result = run_cli("compare", TWICE, "--attempts", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["schema_version"], doc["compare"]) == (1, "attempts")
    (run,) = doc["runs"]
    assert [(a["index"], a["first_step"], a["last_step"], a["restore_step"]) for a in run["attempts"]] == \
        [(1, 1, 75, None), (2, 51, 90, 50), (3, 51, 100, 50)]
    three, two = run["replayed"]
    assert (three["first_step"], three["last_step"], three["copies"], three["attempts"]) == (51, 75, 3, [1, 2, 3])
    assert (two["first_step"], two["last_step"], two["copies"], two["attempts"]) == (76, 90, 2, [2, 3])
    loss = three["tags"][0]
    assert (loss["tag"], loss["per_step"], loss["writers"]) == (LOSS, True, [1, 2, 3])  # the per-step loss first
    assert loss["source"] == "tb_events"  # the event files' copies, as the curves draw them (not train.log's)
    assert [row["step"] for row in loss["rows"]] == list(range(51, 76))
    logged = {a: _logged(twice, LOSS, a) for a in (1, 2, 3)}
    for row in loss["rows"]:
        values = [logged[a][row["step"]] for a in (1, 2, 3)]
        assert row["values"] == values and row["copies"] == 3  # the doubles as logged, not rounded
        assert row["abs_diff"] == max(values) - min(values)
        assert row["rel_diff"] == pytest.approx((max(values) - min(values)) / max(abs(v) for v in values))
    assert loss["max_abs_diff"] == max(r["abs_diff"] for r in loss["rows"]) == pytest.approx(0.0055415332)
    assert loss["max_abs_diff_step"] == 75
    # The per-step tags come before the sparser epoch means, whose copies are compared after them.
    flags = [t["per_step"] for t in three["tags"]]
    assert flags == sorted(flags, reverse=True) and False in flags
    epoch = next(t for t in three["tags"] if t["tag"] == "train/loss")
    assert [r["step"] for r in epoch["rows"]] == [60] and epoch["rows"][0]["copies"] == 3
    (two_loss,) = [t for t in two["tags"] if t["tag"] == LOSS]
    assert two_loss["writers"] == [2, 3] and len(two_loss["rows"]) == 15
    assert all(r["values"] == [logged[2][r["step"]], logged[3][r["step"]]] for r in two_loss["rows"])


def test_compare_attempts_figure_is_the_replay_checks_figure(twice):
    """One like-with-like rule: the largest difference of the first (per-step) tag is what steps.replayed says."""
    doc = json.loads(run_cli("compare", TWICE, "--attempts", "--json").stdout)
    findings = [f for f in twice.findings if f.code == "steps.replayed"]
    for finding, replayed in zip(findings, doc["runs"][0]["replayed"]):
        said = re.search(r"the copies differ by up to (\S+) in (\S+) ", finding.explanation)
        assert said is not None
        first = replayed["tags"][0]
        assert first["tag"] == said.group(2)
        assert f"{first['max_abs_diff']:.4g}" == said.group(1)


def test_compare_attempts_text_prints_the_copies_and_differences(twice):
    result = run_cli("compare", TWICE, "--attempts", "--tag", LOSS, "--rows", "0")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Steps 51-75: 3 copies (#1 #2 #3)" in out and "Steps 76-90: 2 copies (#2 #3)" in out
    assert "train/loss" not in out  # --tag chooses the tags
    assert f"{LOSS} (per step; from tb_events): 25 steps with copies" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert [int(r[0]) for r in rows] == list(range(51, 91))
    logged = {a: _logged(twice, LOSS, a) for a in (1, 2, 3)}
    step75 = next(r for r in rows if r[0] == "75")
    assert [float(v) for v in step75[1:4]] == [logged[a][75] for a in (1, 2, 3)]  # exact: reads back the same
    assert step75[4] == "3" and float(step75[5]) == max(logged[a][75] for a in (1, 2, 3)) - min(
        logged[a][75] for a in (1, 2, 3))
    assert not any(line != line.rstrip() for line in out.splitlines())  # never padded
    cut = run_cli("compare", TWICE, "--attempts", "--tag", LOSS, "--rows", "6").stdout
    assert "... 19 more steps" in cut and "... 9 more steps" in cut


def test_compare_attempts_of_a_run_without_replays():
    result = run_cli("compare", RUNS / "e2_clean", "--attempts")
    assert result.exit_code == 0 and "No step was written more than once" in result.stdout
    doc = json.loads(run_cli("compare", RUNS / "e2_clean", "--attempts", "--json").stdout)
    assert doc["runs"][0]["replayed"] == []


def test_compare_runs_side_by_side_over_the_shared_steps():
    result = run_cli("compare", TWICE, RUNS / "e2_rollback", RUNS / "e2_clean", "--tag", LOSS, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["compare"] == "sides" and doc["policy"] == "newest"
    assert [s["label"] for s in doc["sides"]] == ["e2_requeued_twice", "e2_rollback", "e2_clean"]
    (loss,) = doc["tags"]
    assert loss["points"] == [100, 100, 75] and loss["shared_steps"] == 75  # e2_clean stops at 75
    newest = [pimm_inspect.load_run(p).scalars(LOSS, policy="newest").set_index("step")["value"]
              for p in (TWICE, RUNS / "e2_rollback", RUNS / "e2_clean")]
    for row in loss["rows"]:
        assert row["values"] == [float(s[row["step"]]) for s in newest]
        assert row["abs_diff"] == max(row["values"]) - min(row["values"])
    assert loss["rows"][0]["abs_diff"] == 0.0  # the same seed: step 1 agrees exactly
    oldest = json.loads(run_cli("compare", TWICE, RUNS / "e2_rollback", "--tag", LOSS, "--json",
                                "--policy", "oldest").stdout)["tags"][0]
    by_step = {r["step"]: r["values"] for r in oldest["rows"]}
    assert by_step[60] == [_logged(pimm_inspect.load_run(TWICE), LOSS, 1)[60],
                           _logged(pimm_inspect.load_run(RUNS / "e2_rollback"), LOSS, 1)[60]]
    text = run_cli("compare", TWICE, RUNS / "e2_clean", "--tag", LOSS, "--tag", "val/loss", "--brief").stdout
    assert "A = e2_requeued_twice" in text and "B = e2_clean" in text
    assert re.search(r"train_batch/loss: 75 shared steps, 1-75 \(steps logged: A 100, B 75\); largest difference", text)


def test_compare_a_folder_of_runs_compares_the_runs_under_it():
    doc = json.loads(run_cli("compare", RUNS / "tb_plain", "--tag", "loss", "--json").stdout)
    assert [s["label"] for s in doc["sides"]] == ["baseline", "lr-0.1"]
    (loss,) = doc["tags"]
    assert loss["shared_steps"] == 50 and loss["max_abs_diff_step"] == 44
    assert loss["rows"][0]["values"] == [2.38409161567688, 2.3131802082061768]


def test_compare_attempts_as_sides_and_usage_errors(twice):
    doc = json.loads(run_cli("compare", TWICE, "--attempt", "2", "--attempt", "3", "--tag", LOSS, "--json").stdout)
    assert [(s["label"], s["attempt"]) for s in doc["sides"]] == [("e2_requeued_twice attempt 2", 2),
                                                                 ("e2_requeued_twice attempt 3", 3)]
    (loss,) = doc["tags"]
    assert [r["step"] for r in loss["rows"]] == list(range(51, 91))
    assert loss["rows"][9]["values"] == [_logged(twice, LOSS, 2)[60], _logged(twice, LOSS, 3)[60]]
    missing = run_cli("compare", TWICE, "--attempt", "2", "--attempt", "7")
    assert missing.exit_code == 2 and "has no attempt 7 (attempts: 1, 2, 3)" in missing.stderr
    partly = run_cli("compare", TWICE, "--attempt", "2", "--attempt", "3", "--attempt", "7", "--tag", LOSS, "--brief")
    assert partly.exit_code == 2 and "has no attempt 7" in partly.stderr  # as a PATH without a run: the rest shown
    assert "A = e2_requeued_twice attempt 2" in partly.stdout and "40 shared steps, 51-90" in partly.stdout
    assert run_cli("compare", TWICE).exit_code == 2  # one run, nothing to compare it with
    assert run_cli("compare", TWICE, RUNS / "e2_clean", "--tag", "nope/*").exit_code == 2


def test_curves_overlays_runs_and_attempts_and_names_them(twice):
    doc = json.loads(run_cli("curves", TWICE, "--attempt", "1", "--attempt", "3", "--tag", LOSS, "--json").stdout)
    assert [(line["label"], line["attempt"]) for line in doc["lines"]] == [
        (f"e2_requeued_twice attempt 1: {LOSS}", 1), (f"e2_requeued_twice attempt 3: {LOSS}", 3)]
    one, three = doc["lines"]
    assert one["x"] == list(range(1, 76)) and one["y"] == [_logged(twice, LOSS, 1)[s] for s in range(1, 76)]
    assert three["x"] == list(range(51, 101))
    both = json.loads(run_cli("curves", TWICE, RUNS / "e2_rollback", "--tag", LOSS, "--policy", "newest",
                              "--json").stdout)
    assert [(line["run"], line["label"]) for line in both["lines"]] == [
        ("e2_requeued_twice", f"e2_requeued_twice: {LOSS}"), ("e2_rollback", f"e2_rollback: {LOSS}")]
    text = run_cli("curves", TWICE, "--attempt", "1", "--attempt", "2", "--tag", LOSS, "--width", 100,
                   "--height", 12).stdout
    assert f"e2_requeued_twice attempt 1: {LOSS}" in text and f"e2_requeued_twice attempt 2: {LOSS}" in text
    assert "e2_requeued_twice attempts 1, 2" in text  # the title
    single = json.loads(run_cli("curves", TWICE, "--tag", LOSS, "--json").stdout)
    assert [line["label"] for line in single["lines"]] == [f"{LOSS} (attempt {a})" for a in (1, 2, 3)]  # unchanged
    missing = run_cli("curves", TWICE, "--attempt", "9")
    assert missing.exit_code == 2 and "has no attempt 9" in missing.stderr
    partly = run_cli("curves", TWICE, "--attempt", "1", "--attempt", "9", "--tag", LOSS, "--width", 80)
    assert partly.exit_code == 2 and f"e2_requeued_twice attempt 1: {LOSS}" in partly.stdout


def test_names_in_legends_and_columns_are_data(tmp_path: Path):
    """Folder names with ESC or bytes that are not UTF-8 are escaped (name_text, then clean), never raw."""
    tb_run(tmp_path / "a" / "run", ["loss"])
    tb_run(tmp_path / "b" / "run", ["loss"])
    tb_run(tmp_path / "esc\x1b[31m", ["loss"])
    raw = os.fsencode(tmp_path) + b"/bytes_\xff"
    os.rename(os.fsencode(tb_run(tmp_path / "plain", ["loss"])), raw)
    paths = [tmp_path / "a" / "run", tmp_path / "b" / "run", tmp_path / "esc\x1b[31m", os.fsdecode(raw)]
    doc = json.loads(run_cli("--no-cache", "compare", *paths, "--json").stdout)
    assert [s["label"] for s in doc["sides"]] == ["a/run", "b/run", "esc\x1b[31m", "bytes_\\xff"]
    assert doc["tags"][0]["rows"][2]["values"] == [-2.0] * 4 and doc["tags"][0]["max_abs_diff"] == 0.0
    for command in (["compare", *paths], ["curves", *paths, "--width", 80]):
        out = run_cli("--no-cache", *command).stdout
        assert "\x1b" not in out and "esc\\x1b[31m" in out and "bytes_\\xff" in out and "a/run" in out, command


def test_step_ticks_are_whole_steps():
    ticks, labels = step_ticks(5.0, 30.0, 8)
    assert labels == ["5", "10", "15", "20", "25", "30"] and ticks == [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    assert step_ticks(1.0, 3.0, 8)[1] == ["1", "2", "3"]
    assert step_ticks(7.0, 7.0, 8)[1] == ["7"]
    out = run_cli("curves", RUNS / "hf_clean", "--width", 100, "--height", 8).stdout  # plotext gave 11.2, 17.5
    axis = out.splitlines()[out.splitlines().index(next(l for l in out.splitlines() if "└" in l)) + 1].split()
    assert axis == ["5", "10", "15", "20", "25", "30"]


def test_wall_ticks_read_as_utc_times():
    ticks, labels, title = wall_ticks(1784361614.7, 1784365355.7, 6)  # 2026-07-18 08:00:14 to 09:02:35 UTC
    assert labels == ["08:15", "08:30", "08:45", "09:00"] and title == "wall clock (UTC, 2026-07-18)"
    assert all(t % 900 == 0 for t in ticks)
    _t, days, title = wall_ticks(1784361614.7, 1784361614.7 + 3 * 86400, 6)
    assert days[0] == "07-18 12:00" and title == "wall clock (UTC, 2026-07-18 to 2026-07-21)"
    out = run_cli("curves", TWICE, "--tag", LOSS, "--x", "wall", "--width", 100, "--height", 10).stdout
    assert "1784" not in out and "wall clock (UTC, 2026-07-18)" in out and "08:30" in out
    assert np.isfinite(ticks).all()


def test_session_compare_is_the_commands_comparison(twice):
    from pimm_inspect.session import default_session

    session = default_session()
    sides = session.compare([twice, RUNS / "e2_rollback"], tags=[LOSS])
    (loss,) = sides.tags
    doc = json.loads(run_cli("compare", TWICE, RUNS / "e2_rollback", "--tag", LOSS, "--json").stdout)["tags"][0]
    assert loss.steps.tolist() == [r["step"] for r in doc["rows"]] and loss.max_abs_diff == doc["max_abs_diff"]
    assert loss.values[:, 0].tolist() == [r["values"][0] for r in doc["rows"]]
    copies = session.compare_attempts(twice, tags=[LOSS])
    assert [(r.replayed.first_step, r.tags[0].writers, int(r.tags[0].copies.min())) for r in copies.ranges] == [
        (51, (1, 2, 3), 3), (76, (2, 3), 2)]
    with pytest.raises(ValueError, match="no attempt 4"):
        session.compare([twice], attempts=[1, 4])


def test_python_api_compare(twice):
    sides = pimm_inspect.compare([TWICE, RUNS / "e2_clean"], tags=[LOSS])
    assert [s.label for s in sides.sides] == ["e2_requeued_twice", "e2_clean"] and sides.tags[0].steps.size == 75
    first = pimm_inspect.compare_attempts(twice, tags=[LOSS]).ranges[0].tags[0]
    assert first.values[24].tolist() == [_logged(twice, LOSS, a)[75] for a in (1, 2, 3)] and first.present.all()


def test_hostile_names_and_tags_stay_inert(tmp_path: Path):
    """Control sequences and markup in a run's folder name and tags reach neither compare nor the overlay raw."""
    from tests import hostile_run
    from tests.test_cli_terminal_safety import foreign_controls

    run, plain = str(hostile_run.build(tmp_path)), str(hostile_run.build(tmp_path, hostile=False))
    for force_color in (None, "1"):
        for args in (["compare", run, plain, "--tag", "*"], ["compare", run, "--attempts"],
                     ["compare", run, plain, "--json"], ["curves", run, plain, "--tag", "*", "--width", "100"]):
            result = CliRunner().invoke(cli, ["--no-cache", *args], env={"FORCE_COLOR": force_color, "NO_COLOR": None},
                                        catch_exceptions=False)
            assert result.exit_code == 0, (args, result.output)
            for text in (result.stdout, result.stderr):
                assert not foreign_controls(text), (args, foreign_controls(text)[:3])
    text = run_cli("--no-cache", "compare", run, plain, "--tag", "loss*").stdout
    assert "loss\\x1b]52;c;cHduZWQ=" in text and "A = run\\x1b]0;t\\x07" in text


def test_spread_of_equal_infinite_nan_and_absent_copies():
    from pimm_inspect.analysis.compare import spread

    values = np.array([[1.0, 3.0], [np.inf, np.inf], [np.nan, 1.0], [0.0, 0.0], [-2.0, 2.0], [5.0, np.nan]])
    present = np.ones(values.shape, dtype=bool)
    present[5, 1] = False  # a writer that did not log the step: its NaN placeholder is no copy
    absolute, relative = spread(values, present)
    assert absolute[[0, 1, 3, 4, 5]].tolist() == [2.0, 0.0, 0.0, 4.0, 0.0] and np.isnan(absolute[2])
    assert relative[[0, 1, 3, 4, 5]].tolist() == [2.0 / 3.0, 0.0, 0.0, 2.0, 0.0] and np.isnan(relative[2])
    every = spread(values[:5])
    assert np.array_equal(every[0], absolute[:5], equal_nan=True)


def test_an_attempt_whose_points_name_no_attempt_is_said_on_stderr():
    result = run_cli("curves", RUNS / "wandb_clean", "--attempt", "1", "--tag", "train/loss", "--width", 60)
    assert result.exit_code == 0
    assert "wandb_clean attempt 1 has no point of train/loss to draw (its files do not say which points this " \
        "attempt wrote)" in result.stderr
    assert "wandb_clean attempt 1: train/loss" not in result.stdout  # nothing drawn, nothing named
    assert run_cli("curves", RUNS / "wandb_clean", "--tag", "train/loss", "--width", 60).stderr == ""


def test_sides_read_from_different_source_kinds_say_so(tmp_path: Path):
    tb = tb_run(tmp_path / "tb", ["time/batch_s"])
    text = run_cli("--no-cache", "compare", TWICE, tb, "--tag", "time/*", "--brief").stdout
    assert "time/batch_s: 0 shared steps (steps logged: A 20, B 3) from A train_log, B tb_events" in text


def test_copies_of_files_that_name_no_attempt_are_columns_named_by_file():
    """Two event files of one TensorBoard folder, no attempts known: each file is a writer (by the name escape)."""
    from pimm_inspect.analysis import analyze
    from pimm_inspect.analysis.compare import compare_attempts
    from pimm_inspect.model import Run, make_series

    odd = os.fsdecode(b"events.out.tfevents.2.\xff")
    series = (make_series("loss", [1, 2, 3, 4], [4.0, 3.0, 2.0, 1.0], None, "events.out.tfevents.1"),
              make_series("loss", [3, 4, 5], [2.5, 1.0, 0.5], None, odd))
    run = analyze(Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown", series=series))
    ((replayed,),) = [compare_attempts(run).ranges]
    assert (replayed.replayed.first_step, replayed.replayed.last_step, replayed.replayed.attempts) == (3, 4, ())
    (loss,) = replayed.tags
    assert loss.writers == ("events.out.tfevents.1", "events.out.tfevents.2.\\xff")
    assert loss.values.tolist() == [[2.0, 2.5], [1.0, 1.0]] and loss.abs_diff.tolist() == [0.5, 0.0]
    assert loss.rel_diff.tolist() == [0.5 / 2.5, 0.0] and loss.max_abs_diff_step == 3
