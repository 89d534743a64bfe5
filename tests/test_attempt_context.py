"""Per-attempt Slurm context (job id, array index, nodes, partition, GPUs, elapsed) and lost compute, each fact
naming its file: ``show``, ``show --json``, ``ls --json`` and the dataset's ``attempts`` table (with each attempt's
own config)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from tensorboard.compat.proto import event_pb2

from pimm_inspect.cli.main import cli
import numpy as np

from pimm_inspect.load import attempt_context
from pimm_inspect.load.attempt_context import sbatch_gpus
from pimm_inspect.sources.slurm.sbatch import SbatchInfo

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
RESUBMITTED = RUNS / "e3a_resubmitted"


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _attempts(path: Path) -> list[dict]:
    (run,) = json.loads(_cli("show", path, "--json"))["runs"]
    return run["attempts"]


def _walls(event_file: Path, tag: str) -> dict[int, float]:
    """step -> wall time of one tag, read straight from the TFRecords (not through pimm-inspect)."""
    data, pos, out = event_file.read_bytes(), 0, {}
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        event = event_pb2.Event.FromString(data[pos + 12: pos + 12 + length])
        pos += 12 + length + 4
        if any(v.tag == tag for v in event.summary.value):
            out[event.step] = event.wall_time
    return out


def test_two_jobs_on_two_nodes_each_fact_names_its_file():
    first, second = _attempts(RESUBMITTED)
    rank0_first = "structured_logs/training.global_rank_0.20260727-090005-000000-6B36X5.jsonl"
    rank0_second = "structured_logs/training.global_rank_0.20260727-103024-579000-CBUQD3.jsonl"
    assert (first["job_id"], first["nodes"], first["gpus"]) == ("41920001", ["sdfampere012"], 2)
    assert (second["job_id"], second["nodes"], second["gpus"]) == ("41920377", ["sdfampere031"], 2)
    assert first["context_sources"]["job_id"] == rank0_first and second["context_sources"]["job_id"] == rank0_second
    assert first["context_sources"]["elapsed_s"] == "train.log"
    # launch.sbatch is one submission's script: with two jobs it is not claimed for either.
    assert first["partition"] is None and "partition" not in first["context_sources"]
    # Steps 5-6 were lost (last save at 4): their time is the event file's wall(6) - wall(4).
    event_file = "events.out.tfevents.1785142809.sdfampere012"
    walls = _walls(RESUBMITTED / event_file, "train_batch/loss")
    assert first["lost_steps"] == [5, 6]
    assert first["lost_wall_s"] == pytest.approx(walls[6] - walls[4], abs=1e-3)
    assert first["context_sources"]["lost_wall_s"] == event_file
    assert first["lost_gpu_hours"] == pytest.approx(first["lost_wall_s"] * 2 / 3600, abs=1e-6)
    assert second["lost_wall_s"] is None and second["lost_gpu_hours"] is None
    # The same pairing says how attempt 1 ended: its own job's Slurm log, not the resubmitted job's.
    assert first["ended"] == "killed" and first["end_detail"] == (
        "JOB 41920001 ON sdfampere012 CANCELLED AT 2026-07-27T09:00:24 DUE TO TIME LIMIT (slurm-41920001.out)")


def test_a_requeue_keeps_the_job_id_and_the_script_gives_partition_and_gpus():
    first, second = _attempts(RUNS / "e2_rollback")
    for attempt in (first, second):
        assert (attempt["job_id"], attempt["partition"], attempt["gpus"]) == ("41877302", "ampere", 1)
        assert attempt["context_sources"]["job_id"] == "slurm-41877302.out"
        assert attempt["context_sources"]["partition"] == "launch.sbatch"
    assert first["nodes"] == ["sdfampere012"]  # the event file name's host
    assert first["context_sources"]["nodes"] == "events.out.tfevents.1784212209.sdfampere012"


def test_ls_json_lost_compute_totals_and_failed_requeues():
    doc = json.loads(_cli("ls", "--json", RUNS))
    lost = {r["path"]: r["lost"] for r in doc["runs"]}
    assert lost["e3a_resubmitted"]["steps"] == 2 and lost["e3a_resubmitted"]["failed_requeues"] == 0
    assert lost["e3a_resubmitted"]["gpu_hours"] == pytest.approx(_attempts(RESUBMITTED)[0]["lost_gpu_hours"])
    # Attempt 1 lost all 40 steps (no save); submitit's attempt 2/3 started and trained nothing.
    assert (lost["e2_requeue_failed"]["steps"], lost["e2_requeue_failed"]["failed_requeues"]) == (40, 1)
    assert lost["e2_clean"] == {"steps": 0, "wall_s": 0.0, "gpu_hours": 0.0, "failed_requeues": 0}


def test_show_text_lists_the_context_and_the_lost_compute():
    text = _cli("show", RESUBMITTED)
    assert "attempt context" in text and "41920377" in text and "sdfampere031" in text
    assert "lost compute: 2 step(s)" in text
    assert "lost compute" not in _cli("show", RUNS / "e2_clean")


def test_array_index_and_job_id_from_the_slurm_log_name(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_crashed", run, symlinks=True)
    (run / "slurm-41877302.out").rename(run / "slurm-41877302_5.out")
    (attempt,) = _attempts(run)
    assert (attempt["job_id"], attempt["array_index"]) == ("41877302", 5)
    assert attempt["context_sources"]["array_index"] == "slurm-41877302_5.out"
    assert attempt["nodes"] == ["sdfampere012"]  # srun's `srun: error: sdfampere012: task 0` line
    assert attempt["context_sources"]["nodes"] == "slurm-41877302_5.out"


def test_several_slurm_logs_without_structured_logs_follow_job_order(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RESUBMITTED, run, symlinks=True)
    shutil.rmtree(run / "structured_logs")
    first, second = _attempts(run)
    assert (first["job_id"], second["job_id"]) == ("41920001", "41920377")
    assert first["context_sources"]["job_id"] == "slurm-41920001.out"
    assert first["nodes"] == ["sdfampere012"] and first["context_sources"]["nodes"] == "slurm-41920001.out"
    assert first["gpus"] is None  # no world size, and the script is not claimed for two jobs


def test_sbatch_gpu_count():
    assert sbatch_gpus(SbatchInfo("s", {"gres": "gpu:a100:4", "nodes": "2"})) == 8
    assert sbatch_gpus(SbatchInfo("s", {"gpus-per-node": "4"})) == 4
    assert sbatch_gpus(SbatchInfo("s", {"gpus": "16", "nodes": "4"})) == 16
    assert sbatch_gpus(SbatchInfo("s", {"partition": "ampere"})) is None


def test_dataset_attempts_carry_context_and_each_attempts_config(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "ds"
    result = CliRunner().invoke(cli, ["export", str(RESUBMITTED), "--format", "parquet", "-o", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = sorted(pq.read_table(next((out / "attempts").rglob("*.parquet"))).to_pylist(), key=lambda r: r["attempt"])
    numbers = [dict(r["config_number"]) for r in rows]
    # Attempt 2 was resubmitted with optimizer.lr=0.001 batch_size=16: filed under its own config, not the first.
    assert [(n["optimizer.lr"], n["batch_size"]) for n in numbers] == [(0.002, 8), (0.001, 16)]
    assert [(r["config_kind"], r["config_path"]) for r in rows] == [("resolved_config", "resolved_config.json"),
                                                                     ("log_config", "train.log")]
    assert [(r["job_id"], r["nodes"], r["gpus"]) for r in rows] == [("41920001", ["sdfampere012"], 2),
                                                                    ("41920377", ["sdfampere031"], 2)]
    assert dict(rows[0]["context_sources"])["lost_wall_s"] == "events.out.tfevents.1785142809.sdfampere012"


def test_lost_time_comes_from_a_series_that_reaches_the_last_lost_step():
    # The crashed attempt trained to 40 (last save 25); its event file lost its unflushed tail after 35, so the
    # lost time is read from train.log's Train: lines at g 25 and g 40, not cut at the event file's end.
    (attempt,) = _attempts(RUNS / "e2_crashed")
    stamps = {}
    for line in (RUNS / "e2_crashed" / "train.log").read_text().splitlines():
        if "Train: [1/3][25/25]" in line or "Train: [2/3][15/25]" in line:
            stamps[25 if "[1/3]" in line else 40] = line[1:24]
    from datetime import datetime
    parse = lambda text: datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()  # noqa: E731
    assert attempt["lost_steps"] == [26, 40]
    assert attempt["lost_wall_s"] == pytest.approx(parse(stamps[40]) - parse(stamps[25]), abs=1e-3)
    assert attempt["context_sources"]["lost_wall_s"] == "train.log"


def test_a_hostile_node_name_stays_data(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_crashed", run, symlinks=True)
    log = run / "slurm-41877302.out"
    evil = "[bold]n\x1b[31mode\x9b2J"
    log.write_text(log.read_text().replace("srun: error: sdfampere012:", f"srun: error: {evil}:"))
    (attempt,) = _attempts(run)
    assert attempt["nodes"] == [evil]  # the JSON string is the name as written; dumps escapes its controls
    raw = _cli("show", run, "--json")
    assert "\x1b" not in raw and "\x9b" not in raw and "\\u001b" in raw
    text = _cli("show", run)
    assert "\x1b" not in text and "\x9b" not in text and "[bold]n" in text  # shown, never styled or obeyed


def test_elapsed_of_an_hf_attempt_from_its_own_points():
    first, second = _attempts(RUNS / "hf_resumed")
    for attempt, folder in ((first, "runs/Jan01_10-00-00_node01/"), (second, "runs/Jan01_10-05-00_node01/")):
        source = attempt["context_sources"]["elapsed_s"]
        assert source.startswith(folder)
        span = _walls(RUNS / "hf_resumed" / source, "train/loss")
        assert 0 < attempt["elapsed_s"] and attempt["elapsed_s"] >= max(span.values()) - min(span.values()) - 1e-3


@pytest.mark.parametrize("top", [-10, 0, 5, 999, 1500, 2047, 10**6])
def test_first_point_of_the_largest_step_found_slice_by_slice(monkeypatch, top):
    # steps that go back (a replayed range) across slices: the first point of the largest step <= top, as the
    # whole-column argmax gave it
    steps = np.concatenate([np.arange(0, 1500), np.arange(1000, 2048), np.arange(700, 1200), [1499, 1499]])
    monkeypatch.setattr(attempt_context, "_SLICE", 256)
    got = attempt_context._first_of_largest(steps, top)
    inside = steps <= top
    expected = int(np.argmax(np.where(inside, steps, np.iinfo(steps.dtype).min))) if inside.any() else None
    assert got == expected
