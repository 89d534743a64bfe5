"""Facts the committed pimm fixture tree (fixtures/gen_pimm.py output) promises, checked without torch."""

from __future__ import annotations

import json
import math
import pickle
import pickletools
import re
import struct
import zipfile
from pathlib import Path

import pytest
from tensorboard.compat.proto import event_pb2

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
PIMM_SCENARIOS = (
    "e2_clean", "e0_legacy", "e2_rollback", "e2_exact_resume", "e1_legacy_cursor",
    "e2_incomplete_checkpoint", "e2_crashed", "e3a_running", "e2_wandb",
    "e2_dangling_model_link", "e2_secret_in_config", "tb_plain",
)
# Scenarios added for the gap / cursor / non-finite / stale / unsafe / drift checks (own size budget).
CHECK_SCENARIOS = (
    "e2_tb_gap", "e2_cursor_mismatch", "e2_nan_loss", "e2_stale_reuse", "e2_unsafe_checkpoint",
    "e2_config_drift",
)
PREFIX = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) (INFO|WARNING|ERROR) (\S+) line (\d+)(?: (\d+))?\] (.*)$")
TRAIN = re.compile(r"Train: \[(\d+)/(\d+)\]\[(\d+)/(\d+)\] ")
METADATA_KEYS = ["created_at", "launch_command", "command", "cwd", "host", "config_file", "config_file_abs",
                 "cli_options", "cli_option_keys", "save_path", "resume", "git"]


def run(name: str) -> Path:
    path = RUNS / name
    if not path.is_dir():
        pytest.skip(f"fixture {name} not generated")
    return path


def records(path: Path) -> tuple[list[bytes], int]:
    """Complete TFRecord payloads of an event file and the number of trailing bytes that form no record."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        if pos + 12 + length + 4 > len(data):
            break
        out.append(data[pos + 12: pos + 12 + length])
        pos += 12 + length + 4
    return out, len(data) - pos


def scalars(path: Path, tag: str) -> dict[int, float]:
    """step -> value of one tag in an event file (complete records only)."""
    out: dict[int, float] = {}
    for payload in records(path)[0]:
        event = event_pb2.Event.FromString(payload)
        for value in event.summary.value:
            if value.tag == tag:
                out[event.step] = value.simple_value
    return out


def event_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("events.out.tfevents.*"))


def train_steps(log_text: str) -> list[list[int]]:
    """Global steps of the Train: lines, one list per attempt segment."""
    segments: list[list[int]] = []
    for line in log_text.splitlines():
        if line.endswith("] => Loading config ..."):
            segments.append([])
        m = TRAIN.search(line)
        if m and segments is not None:
            epoch, _, it, iters = map(int, m.groups())
            segments[-1].append((epoch - 1) * iters + it)
    return segments


class _Placeholder:
    """Stands in for any torch global while unpickling data.pkl."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.args = args

    def __setstate__(self, state: object) -> None:
        self.state = state


class _NoTorchUnpickler(pickle.Unpickler):
    """Reads a torch zip checkpoint's data.pkl without torch: tensors become placeholders."""

    def find_class(self, module: str, name: str) -> object:
        if module in ("collections", "builtins") and name in ("OrderedDict", "set", "frozenset"):
            return super().find_class(module, name)
        return _Placeholder

    def persistent_load(self, pid: object) -> object:
        return _Placeholder(pid)


def load_zip_payload(path: Path) -> dict:
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith("/data.pkl"))
        return _NoTorchUnpickler(zf.open(name)).load()


def test_all_scenarios_present_and_under_budget() -> None:
    total = 0
    for name in PIMM_SCENARIOS:
        for p in run(name).rglob("*"):
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    assert total < 1_500_000


def test_check_scenarios_under_budget() -> None:
    total = sum(p.stat().st_size for name in CHECK_SCENARIOS for p in run(name).rglob("*")
                if p.is_file() and not p.is_symlink())
    assert total < 250 * 1024


def test_no_absolute_machine_paths() -> None:
    bad = re.compile(rb"/(work|root|home)/")
    for name in PIMM_SCENARIOS + CHECK_SCENARIOS:
        for p in run(name).rglob("*"):
            if p.is_file() and not p.is_symlink():
                assert not bad.search(p.read_bytes()), p


def test_train_log_prefixes_match_era() -> None:
    for name in PIMM_SCENARIOS[:-1]:
        lines = (run(name) / "train.log").read_text(encoding="utf-8").splitlines()
        prefixed = [PREFIX.match(line) for line in lines if line.startswith("[20")]
        assert prefixed and all(prefixed), name
        pids = {m.group(5) for m in prefixed}
        assert pids == ({"48213"} if name == "e0_legacy" else {None}), name
    for name in CHECK_SCENARIOS:
        lines = (run(name) / "train.log").read_text(encoding="utf-8").splitlines()
        prefixed = [PREFIX.match(line) for line in lines if line.startswith("[20")]
        assert prefixed and all(prefixed) and {m.group(5) for m in prefixed} == {None}, name


