"""PyTorch Lightning's checkpoints in a logger version folder (``lightning_logs/version_N/checkpoints/*.ckpt``).

``ModelCheckpoint`` saves into ``<logger save_dir>/<name>/<version>/checkpoints`` unless given a ``dirpath``; each
``.ckpt`` is a ``torch.save`` zip holding ``epoch``, ``global_step``, ``pytorch-lightning_version`` and, under
``callbacks``, every ModelCheckpoint's state (``dirpath``, ``last_model_path``, ``best_model_path``). Read without
torch and without calling anything (``safe_pickle``). Lightning's own rule for ``ckpt_path="last"``
(``ModelCheckpoint._find_last_checkpoints`` and the checkpoint connector) picks, among the files of that folder named
``last.ckpt`` or ``last-vN.ckpt``, the newest by modification time: that one is the resume candidate. A folder with
no such file names no checkpoint a resume would use, and none is marked.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...model import CheckpointInfo, Finding, SourceFile
from .._common import file_finding, rel
from .reader import ModelDirResult, _reader_failed, read_checkpoint_file
from .safe_pickle import to_plain

LIGHTNING_DIR = "checkpoints"
_LAST = re.compile(r"^last(-v?\d+)?\.ckpt$")
"""``CHECKPOINT_NAME_LAST`` with Lightning's version suffix (``last-v1.ckpt``) or its step suffix."""


def _saved_dir(payload: Any) -> str | None:
    """The ``dirpath`` the checkpoint's ModelCheckpoint state records (the first one that names one)."""
    callbacks = payload.get("callbacks") if isinstance(payload, Mapping) else None
    if not isinstance(callbacks, Mapping):
        return None
    for key, state in callbacks.items():
        if str(key).startswith("ModelCheckpoint") and isinstance(state, Mapping):
            dirpath = to_plain(state.get("dirpath"), max_nodes=10)
            if isinstance(dirpath, str) and dirpath:
                return dirpath
    return None


def _logged_step(payload: Any) -> int | None:
    """The fit loop's ``_batches_that_stepped`` (``loops.fit_loop['epoch_loop.state_dict']``): the step axis Lightning's
    loggers write, where ``global_step`` counts every optimizer step."""
    loops = payload.get("loops") if isinstance(payload, Mapping) else None
    fit = loops.get("fit_loop") if isinstance(loops, Mapping) else None
    epoch_loop = fit.get("epoch_loop.state_dict") if isinstance(fit, Mapping) else None
    value = to_plain(epoch_loop.get("_batches_that_stepped"), max_nodes=2) if isinstance(epoch_loop, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63 else None


def read_lightning_checkpoints(folder: Path, run_root: Path) -> ModelDirResult:
    """Every ``*.ckpt`` in a Lightning version folder's ``checkpoints/`` (step, epoch, completeness, the recorded
    ``dirpath``), with Lightning's ``ckpt_path="last"`` pick marked as the resume candidate."""
    rel_dir = rel(folder, run_root)
    findings: list[Finding] = []
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".ckpt"))
    except OSError as exc:
        return ModelDirResult(checkpoints=(), findings=(file_finding(
            "file.unreadable", rel_dir, f"{rel_dir}: cannot list ({exc.strerror})"),))
    infos: list[CheckpointInfo] = []
    sources: list[SourceFile] = []
    for name in names:
        entry_rel = f"{rel_dir}/{name}"
        try:
            read = read_checkpoint_file(folder / name, entry_rel)
        except Exception as exc:  # noqa: BLE001 - one odd file must not hide the other checkpoints
            findings.append(_reader_failed(entry_rel, exc))
            continue
        infos.append(dataclasses.replace(read.info, format="lightning", role="last" if _LAST.match(name) else "other",
                                         saved_dir=_saved_dir(read.payload), logged_step=_logged_step(read.payload)))
        findings += read.findings
        sources.append(read.source)
    last = [i for i, info in enumerate(infos) if _LAST.match(info.path.rsplit("/", 1)[-1]) and info.complete]
    if last:
        pick = max(last, key=lambda i: infos[i].mtime_s if math.isfinite(infos[i].mtime_s) else 0.0)
        infos[pick] = dataclasses.replace(infos[pick], resume_candidate=True)
    return ModelDirResult(checkpoints=tuple(infos), findings=tuple(findings), sources=tuple(sources))
