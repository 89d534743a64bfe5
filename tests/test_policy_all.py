"""``--policy all`` keeps every record as written: rows keyed (tag, step, attempt, source, seq), ``seq`` numbering
the repeats of a step within one file; ``newest``/``oldest`` keep one per step."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _export(path: Path, *args: str) -> list[dict]:
    done = CliRunner().invoke(cli, ["export", str(path), "--format", "json", "-o", "-", *args])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def _points(path: Path) -> dict[str, int]:
    done = CliRunner().invoke(cli, ["show", "--json", str(path)])
    return {tag: doc["points"] for tag, doc in json.loads(done.stdout)["runs"][0]["scalars"].items()}


def test_an_epoch_pseudo_metric_written_twice_at_a_boundary_keeps_both_records():
    """Lightning 1.x style: ``epoch`` logged with the training row and again with the validation row."""
    path = RUNS / "rw_lightning" / "lightning_logs" / "version_1"
    run = pimm_inspect.load_run(path)
    (epoch,) = run.series_for("epoch")
    rows = [r for r in _export(path) if r["tag"] == "epoch"]
    assert len(rows) == len(epoch) > len(set(epoch.steps.tolist()))
    repeated = [r for r in rows if r["seq"] == 1]
    assert repeated and all(r["source"] == epoch.source for r in repeated)
    keys = [(r["tag"], r["step"], r["attempt"], r["source"], r["seq"]) for r in rows]
    assert len(keys) == len(set(keys))
    assert _points(path)["epoch"] == len(rows)
    newest = [r for r in _export(path, "--policy", "newest") if r["tag"] == "epoch"]
    assert len(newest) == len(set(epoch.steps.tolist()))  # one per step
    frame = run.scalars("epoch")
    assert list(frame.columns) == ["tag", "step", "value", "wall_time", "attempt", "source", "seq"]
    assert len(frame) == len(rows) and int(frame["seq"].max()) == 1


def test_hf_epoch_logged_with_the_train_and_the_eval_rows_is_kept_twice():
    """HF Trainer logs ``train/epoch`` with its training row and again with its evaluation row at the same step;
    ``all`` used to keep one of them (one row per (tag, step, attempt))."""
    path = RUNS / "hf_clean"
    rows = _export(path)
    assert len(rows) == sum(_points(path).values())
    per_key: dict[tuple, list[tuple[str, int]]] = {}
    for r in rows:
        per_key.setdefault((r["tag"], r["step"], r["attempt"]), []).append((r["source"], r["seq"]))
    twice = {k: v for k, v in per_key.items() if len(v) > 1}
    assert twice and {k[0] for k in twice} == {"train/epoch"}
    assert all(sorted(seq for _f, seq in v) == list(range(len(v))) for v in twice.values())


def test_the_dataset_scalars_key_has_seq():
    from pimm_inspect.report.dataset import DATASET_VERSION, schema

    assert DATASET_VERSION >= 2 and schema("scalars").names[-1] == "seq"