def test_e2_clean() -> None:
    r = run("e2_clean")
    for f in ("config.py", "resolved_config.json", "model_config.json", "run_metadata.json", "launch.sbatch",
              "model/last/weights.pth", "model/last/.complete", "model/last/trainer.dcp/.complete",
              "model/last/trainer.dcp/.metadata", "model/model_best.pth", "model/iter_25.pth", "model/iter_75.pth"):
        assert (r / f).is_file(), f
    assert (r / "model/last/.complete").read_text() == "ok\n"
    meta = json.loads((r / "run_metadata.json").read_text())
    assert list(meta) == METADATA_KEYS
    assert meta["git"] == {"commit": meta["git"]["commit"], "branch": "main", "is_dirty": False,
                           "dirty_check": "tracked_files_only"}
    cfg = json.loads((r / "resolved_config.json").read_text())
    assert cfg["save_path"] == "exp/panda/semseg/semseg-clean-2026-07-15_09-00-00" and cfg["use_wandb"] is False
    assert "--requeue" not in (r / "launch.sbatch").read_text()
    text = (r / "train.log").read_text()
    assert train_steps(text) == [list(range(5, 76, 5))]
    assert "Saving final checkpoint" in text and "Wrote eval artifacts: " in text
    evals = list((r / "eval").glob("*/test_metrics.json"))
    assert len(evals) == 1 and re.fullmatch(r"\d{8}T\d{6}Z", evals[0].parent.name)
    (tb,) = event_files(r)
    assert re.fullmatch(r"events\.out\.tfevents\.\d{10}\.sdfampere012", tb.name)
    assert sorted(scalars(tb, "train_batch/loss")) == list(range(1, 76))
    assert sorted(scalars(tb, "val/mIoU")) == [25, 50, 75]
    assert sorted(scalars(tb, "train/loss")) == [25, 50, 75]
    assert records(tb)[1] == 0


def test_e0_legacy() -> None:
    r = run("e0_legacy")
    assert not list(r.glob("*.json"))
    last = (r / "model/model_last.pth").read_bytes()
    assert last[:2] == b"\x80\x02" and not last.startswith(b"PK")  # pre-zip legacy torch.save
    assert (r / "model/model_best.pth").is_file()
    text = (r / "train.log").read_text()
    assert train_steps(text) == [list(range(1, 21))]  # E0 logs every step
    (tb,) = event_files(r)
    assert sorted(scalars(tb, "train_batch/loss")) == list(range(1, 21))
    assert not scalars(tb, "val/mIoU")


def test_e2_rollback_overlap_and_replay() -> None:
    r = run("e2_rollback")
    text = (r / "train.log").read_text()
    assert text.count("] => Loading config ...") == 2
    assert "Resuming train from structured state: epoch=2, iter=10, global_step=50" in text
    assert "Resuming from iteration 50" in text and "Resuming epoch 2 from dataloader position 10" in text
    seg1, seg2 = train_steps(text)
    assert (seg1[0], seg1[-1], seg2[0], seg2[-1]) == (5, 75, 55, 100)
    first, second = event_files(r)
    a, b = scalars(first, "train_batch/loss"), scalars(second, "train_batch/loss")
    assert sorted(a) == list(range(1, 76)) and sorted(b) == list(range(51, 101))
    for step in range(51, 76):  # replayed steps: close but not bit-identical
        assert a[step] != b[step] and abs(a[step] - b[step]) < 0.02 * a[step]
    assert (r / "model/last/.complete").is_file() and not (r / "model/last.prev").exists()
    assert "--requeue" in (r / "launch.sbatch").read_text()


def test_e2_exact_resume_has_no_overlap() -> None:
    r = run("e2_exact_resume")
    text = (r / "train.log").read_text()
    seg1, seg2 = train_steps(text)
    assert seg1[-1] == 50 and seg2[0] == 55
    assert "Resuming train from structured state: epoch=2, iter=10, global_step=50" in text
    first, second = event_files(r)
    assert max(scalars(first, "train_batch/loss")) == 50 and min(scalars(second, "train_batch/loss")) == 51
    payload = load_zip_payload(r / "model/model_last.pth")
    assert payload["trainer"]["global_step"] == 100 and payload["logger"]["backend"] == "tensorboard"


