"""Git LFS pointer files in place of checkpoints (a clone without ``git lfs pull``) are not corrupt checkpoints.

Damage cases on real fixtures: the pointer text is git-lfs's spec v1 (``version``, ``oid sha256:``, ``size``), written
over ``model/model_last.pth`` of a pimm run and over ``model.safetensors`` of an HF checkpoint.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pimm_inspect
from pimm_inspect.sources.checkpoint._lfs import lfs_pointer

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _pointer(real: Path) -> bytes:
    data = real.read_bytes()
    return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
            f"size {len(data)}\n").encode()


def _codes(run: pimm_inspect.Run, path: str) -> list[str]:
    return sorted(f.code for f in run.findings if any(p == path or path.startswith(p + "/") for p in f.paths))


def test_a_pimm_checkpoint_that_is_an_lfs_pointer_is_named_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "e2_exact_resume"
    shutil.copytree(RUNS / "e2_exact_resume", run_dir)
    target = run_dir / "model" / "model_last.pth"
    target.write_bytes(_pointer(target))
    run = pimm_inspect.load_run(run_dir)
    (ck,) = [c for c in run.checkpoints if c.path == "model/model_last.pth"]
    assert (ck.format, ck.complete) == ("lfs-pointer", False)
    assert _codes(run, "model/model_last.pth") == ["file.lfs-pointer"]  # was file.corrupt + checkpoint.incomplete
    (finding,) = [f for f in run.findings if f.code == "file.lfs-pointer"]
    assert "is a Git LFS pointer" in finding.message and "not fetched" in finding.message
    assert not any("interrupted" in f.explanation for f in run.findings if f.code == "checkpoint.incomplete")


def test_hf_weights_that_are_an_lfs_pointer_keep_the_save(tmp_path: Path) -> None:
    run_dir = tmp_path / "hf_killed"
    shutil.copytree(RUNS / "hf_killed", run_dir)
    target = run_dir / "checkpoint-8" / "model.safetensors"
    target.write_bytes(_pointer(target))
    run = pimm_inspect.load_run(run_dir)
    assert "file.lfs-pointer" in _codes(run, "checkpoint-8/model.safetensors")
    assert not {"file.corrupt", "file.truncated"} & {f.code for f in run.findings}  # was file.truncated
    assert not [f for f in run.findings if f.code == "checkpoint.incomplete"]
    assert [(a.saved_steps, a.lost_steps) for a in run.attempts] == [((8,), (9, 10))]


def test_only_a_whole_pointer_is_one() -> None:
    text = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"a" * 64 + b"\nsize 12345\n"
    assert lfs_pointer(text) == ("a" * 64, 12345)
    assert lfs_pointer(text[:-12]) is None  # no size line
    assert lfs_pointer(b"version 1.0\n" + text) is None
