"""Tests for the offline W&B run reader (fixtures made by fixtures/gen_wandb.py with real wandb)."""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimm_inspect.sources.wandb import _framing as _wandb_framing
from pimm_inspect.sources.wandb._framing import BLOCK_LEN, FILE_HEADER
from pimm_inspect.sources.wandb._proto import extract_serialized_descriptor, record_class
from pimm_inspect.sources.wandb.reader import find_wandb_dirs, group_by_run_id, read_wandb_run
from tests.import_probe import modules_after
from tests.wandb_support import frame_records as _frame

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
WARNING_START = "Tried to log to step 4 that is less than the current step 9. Steps must be monotonically increasing"


def _run_dirs(scenario: str) -> list[Path]:
    return find_wandb_dirs(RUNS / scenario)


def _read(scenario: str, run_id: str | None = None):
    root = RUNS / scenario
    dirs = [d for d in find_wandb_dirs(root) if run_id is None or d.name.endswith(run_id)]
    assert dirs, f"no W&B folder in {scenario}"
    return read_wandb_run(dirs[0], dirs[0].relative_to(root).as_posix())


def _series(result, tag: str):
    found = [s for s in result.series if s.tag == tag]
    assert len(found) == 1, (tag, [s.tag for s in result.series])
    return found[0]


def _copy_run(tmp_path: Path, scenario: str) -> Path:
    """A copy of a fixture run folder under tmp_path/wandb/."""
    src = _run_dirs(scenario)[0]
    dst = tmp_path / "wandb" / src.name
    shutil.copytree(src, dst)
    return dst


# --- discovery and identity -------------------------------------------------------------------

def test_find_wandb_dirs_ignores_latest_run_symlink(tmp_path):
    run = _copy_run(tmp_path, "wandb_clean")
    (tmp_path / "wandb" / "latest-run").symlink_to(run.name)
    (tmp_path / "wandb" / "debug.log").symlink_to(f"{run.name}/logs/debug.log")
    assert find_wandb_dirs(tmp_path) == [run]
    assert find_wandb_dirs(tmp_path / "wandb") == [run]
    assert find_wandb_dirs(run) == [run]


def test_clean_run_identity_config_and_values():
    r = _read("wandb_clean")
    assert (r.run_id, r.project, r.display_name, r.group, r.job_type) == (
        "clean001", "pimm-fixtures", "clean", "fixtures", "train")
    assert r.entity is None and r.offline and not r.resumed and not r.synced
    assert r.status == "finished" and r.exit_code == 0
    assert r.config == {"lr": 0.001, "epochs": 3, "optimizer": {"name": "adamw", "betas": [0.9, 0.999]},
                        "seed": 42, "tags": None}
    assert r.wandb_file == f"{r.rel_path}/run-clean001.wandb"
    assert r.history_steps.tolist() == list(range(30))
    assert r.history_steps.dtype == np.int64
    assert np.all(np.isfinite(r.history_timestamps_s)) and np.all(np.diff(r.history_runtimes_s) >= 0)
    loss, acc, lr = _series(r, "train/loss"), _series(r, "train/acc"), _series(r, "params/lr")
    assert loss.steps.tolist() == list(range(30)) and loss.source == r.wandb_file
    assert loss.values.tolist() == [2.0 / (i + 1) for i in range(30)]
    assert acc.values.tolist() == [i / 40 for i in range(30)]
    assert lr.values.tolist() == [0.001 * (1 - i / 30) for i in range(30)]
    assert loss.wall_times_s.tolist() == r.history_timestamps_s.tolist()
    assert set(r.x_axis.values()) == {"_step"}
    assert r.summary["train/loss"] == 2.0 / 30 and r.summary["_step"] == 29
    assert [c.text for c in r.console] == ["epoch 1 done", "epoch 2 done", "epoch 3 done"]
    assert {c.stream for c in r.console} == {"stdout"}
    assert not r.explicit_step_logging and not r.few_rows_late_start and r.dropped_steps == ()
    assert r.findings == ()
    assert r.configs[0].kind == "wandb_config" and r.configs[0].data == r.config
    assert {s.path for s in r.sources} >= {r.wandb_file, f"{r.rel_path}/logs/debug.log"}
    assert "transaction log" in r.file_roles[r.wandb_file]
    assert f"{r.rel_path}/files/output.log" in r.file_roles