def test_e1_legacy_cursor() -> None:
    r = run("e1_legacy_cursor")
    assert not event_files(r)
    meta = json.loads((r / "run_metadata.json").read_text())
    assert "launch_command" not in meta and not (r / "launch.sbatch").exists()
    text = (r / "train.log").read_text()
    assert "Weights & Biases writer initialized with project: pimm" in text
    assert "WARNING checkpoints.py line 420] Checkpoint has no W&B rewind state;" in text
    assert "Checkpoint is mid-epoch but has no dataloader state;" in text
    seg1, seg2 = train_steps(text)
    assert seg1[-1] == 70 and seg2[0] == 55 and seg2[-1] == 55
    payload = load_zip_payload(r / "model/model_last.pth")
    assert payload["schema"] == "pimm.trainer_checkpoint" and payload["trainer"]["global_step"] == 60
    assert payload["trainer"]["iter_in_epoch"] == 10
    assert "resume_step" not in payload["logger"]["wandb"] and payload["logger"]["wandb"]["run_id"] is None
    assert (r / "model/model_last.pth.prev").is_file()


def test_e2_incomplete_checkpoint() -> None:
    m = run("e2_incomplete_checkpoint") / "model"
    assert (m / "last/weights.pth").is_file() and not (m / "last/.complete").exists()
    assert not (m / "last/trainer.dcp/.complete").exists()
    assert (m / "last.prev/.complete").read_text() == "ok\n"
    assert (m / "last.prev/trainer.dcp/.complete").is_file() and (m / "last.prev/weights.pth").is_file()
    assert (m / "last.tmp").is_dir() and not (m / "last.tmp/weights.pth").exists()
    assert (m / "model_best.pth.tmp").is_file()


def test_e2_crashed_tb_ends_before_log() -> None:
    r = run("e2_crashed")
    text = (r / "train.log").read_text()
    assert train_steps(text)[0][-1] == 40
    assert re.search(r"ERROR events\.py line \d+\] Traceback \(most recent call last\):", text)
    assert text.rstrip().endswith("is reserved by PyTorch but unallocated.")
    (tb,) = event_files(r)
    assert max(scalars(tb, "train_batch/loss")) == 35


def test_e3a_running_is_cut_mid_write() -> None:
    r = run("e3a_running")
    raw = (r / "train.log").read_bytes()
    assert not raw.endswith(b"\n") and TRAIN.search(raw.decode().splitlines()[-1])
    (tb,) = event_files(r)
    complete, leftover = records(tb)
    assert complete and leftover > 0  # half a record at the end
    logs = sorted((r / "structured_logs").glob("training.global_rank_*.jsonl"))
    assert [p.name.split(".")[1] for p in logs] == ["global_rank_0", "global_rank_1"]
    for p in logs:
        assert re.fullmatch(r"training\.global_rank_\d\.\d{8}-\d{6}-\d{6}-[A-Z0-9]{6}\.jsonl", p.name)
        lines = p.read_bytes().split(b"\n")
        parsed = [json.loads(x) for x in lines[:-1]]
        assert parsed[0]["log_type_name"] == "process_start" and parsed[0]["world_size"] == 2
        with pytest.raises(json.JSONDecodeError):
            json.loads(lines[-1])
    assert not (r / "eval").exists()


def test_e2_wandb_cursor() -> None:
    r = run("e2_wandb")
    assert not event_files(r) and not (r / "wandb").exists()
    cfg = json.loads((r / "resolved_config.json").read_text())
    assert cfg["use_wandb"] is True and cfg["wandb_project"] == "pimm" and cfg["chain_jobs"] == 2
    payload = load_zip_payload(r / "model/model_last.pth")
    w = payload["logger"]["wandb"]
    assert (w["run_id"], w["resume_step"], w["checkpoint_global_step"]) == ("p7k2m9xq", 81, 80)
    prev = load_zip_payload(r / "model/model_last.pth.prev")["logger"]["wandb"]
    assert prev["resume_step"] == prev["checkpoint_global_step"] + prev["step_offset"] + 1
    text = (r / "train.log").read_text()
    assert "Resuming train from structured state: epoch=3, iter=0, global_step=60" in text


def test_e2_dangling_model_link() -> None:
    r = run("e2_dangling_model_link")
    link = r / "model"
    assert link.is_symlink() and not link.exists()
    target = str(link.readlink())
    assert target.startswith("/sdf/scratch/") and target.endswith("/model")
    assert json.loads((r / "run_metadata.json").read_text())["git"] == {}


def test_e2_secret_in_config() -> None:
    r = run("e2_secret_in_config")
    key = re.compile(r"\b[0-9a-f]{40}\b")
    cfg = json.loads((r / "resolved_config.json").read_text())
    assert key.fullmatch(cfg["wandb_api_key"])
    assert re.search(r"WANDB_API_KEY=[0-9a-f]{40}", (r / "launch.sbatch").read_text())
    assert re.search(r"WANDB_API_KEY=[0-9a-f]{40}", cfg["launch_command"])
    assert json.loads((r / "run_metadata.json").read_text())["git"]["is_dirty"] is True


