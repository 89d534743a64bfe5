"""Exports and Run.scalars(): exact floats, rows keyed (tag, step, attempt, source, seq), sources and attempts that
are true."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.analysis._facts import SOURCE_PRIORITY, source_kind
from pimm_inspect.analysis.curves import merge
from pimm_inspect.analysis.scalar_rows import NO_ATTEMPT, scalar_rows
from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FIXTURES = sorted(d.relative_to(RUNS).as_posix() for d in pimm_inspect.discover(RUNS))


def _strict(text: str):
    """Parse JSON as the standard says: a bare NaN/Infinity token is an error."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def _export(name: str, *args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["export", str(RUNS / name), "--format", "json", "-o", "-", *args])
    assert result.exit_code == 0, result.output
    return _strict(result.stdout)


@pytest.fixture(scope="module")
def loaded():
    return {name: pimm_inspect.load_run(RUNS / name) for name in FIXTURES}


def _as_float(value) -> float:
    return float(value)  # float() reads "NaN", "Infinity", "-Infinity" back


@pytest.mark.parametrize("name", FIXTURES)
def test_show_points_equal_export_rows_and_rows_are_unique(loaded, name):
    run = loaded[name]
    show = CliRunner().invoke(cli, ["show", "--json", str(RUNS / name)])
    scalars = json.loads(show.stdout)["runs"][0]["scalars"]
    rows = _export(name)
    per_tag: dict[str, int] = {}
    for row in rows:
        per_tag[row["tag"]] = per_tag.get(row["tag"], 0) + 1
    assert per_tag == {tag: doc["points"] for tag, doc in scalars.items() if doc["points"]}
    keys = [(r["tag"], r["step"], r["attempt"], r["source"], r["seq"]) for r in rows]
    assert len(keys) == len(set(keys))
    # --policy all is every record as written: the points of the tag's preferred source, none dropped.
    assert len(rows) == sum(doc["points"] for doc in scalars.values())
    # Each tag from one source kind, the preferred one present.
    for tag, doc in scalars.items():
        kinds = {source_kind(run, s) for s in run.series_for(tag) if len(s)}
        if kinds:
            assert doc["source"] == next(k for k in SOURCE_PRIORITY if k in kinds)
    frame = run.scalars()
    assert len(frame) == len(rows)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("name", FIXTURES)
def test_json_export_round_trips_every_float(loaded, name):
    blocks = scalar_rows(loaded[name], all_sources=True)
    rows = _export(name, "--all-sources")
    assert len(rows) == sum(len(b) for b in blocks)
    i = 0
    for block in blocks:
        for j in range(len(block)):
            row = rows[i]
            i += 1
            assert (row["tag"], row["step"]) == (block.tag, int(block.steps[j]))
            assert row["source"] == block.sources[block.source_index[j]]
            assert row["attempt"] == (None if block.attempts[j] == NO_ATTEMPT else int(block.attempts[j]))
            assert _same(_as_float(row["value"]), float(block.values[j]))  # exact, not 10 significant digits
            wall = float(block.wall_times_s[j])
            assert row["wall_time"] == (wall if math.isfinite(wall) else None)


def test_hf_run_values_are_exact_in_json():
    # The issue's case: pandas' to_json kept 10 significant digits, so most HF values came back different.
    rows = _export("hf_clean")
    values = [_as_float(r["value"]) for r in rows]
    expected = [float(v) for b in scalar_rows(pimm_inspect.load_run(RUNS / "hf_clean")) for v in b.values]
    assert values == expected
    assert sum(len(repr(v)) > 12 for v in values) > len(values) // 2  # most need more than 10 digits


def test_non_finite_values_are_the_documented_strings():
    rows = _export("e2_nan_loss", "--tag", "train_batch/loss")
    values = {r["step"]: r["value"] for r in rows}
    assert values[28] == "NaN" and values[35] == "Infinity"
    assert all(isinstance(v, float) for s, v in values.items() if s not in (28, 29, 30, 35))


@pytest.mark.parametrize("policy, attempt, file_index", [("newest", 2, 1), ("oldest", 1, 0)])
def test_policy_names_the_file_and_attempt_each_point_came_from(loaded, policy, attempt, file_index):
    run = loaded["e2_rollback"]
    files = sorted(s.source for s in run.series_for("train_batch/loss") if "tfevents" in s.source)
    rows = _export("e2_rollback", "--policy", policy, "--tag", "train_batch/loss")
    by_step = {r["step"]: r for r in rows}
    assert len(by_step) == len(rows) == 100
    assert by_step[60]["attempt"] == attempt and by_step[60]["source"] == files[file_index]
    assert by_step[10]["attempt"] == 1 and by_step[10]["source"] == files[0]
    assert by_step[90]["attempt"] == 2 and by_step[90]["source"] == files[1]
    # Every row's value is the one its named file holds for that step.
    for row in rows:
        series = next(s for s in run.series_for("train_batch/loss") if s.source == row["source"])
        assert float(series.values[series.steps == row["step"]][-1]) == row["value"]
    # The same choice as the curves' merge.
    tb = [s for s in run.series_for("train_batch/loss") if "tfevents" in s.source]
    merged = merge(tb, policy)[0]
    assert merged.values.tolist() == [by_step[s]["value"] for s in merged.steps.tolist()]


def test_run_scalars_pivots_and_filters(loaded):
    run = loaded["e2_rollback"]
    newest = run.scalars(tags=("train/*", "val/loss"), policy="newest")
    table = newest.pivot(index="step", columns="tag", values="value")  # one value per (step, tag)
    assert "train/loss" in table.columns and "val/loss" in table.columns
    assert set(newest["tag"]) <= {t for t in run.tags() if t.startswith("train/") or t == "val/loss"}
    everything = run.scalars(tags="train/loss", all_sources=True)
    assert {s.split(".")[0] for s in everything["source"]} == {"events", "train"}  # TB files and train.log
    preferred = run.scalars(tags="train/loss")
    assert set(preferred["source"].str.startswith("events")) == {True}
    assert preferred["attempt"].notna().all()


@pytest.mark.parametrize("policy", ["all", "newest", "oldest"])
@pytest.mark.parametrize("attempt", [None, 2])
def test_single_increasing_writer_fast_path_gives_the_general_rows(policy, attempt):
    """One series with strictly increasing steps skips the sort: the rows are those of the general path (here the
    same points split between two files of one writer, which takes it)."""
    import numpy as np

    from pimm_inspect.analysis.scalar_rows import select_rows
    from pimm_inspect.model import make_series

    rng = np.random.default_rng(7)
    steps = np.unique(rng.integers(0, 10_000, 3_000))
    values, walls = rng.normal(size=steps.size), 1.7e9 + steps * 0.5
    one = make_series("loss", steps, values, walls, "a.tfevents", attempt)
    fast = select_rows("loss", "tb_events", [one], policy)
    cut = steps.size // 2
    halves = [make_series("loss", steps[:cut], values[:cut], walls[:cut], "a.tfevents", attempt),
              make_series("loss", steps[cut:], values[cut:], walls[cut:], "a.tfevents", attempt)]
    general = select_rows("loss", "tb_events", halves, policy)
    for field in ("steps", "values", "wall_times_s", "attempts", "source_index"):
        got, want = getattr(fast, field), getattr(general, field)
        assert got.dtype == want.dtype and np.array_equal(got, want), field
    assert fast.sources == general.sources == ("a.tfevents",)
    assert fast.steps is not one.steps  # rows never alias the run's series