def test_offline_url_and_sync_command():
    r = _read("wandb_clean")
    assert r.url is None and r.base_url is None
    # The folder by absolute path, so the command works from any directory.
    assert r.sync_command == f"wandb sync {(RUNS / 'wandb_clean' / r.rel_path).as_posix()}"
    assert r.link.mode == "offline" and r.link.url_after_sync is None


def test_url_from_settings_file_and_caller_base(tmp_path):
    run = _copy_run(tmp_path, "wandb_clean")
    (tmp_path / "wandb" / "settings").write_text(
        "[default]\nbase_url = https://wandb.example.org/\nentity = team\n")
    r = read_wandb_run(run, f"wandb/{run.name}")
    assert r.entity == "team" and r.base_url == "https://wandb.example.org"  # vetted: rebuilt from its parts
    # Never synced: the page does not exist yet, so no url, but where it will be and the command to get it there.
    assert r.url is None and r.link.url_after_sync == "https://wandb.example.org/team/pimm-fixtures/runs/clean001"
    assert r.sync_command == f"wandb sync {run.as_posix()}"
    r = read_wandb_run(run, f"wandb/{run.name}", base_url="https://api.wandb.ai")
    assert r.link.url_after_sync == "https://wandb.ai/team/pimm-fixtures/runs/clean001"
    (run / f"run-{r.run_id}.wandb.synced").write_text("")  # what `wandb sync` leaves: now the link is live
    r = read_wandb_run(run, f"wandb/{run.name}")
    assert r.url == "https://wandb.example.org/team/pimm-fixtures/runs/clean001" and r.sync_command is None


# --- step semantics ---------------------------------------------------------------------------

def test_repeated_step_merges_into_one_row():
    r = _read("wandb_repeated_step")
    assert r.history_steps.tolist() == [2]
    assert _series(r, "loss").values.tolist() == [1.0 / 9]  # last write wins
    assert _series(r, "acc").values.tolist() == [0.85]
    assert _series(r, "extra").values.tolist() == [7.0]  # keys of earlier calls are kept
    assert all(s.steps.tolist() == [2] for s in r.series)
    assert r.explicit_step_logging and r.first_step == 2 and r.few_rows_late_start
    assert r.dropped_steps == ()


def test_backwards_step_dropped_with_warning():
    r = _read("wandb_backwards_step")
    assert r.dropped_steps == (4,)
    assert r.dropped_step_warning.startswith(WARNING_START)
    assert r.dropped_step_details[0].current_step == 9
    assert r.dropped_step_details[0].source == r.wandb_file
    loss = _series(r, "loss")
    assert loss.steps.tolist() == list(range(15))
    assert loss.values.tolist() == [1.0 - s / 20 for s in range(15)]  # 99.0 never landed
    assert any(c.stream == "stderr" and WARNING_START in c.text for c in r.console)
    assert not r.few_rows_late_start


def test_backwards_step_found_in_core_log_without_console(tmp_path):
    run = _copy_run(tmp_path, "wandb_backwards_step")
    (run / "run-backstep.wandb").unlink()
    shutil.rmtree(run / "files", ignore_errors=True)
    r = read_wandb_run(run, f"wandb/{run.name}")
    assert r.dropped_steps == (4,)
    assert r.dropped_step_details[0].source.endswith("logs/debug-internal.log")
    assert r.wandb_file is None and r.series == ()


def test_pimm_step_metric_x_axis():
    r = _read("wandb_step_metric", "pimmstep")
    assert r.history_steps.tolist() == list(range(21))
    assert r.hidden_keys == ("train/global_step",)
    assert [(m.name, m.glob, m.step_metric, m.hidden) for m in r.metrics] == [
        ("train/global_step", None, None, True), (None, "*", "train/global_step", False)]
    gs = _series(r, "train/global_step")
    assert r.x_axis["train/global_step"] == "_step"
    assert gs.steps.tolist() == list(range(21)) and gs.values.tolist() == [100.0 + g for g in range(21)]
    batch = _series(r, "train_batch/loss")
    assert r.x_axis["train_batch/loss"] == "train/global_step"
    assert batch.steps.tolist() == list(range(101, 121))
    assert batch.values.tolist() == [1.0 / g for g in range(1, 21)]
    assert _series(r, "train/loss").steps.tolist() == [110, 120]
    assert _series(r, "train/loss").values.tolist() == [0.05, 0.025]
    assert _series(r, "val/mIoU").values.tolist() == [0.25, 0.5]
    assert r.config == {"log_step_offset": 100}


