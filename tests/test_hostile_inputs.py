"""Hostile input for the binary readers without property tests elsewhere: pickles/checkpoints, HF state,
plus permission-denied files and folders simulated (the suite runs as root, which ignores file modes)."""

import builtins
import os
import shutil
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pimm_inspect.load import discover, load_run
from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file
from pimm_inspect.sources.hf.reader import read_hf_trainer_dir
from pimm_inspect.sources.checkpoint.safe_pickle import safe_loads

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINTS = sorted((ROOT / "fixtures" / "checkpoints").glob("*.pth"))
SAMPLES = {p.name: p.read_bytes() for p in CHECKPOINTS}
PROFILE = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROFILE
@given(name=st.sampled_from(sorted(SAMPLES)), cut=st.floats(min_value=0, max_value=1),
       flips=st.lists(st.tuples(st.floats(min_value=0, max_value=1), st.integers(1, 255)), max_size=6))
def test_checkpoint_prefixes_and_mutations_never_raise(tmp_path, name, cut, flips):
    data = bytearray(SAMPLES[name])
    for where, xor in flips:
        data[int(where * (len(data) - 1))] ^= xor
    data = bytes(data[: max(1, int(cut * len(data)))]) if cut < 1 else bytes(data)
    path = tmp_path / name
    path.write_bytes(data)
    read = read_checkpoint_file(path, name)
    assert read.info.path == name
    if data != SAMPLES[name]:
        assert read.findings or read.payload is not None


@PROFILE
@given(payload=st.binary(max_size=600))
@example(payload=b"\x80\x05\x96\x00\x00\x00\x00\x04\x00\x00\x00x")  # BYTEARRAY8 claiming 16 GiB: OOM-killed CI
def test_arbitrary_pickle_bytes_never_raise_or_run(payload):
    result, _unpickler = safe_loads(payload)
    assert result.ok in (True, False)


def test_hf_trainer_state_mutations_never_raise(tmp_path):
    source = ROOT / "fixtures" / "runs" / "hf_resumed"
    for i, cut in enumerate((0.0, 0.1, 0.5, 0.9)):
        run = tmp_path / f"run{i}"
        shutil.copytree(source, run, symlinks=True)
        for path in sorted(run.rglob("trainer_state.json")):
            data = path.read_bytes()
            path.write_bytes(data[: int(len(data) * cut)])
        result = read_hf_trainer_dir(run, run)
        assert any(f.paths and f.paths[0].endswith("trainer_state.json") for f in result.findings)


def test_permission_denied_file_and_folder(tmp_path, monkeypatch):
    run = tmp_path / "runs" / "e2_clean"
    shutil.copytree(ROOT / "fixtures" / "runs" / "e2_clean", run, symlinks=True)
    locked_dir = tmp_path / "runs" / "locked"
    locked_dir.mkdir()
    real_open, real_listdir = builtins.open, os.listdir

    def guarded_open(file, *args, **kwargs):
        if str(file).endswith(("resolved_config.json", "train.log")):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    def guarded_listdir(path="."):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_listdir(path)

    real_scandir = os.scandir

    def guarded_scandir(path="."):  # discovery lists with scandir (the entries' types come with the names)
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    real_os_open = os.open

    def guarded_os_open(file, flags, *args, **kwargs):  # open_regular: O_PATH (no permission needed), then read
        if str(file).endswith(("resolved_config.json", "train.log")) and not flags & getattr(os, "O_PATH", 0):
            raise PermissionError(13, "Permission denied", str(file))
        return real_os_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    monkeypatch.setattr(os, "listdir", guarded_listdir)
    monkeypatch.setattr(os, "scandir", guarded_scandir)
    errors = []
    found = discover(tmp_path / "runs", on_error=lambda p, why: errors.append((p.name, why)))
    assert [p.name for p in found] == ["e2_clean"]
    assert ("locked", "Permission denied") in errors
    loaded = load_run(run)
    unreadable = {f.paths[0] for f in loaded.findings if f.code == "file.unreadable"}
    assert {"resolved_config.json", "train.log"} <= unreadable
    assert loaded.series  # the event file was still read


def test_a_reader_bug_costs_only_its_file(monkeypatch):
    """A reader that raises on one file: that file is named in internal.reader-failed, the rest loads."""
    from pimm_inspect.sources.checkpoint import reader as checkpoint
    from pimm_inspect.sources.slurm import sbatch

    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")  # the patched readers must run, not the cache

    source = ROOT / "fixtures" / "runs" / "e2_clean"
    healthy = load_run(source)
    real_read = checkpoint.read_checkpoint_file

    def boom(*args, **kwargs):
        raise KeyError("a bug")

    def boom_on_one(path, rel_path):
        if rel_path == "model/model_best.pth":
            raise IndexError("another bug")
        return real_read(path, rel_path)

    monkeypatch.setattr(sbatch, "read_sbatch", boom)
    monkeypatch.setattr(checkpoint, "read_checkpoint_file", boom_on_one)
    run = load_run(source)
    failed = {f.paths: f for f in run.findings if f.code == "internal.reader-failed"}
    assert set(failed) == {("launch.sbatch",), ("model/model_best.pth",)}
    assert "KeyError" in failed[("launch.sbatch",)].message
    assert "IndexError" in failed[("model/model_best.pth",)].message
    assert {s.tag for s in run.series} == {s.tag for s in healthy.series}
    assert {c.path for c in run.checkpoints} == {c.path for c in healthy.checkpoints} - {"model/model_best.pth"}
    assert len(run.attempts) == len(healthy.attempts)