def test_tb_plain() -> None:
    r = run("tb_plain")
    runs = sorted(p.name for p in (r / "runs").iterdir())
    assert runs == ["baseline", "lr-0.1"]
    for name in runs:
        (tb,) = event_files(r / "runs" / name)
        assert sorted(scalars(tb, "loss")) == list(range(1, 51))
        assert sorted(scalars(tb, "accuracy")) == [10, 20, 30, 40, 50]


def pickle_globals(data: bytes) -> set[str]:
    """module.name of every GLOBAL opcode in a pickle (read with pickletools, nothing is imported or called)."""
    return {str(arg).replace(" ", ".") for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}


def test_e2_tb_gap() -> None:
    r = run("e2_tb_gap")
    text = (r / "train.log").read_text()
    seg1, seg2 = train_steps(text)
    assert seg1 == [5, 10, 15, 20] and (seg2[0], seg2[-1]) == (45, 70)
    assert "Saving checkpoint at global step 40" not in text  # lost with the page cache
    assert "Resuming train from structured state: epoch=0, iter=40, global_step=40" in text
    first, second = event_files(r)
    assert sorted(scalars(first, "train_batch/loss")) == list(range(1, 21))
    assert sorted(scalars(second, "train_batch/loss")) == list(range(41, 71))
    assert load_zip_payload(r / "model/model_last.pth")["trainer"]["global_step"] == 40


def test_e2_cursor_mismatch() -> None:
    r = run("e2_cursor_mismatch")
    assert not event_files(r)
    w = load_zip_payload(r / "model/model_last.pth")["logger"]["wandb"]
    assert (w["run_id"], w["checkpoint_global_step"], w["step_offset"], w["resume_step"]) == ("c5r8t2vw", 10, 0, 16)
    assert w["resume_step"] != w["checkpoint_global_step"] + w["step_offset"] + 1


def test_e2_nan_loss() -> None:
    r = run("e2_nan_loss")
    text = (r / "train.log").read_text()
    assert "][30/40] " in text and "loss: nan avg_pts" in text and "loss: inf avg_pts" in text
    (tb,) = event_files(r)
    loss = scalars(tb, "train_batch/loss")
    bad = sorted(g for g, v in loss.items() if not math.isfinite(v))
    assert bad == [28, 29, 30, 35] and math.isinf(loss[35]) and math.isnan(loss[28])


def test_e2_stale_reuse() -> None:
    r = run("e2_stale_reuse")
    meta = json.loads((r / "run_metadata.json").read_text())
    assert meta["created_at"] == "2026-07-23T10:30:05+00:00"
    assert train_steps((r / "train.log").read_text()) == [[5]]
    old, new = event_files(r)
    wall = event_pb2.Event.FromString(records(old)[0][0]).wall_time
    assert wall < event_pb2.Event.FromString(records(new)[0][0]).wall_time - 86400
    assert max(scalars(old, "train_batch/loss")) == 25 and max(scalars(new, "train_batch/loss")) == 8
    assert (r / "model/iter_20.pth").is_file()
    assert load_zip_payload(r / "model/model_last.pth")["trainer"]["global_step"] == 20


def test_e2_unsafe_checkpoint() -> None:
    r = run("e2_unsafe_checkpoint")
    with zipfile.ZipFile(r / "model/model_best.pth") as zf:
        data = zf.read(next(n for n in zf.namelist() if n.endswith("/data.pkl")))
    assert "posix.system" in pickle_globals(data) and b"pimm_pwned_marker" in data
    with zipfile.ZipFile(r / "model/model_last.pth") as zf:
        clean = zf.read(next(n for n in zf.namelist() if n.endswith("/data.pkl")))
    assert not any(g.startswith(("posix.", "os.")) for g in pickle_globals(clean))


def test_e2_config_drift() -> None:
    r = run("e2_config_drift")
    cfg = json.loads((r / "resolved_config.json").read_text())
    assert cfg["optimizer"]["lr"] == 0.002 and cfg["batch_size"] == 4 and cfg["use_wandb"] is True
    folders = sorted((r / "wandb").glob("offline-run-*-d3f6h9kq"))
    assert len(folders) == 2
    blobs = [(f / "run-d3f6h9kq.wandb").read_bytes() for f in folders]
    assert b'"lr":0.002' in blobs[0] and b'"lr":0.001' in blobs[1]
    text = (r / "train.log").read_text()
    assert text.count("] => Loading config ...") == 2 and "\nbatch_size = 8\n" in text