def test_hf_trainer_step_metric():
    r = _read("wandb_step_metric", "hfstep01")
    assert r.history_steps.tolist() == list(range(8))  # one row per log call
    loss = _series(r, "train/loss")
    assert loss.steps.tolist() == [5, 10, 15, 20, 25, 30]
    assert loss.values.tolist() == [3.0 / gs for gs in range(5, 31, 5)]
    assert _series(r, "eval/loss").steps.tolist() == [15, 30]
    assert _series(r, "eval/loss").values.tolist() == [2.0 / 15, 2.0 / 30]
    assert r.x_axis["train/epoch"] == "train/global_step"
    assert not r.explicit_step_logging


def test_resumed_offline_two_folders_share_an_id():
    root = RUNS / "wandb_resumed_offline"
    dirs = find_wandb_dirs(root)
    results = [read_wandb_run(d, d.relative_to(root).as_posix()) for d in dirs]
    assert len(results) == 2
    groups = group_by_run_id(results)
    assert list(groups) == ["resume01"] and len(groups["resume01"]) == 2
    first, second = sorted(results, key=lambda r: r.resume_requested)
    assert not first.resume_requested and second.resume_requested  # wandb.init(resume=...) on the second only
    assert not first.resumed and not second.resumed  # offline: no server said it found the run
    assert first.history_steps.tolist() == list(range(20))
    assert second.history_steps.tolist() == list(range(12, 25))
    assert _series(second, "loss").values.tolist() == [1.0 / (s + 1) + 0.25 for s in range(12, 25)]
    assert first.rel_path != second.rel_path


# --- damage -----------------------------------------------------------------------------------

def _fixture_bytes(scenario: str = "wandb_clean") -> tuple[Path, bytes]:
    run = _run_dirs(scenario)[0]
    path = next(run.glob("run-*.wandb"))
    return path, path.read_bytes()


def _read_bytes(tmp_path: Path, data: bytes):
    run = tmp_path / "wandb" / "offline-run-20260101_000000-dmg"
    run.mkdir(parents=True, exist_ok=True)
    (run / "run-dmg.wandb").write_bytes(data)
    return read_wandb_run(run, "wandb/offline-run-20260101_000000-dmg")


@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.2, 0.5, 0.77, 0.999])
def test_truncated_file(tmp_path, fraction):
    _, data = _fixture_bytes()
    full = _read_bytes(tmp_path, data)
    cut = int(len(data) * fraction)
    r = _read_bytes(tmp_path, data[:cut])
    codes = {f.code for f in r.findings}
    if cut == 0:
        assert codes == {"file.empty"}
    elif cut < 7:
        assert codes == {"file.corrupt"}
    else:
        assert "file.truncated" in codes
        assert r.findings[0].paths == ("wandb/offline-run-20260101_000000-dmg/run-dmg.wandb",)
    n = len(r.history_steps)
    assert r.history_steps.tolist() == full.history_steps.tolist()[:n]
    assert r.status == "unknown" and r.exit_code is None


@pytest.mark.parametrize("offset", [4, 12, 200, 700, 1500])
def test_flipped_byte(tmp_path, offset):
    _, data = _fixture_bytes()
    damaged = bytearray(data)
    damaged[offset] ^= 0x5A
    r = _read_bytes(tmp_path, bytes(damaged))
    codes = {f.code for f in r.findings}
    if offset in (11, 12):
        # A damaged chunk length pointing past the end of the file looks like a cut-off write.
        assert codes & {"file.corrupt", "file.truncated"}
    else:
        assert "file.corrupt" in codes


