"""The exact option that resumes a run from the checkpoint a resume would pick (``show``, ``show --json``).

pimm's trainer reads two config keys (``configs/_base_/default_runtime.py``: ``weight`` and ``resume``), passed
as ``--options weight=<checkpoint> resume=True`` (what ``scripts/train.sh -r true`` builds from
``python -m pimm.utils.path latest-checkpoint <exp>/model``); the path is relative to the launch directory, like
the run's ``save_path``. The HF Trainer takes ``resume_from_checkpoint=<output_dir>/checkpoint-N`` (``Trainer.train``
argument, or ``--resume_from_checkpoint`` of the example scripts), relative to where the training script ran.
Lightning's ``Trainer.fit`` takes ``ckpt_path=<file>`` (the ``last.ckpt`` its ``ckpt_path="last"`` rule picks, in
the ``dirpath`` its ModelCheckpoint state recorded). Paths are data written by someone else, so each one is shell-quoted.
"""

from __future__ import annotations

import ntpath
import posixpath
import shlex
from collections.abc import Mapping
from typing import Any

from ..model import CheckpointInfo, ConfigDoc, ResumeHint, Run


def _doc_value(docs: tuple[ConfigDoc, ...], kinds: tuple[str, ...], key: str) -> tuple[str, str] | None:
    """The first string ``key`` of the first document of ``kinds`` that has one, with that document's path."""
    for kind in kinds:
        for doc in docs:
            if doc.kind == kind and isinstance(doc.data, Mapping):
                value = doc.data.get(key)
                if isinstance(value, str) and value:
                    return value, doc.path
    return None


def _metadata(run: Run, key: str) -> str | None:
    value = run.run_metadata.get(key) if isinstance(run.run_metadata, Mapping) else None
    return value if isinstance(value, str) and value else None


def _newer_incomplete(run: Run, picked: CheckpointInfo) -> tuple[str, ...]:
    """Incomplete checkpoints of a higher step than the picked one (an interrupted save the resume goes back past)."""
    if picked.global_step is None:
        return ()
    return tuple(ck.path for ck in run.checkpoints
                 if not ck.complete and ck.global_step is not None and ck.global_step > picked.global_step)


def _pimm(run: Run, picked: CheckpointInfo) -> tuple[str, str]:
    """pimm's ``weight=... resume=True`` and what its path is relative to."""
    found = _doc_value(run.configs, ("resolved_config", "log_config"), "save_path")
    save_path, said_by = found if found else (_metadata(run, "save_path"), "run_metadata.json")
    if save_path is None:
        return f"{shlex.quote('weight=' + picked.path)} resume=True", "the run directory (no file records save_path)"
    weight = posixpath.join(save_path, picked.path)
    if posixpath.isabs(save_path):
        base = f"absolute (save_path from {said_by})"
    else:
        cwd = _metadata(run, "cwd")
        base = (f"the launch directory {cwd} (run_metadata.json cwd; save_path from {said_by})" if cwd else
                f"the launch directory (save_path from {said_by})")
    return f"{shlex.quote('weight=' + weight)} resume=True", base


def _hf(run: Run, picked: CheckpointInfo) -> tuple[str, str]:
    """The Trainer's ``resume_from_checkpoint=<output_dir>/checkpoint-N`` and what its path is relative to."""
    found = _doc_value(run.configs, ("hf_training_args",), "output_dir")
    if found is None:
        return shlex.quote("resume_from_checkpoint=" + picked.path), "the run directory (no output_dir recorded)"
    output_dir, said_by = found
    where = "absolute" if posixpath.isabs(output_dir) else "the training script's working directory"
    return (shlex.quote("resume_from_checkpoint=" + posixpath.join(output_dir, picked.path)),
            f"{where} (output_dir from {said_by})")


def _lightning(run: Run, picked: CheckpointInfo) -> tuple[str, str]:
    """Lightning's ``trainer.fit(model, ckpt_path=<file>)`` and what its path is relative to: the ModelCheckpoint
    ``dirpath`` the picked file's callback state records (where the training wrote it), else the run directory.
    ``ckpt_path="last"`` finds it only when the new Trainer saves into that same folder (a new logger version does
    not), so the option names the file."""
    name = posixpath.basename(picked.path)
    if picked.saved_dir is None:
        return (shlex.quote("ckpt_path=" + picked.path),
                "the run directory (no ModelCheckpoint dirpath recorded in the checkpoint)")
    saved = picked.saved_dir
    windows = "\\" in saved and "/" not in saved  # written on Windows: join as it writes paths
    where = ("absolute" if (ntpath.isabs(saved) if windows else posixpath.isabs(saved))
             else "the training script's working directory")
    return (shlex.quote("ckpt_path=" + (ntpath.join(saved, name) if windows else posixpath.join(saved, name))),
            f"{where} (ModelCheckpoint dirpath recorded in {picked.path})")


def resume_hint(run: Run) -> ResumeHint | None:
    """The option that resumes ``run`` from the checkpoint a resume would pick (``CheckpointInfo.resume_candidate``);
    None when no checkpoint qualifies or the run's trainer takes no such option that this tool knows."""
    picked = next((ck for ck in run.checkpoints if ck.resume_candidate), None)
    if picked is None:
        return None
    tool = "lightning" if picked.format == "lightning" else run.kind  # a Lightning checkpoint under any run kind
    maker: Any = {"pimm": _pimm, "hf-trainer": _hf, "lightning": _lightning}.get(tool)
    if maker is None:
        return None
    option, base = maker(run, picked)
    return ResumeHint(checkpoint=picked.path, step=picked.global_step, tool=tool, option=option, path_base=base,
                      newer_incomplete=_newer_incomplete(run, picked))