def test_bad_magic_and_unknown_chunk_type(tmp_path):
    _, data = _fixture_bytes()
    r = _read_bytes(tmp_path, data[:4] + b"\x00\x00\x00" + data[7:])
    assert [f.code for f in r.findings] == ["file.corrupt"] and r.series == ()
    payload = b"\x08\x01"
    bad = FILE_HEADER + struct.pack("<IHB", zlib.crc32(b"\x09" + payload), len(payload), 9) + payload
    assert "file.corrupt" in {f.code for f in _read_bytes(tmp_path, bad).findings}


def test_corruption_resyncs_at_next_block(tmp_path):
    cls, _ = record_class()
    records = []
    for step in range(2000):
        rec = cls()
        item = rec.history.item.add()
        item.nested_key.append("_step")
        item.value_json = str(step)
        item = rec.history.item.add()
        item.nested_key.append("loss")
        item.value_json = repr(step / 7)
        records.append(rec.SerializeToString())
    data = bytearray(_frame(records))
    assert len(data) > 2 * BLOCK_LEN
    data[100] ^= 0xFF  # inside block 0
    r = _read_bytes(tmp_path, bytes(data))
    steps = r.history_steps.tolist()
    assert [f.code for f in r.findings] == ["file.corrupt"]
    assert steps[-1] == 1999 and 1000 < len(steps) < 2000 and steps == sorted(steps)
    assert _series(r, "loss").values.tolist() == [s / 7 for s in steps]


def test_record_spanning_blocks_and_size_cap(tmp_path, monkeypatch):
    cls, _ = record_class()
    big = cls()
    big.output_raw.output_type = 1
    big.output_raw.line = "x" * 100_000 + "\n"
    run = cls()
    run.run.run_id = "dmg"
    run.run.project = "p"
    data = _frame([run.SerializeToString(), big.SerializeToString()])
    r = _read_bytes(tmp_path, data)
    assert r.findings == () and r.project == "p"
    assert [len(c.text) for c in r.console] == [100_000]
    monkeypatch.setattr(_wandb_framing, "MAX_RECORD_BYTES", 50_000)
    r = _read_bytes(tmp_path, data)
    assert "file.corrupt" in {f.code for f in r.findings} and r.console == () and r.project == "p"


def test_unknown_record_type_is_skipped(tmp_path):
    unknown = bytes([0xC0, 0x09, 0x01])  # field 152, varint 1: not a Record field
    r = _read_bytes(tmp_path, _frame([unknown]))
    assert r.unknown_record_count == 1 and r.findings == ()


_, _CLEAN = _fixture_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(_CLEAN)),
       flips=st.lists(st.tuples(st.integers(0, len(_CLEAN) - 1), st.integers(1, 255)), max_size=4))
def test_prefixes_and_mutations_never_raise(tmp_path, cut, flips):
    data = bytearray(_CLEAN)
    for pos, xor in flips:
        data[pos] ^= xor
    r = _read_bytes(tmp_path, bytes(data[:cut]))
    assert r.history_steps.dtype == np.int64
    for s in r.series:
        assert len(s.steps) == len(s.values) == len(s.wall_times_s)


# --- descriptors and import hygiene -----------------------------------------------------------

def test_descriptor_extraction_parses_without_exec():
    source = "import os\nos.exit(1)\nDESCRIPTOR = _pool.Default().AddSerializedFile(b'\\n\\x03abc')\n"
    assert extract_serialized_descriptor(source) == b"\n\x03abc"
    assert extract_serialized_descriptor("x = 1\n") is None
    _, info = record_class()
    assert info.files[-1] == "wandb/proto/wandb_internal.proto"
    assert info.files.index("wandb/proto/wandb_base.proto") < info.files.index("wandb/proto/wandb_telemetry.proto")


def test_reading_a_run_does_not_import_wandb():
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from pimm_inspect.sources.wandb.reader import find_wandb_dirs, read_wandb_run\n"
        f"root = Path({str(RUNS / 'wandb_step_metric')!r})\n"
        "results = [read_wandb_run(d, d.name) for d in find_wandb_dirs(root)]\n"
        "assert all(r.series for r in results)\n"
    )
    assert "wandb" not in modules_after(code)
