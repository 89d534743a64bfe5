"""Checkpoint metadata without torch: single torch.save files, DCP dirs and pimm ``model/`` folders.

Pickles are read with the allow-listing unpickler in ``safe_pickle``; tensor
bytes are never read. Field extraction follows the pimm spec sections 5.2-5.5.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ...model import CheckpointInfo, Finding, Severity, SourceFile
from ._containers import Container, read_container, read_dcp_directory
from .._common import file_finding, rel
from .safe_pickle import key_text, to_plain

__all__ = ["CheckpointRead", "ModelDirResult", "read_checkpoint_file", "read_model_dir", "checkpoint_fields"]

_HF_FILES = {"optimizer.pt", "optimizer.bin", "scheduler.pt", "rng_state.pth", "training_args.bin",
             "scaler.pt", "pytorch_model.bin"}
_ITER_RE = re.compile(r"^iter_(\d{1,18})\.pth$")


@dataclass(frozen=True, slots=True)
class CheckpointRead:
    """One checkpoint file (or DCP dir) as read: summary, findings and the placeholder tree."""

    info: CheckpointInfo
    findings: tuple[Finding, ...]
    source: SourceFile
    container: str
    """zip, legacy, pickle, dcp or unknown."""
    payload: Any = None
    """The unpickled tree with placeholders (``to_plain`` makes it JSON-like); None if unreadable."""
    globals_seen: tuple[str, ...] = ()
    """Every global the pickle(s) named, allowed or not."""
    dcp_keys: tuple[str, ...] = ()
    """Flattened state-dict keys a DCP ``.metadata`` describes."""
    byteorder: str | None = None
    archive_version: str | None = None


@dataclass(frozen=True, slots=True)
class ModelDirResult:
    """All checkpoints of a pimm ``model/`` folder plus facts about the folder itself."""

    checkpoints: tuple[CheckpointInfo, ...]
    findings: tuple[Finding, ...]
    model_link_target: str | None = None
    """What ``model`` points to when it is a symlink (as stored in the link)."""
    model_link_dangling: bool = False
    leftovers: tuple[str, ...] = ()
    """last.tmp/, last.prev/ and ``*.tmp`` entries left by an interrupted publish."""
    sources: tuple[SourceFile, ...] = ()


# ---------------------------------------------------------------- field extraction

@dataclass(frozen=True, slots=True)
class OutOfRange:
    """Marks a number read from a checkpoint that no counter can hold; the field becomes None plus a finding."""

    what: str
    """How big it was, e.g. "an integer of about 5001 digits" (never ``str()`` of the number itself)."""


MAX_FIELD_INT = 2**63
"""Steps, epochs, counts and cursors must be below this in magnitude (an int64, as pimm and torch store them)."""


def _int(value: Any) -> int | OutOfRange | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if -MAX_FIELD_INT < value < MAX_FIELD_INT:
        return value
    return OutOfRange(f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits")


def _float(value: Any) -> float | OutOfRange | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except OverflowError:  # an int beyond 1.8e308
        return OutOfRange(f"an integer of about {int(int(value).bit_length() * 0.30103) + 1} digits")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, dict) else None


def checkpoint_fields(payload: Any, rel_path: str = "", findings: list[Finding] | None = None) -> dict[str, Any]:
    """CheckpointInfo keyword values extracted from a payload dict (spec 5.2-5.4).

    A number out of range leaves its field None and, when ``findings`` is given, adds a ``file.corrupt``
    finding naming the field; every other field is still read.
    """
    cut: list[str] = []
    out = _raw_fields(payload, cut)
    if cut and findings is not None:
        findings.append(file_finding(
            "file.over-limit", rel_path, f"{rel_path}: the W&B state is {', '.join(cut)}; the rest is not shown",
            "A real checkpoint's W&B state is a few keys; this one was cut where it passed the limit. The other "
            "fields of the checkpoint were read."))
    for name, value in list(out.items()):
        if isinstance(value, OutOfRange):
            out[name] = None
            if findings is not None:
                findings.append(file_finding(
                    "file.corrupt", rel_path, f"{rel_path}: {name} is out of range ({value.what}); ignored",
                    "A step, epoch, count or cursor this large cannot come from training; the file was damaged "
                    "or made by hand. The field is shown as unknown; the rest of the checkpoint was read."))
    return out


def _raw_fields(payload: Any, cut: list[str] | None = None) -> dict[str, Any]:
    p = _dict(payload)
    if p is None:
        return {}
    out: dict[str, Any] = {"top_level_keys": tuple(key_text(k) for k in p)}
    out["schema"] = _str(p.get("schema"))
    out["version"] = _int(p.get("version")) if _int(p.get("version")) is not None else _int(p.get("checkpoint_version"))
    trainer, train_state = _dict(p.get("trainer")), _dict(p.get("train_state"))
    state = train_state or trainer  # an older ``train_state`` dict takes precedence (5.4)
    if state is not None:
        out["epoch"] = _int(state.get("epoch"))
        out["iter_in_epoch"] = _int(state.get("iter_in_epoch", state.get("iteration")))
        out["global_step"] = _int(state.get("global_step"))
        out["best_metric_value"] = _float(state.get("best_metric_value"))
    else:  # E0 / Pointcept flat dict: epoch = index+1, iter = position in epoch (as stored)
        out["epoch"] = _int(p.get("epoch"))
        out["iter_in_epoch"] = _int(p.get("iter"))
        out["global_step"] = _int(p.get("global_step"))
        out["best_metric_value"] = _float(p.get("best_metric_value"))
    out.update(_wandb_fields(p, cut))
    distributed, loader, rng = _dict(p.get("distributed")), _dict(p.get("dataloader")), _dict(p.get("rng"))
    for source in (distributed, loader, rng, train_state):
        if source is not None and _int(source.get("world_size")) is not None:
            out["world_size"] = _int(source.get("world_size"))
            break
    if loader is not None:
        out["num_workers"] = _int(loader.get("num_workers"))
        out["has_loader_state"] = loader.get("state") is not None
    elif train_state is not None:
        out["has_loader_state"] = train_state.get("dataloader_state") is not None
    elif trainer is not None or "optimizer" in p or "epoch" in p:
        out["has_loader_state"] = False  # a trainer checkpoint with no loader cursor at all
    return out


def _wandb_fields(p: Mapping[str, Any], cut: list[str] | None = None) -> dict[str, Any]:
    """W&B identity and history cursor: ``logger.wandb`` first, then flat legacy keys (5.3)."""
    logger = _dict(p.get("logger"))
    wandb = _dict(logger.get("wandb")) if logger is not None else None
    flat = {k: p[k] for k in ("wandb_run_id", "wandb_resume_step") if k in p}
    if wandb is None and not flat:
        return {}
    state = dict(wandb) if wandb is not None else {}
    out: dict[str, Any] = {"wandb_state": to_plain(state if wandb is not None else flat, cut=cut)}
    out["wandb_run_id"] = _str(state.get("run_id")) or _str(flat.get("wandb_run_id"))
    # The key's presence is the era fingerprint (E3b next_step vs E2 resume_step), even when null.
    for key, value in (("next_step", state.get("next_step")), ("resume_step", state.get("resume_step")),
                       ("wandb_resume_step", flat.get("wandb_resume_step"))):
        present = key in state if key != "wandb_resume_step" else key in flat
        if present:
            out["wandb_cursor_key"], out["wandb_cursor"] = key, _int(value)
            break
    out["wandb_step_offset"] = _int(state.get("step_offset"))
    out["wandb_checkpoint_global_step"] = _int(state.get("checkpoint_global_step"))
    return out


def _format_for(name: str, container: Container, fields: Mapping[str, Any]) -> str:
    if container.kind in ("dcp", "lfs"):
        return {"dcp": "dcp", "lfs": "lfs-pointer"}[container.kind]
    if name in _HF_FILES:
        return "hf"
    keys = set(fields.get("top_level_keys", ()))
    if keys and keys <= {"state_dict", "model"} :
        return "weights"
    if fields.get("schema") or keys & {"trainer", "train_state", "optimizer", "epoch"}:
        return "legacy"
    return "unknown"


def _role_for(rel_path: str) -> str:
    parts = rel_path.split("/")
    name = parts[-1]
    if name.endswith(".tmp") or "last.tmp" in parts:
        return "tmp"
    if "last.prev" in parts or name.endswith(".prev"):
        return "last.prev" if "last.prev" in parts else "prev"
    if name == "model_last.pth" or "last" in parts[:-1]:
        return "last"
    if name == "model_best.pth":
        return "best"
    if _ITER_RE.match(name):
        return "iter"
    return "other"


def _stat(path: Path) -> tuple[int, float]:
    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime
    except OSError:
        return 0, 0.0


# ---------------------------------------------------------------- single files

def read_checkpoint_file(path: Path, rel_path: str) -> CheckpointRead:
    """Read one torch.save file, DCP ``.metadata`` (or DCP directory) without torch; never raises."""
    size, mtime = _stat(path)
    try:
        return _read_checkpoint_file(path, rel_path, size, mtime)
    except Exception as exc:  # noqa: BLE001 - a reader bug on one file is that file's finding, never a crash
        container = Container("unknown", findings=[_reader_failed(rel_path, exc)])
        return _from_container(container, path, rel_path, size, mtime)


def _read_checkpoint_file(path: Path, rel_path: str, size: int, mtime: float) -> CheckpointRead:
    if path.is_dir():
        if (path / ".metadata").exists():
            return _from_container(read_dcp_directory(path, rel_path), path, rel_path, _tree_size(path), mtime)
        finding = file_finding("file.unreadable", rel_path, f"{rel_path}: a directory where a checkpoint file was expected")
        container = Container("unknown", findings=[finding])
        return _from_container(container, path, rel_path, size, mtime)
    return _from_container(read_container(path, rel_path), path, rel_path, size, mtime)


def _from_container(container: Container, path: Path, rel_path: str, size: int, mtime: float) -> CheckpointRead:
    field_findings: list[Finding] = []
    fields = checkpoint_fields(container.payload, rel_path, field_findings) if container.payload is not None else {}
    name = path.name
    role = _role_for(rel_path)
    match = _ITER_RE.match(name)
    if match and fields.get("global_step") is None:
        fields["global_step"] = int(match.group(1))  # pimm names iter snapshots by g (weights-only inside)
    damaged = any(f.code in ("file.corrupt", "file.truncated", "file.empty", "file.unreadable",
                             "internal.reader-failed")
                  for f in container.findings)
    info = CheckpointInfo(
        path=rel_path, format=_format_for(name, container, fields), role=role,
        complete=container.ok and not damaged and role != "tmp",
        tensor_count=container.tensor_count, tensor_bytes=container.tensor_bytes,
        size_bytes=size, mtime_s=mtime, unsafe_globals=tuple(container.unsafe_globals),
        unsafe_uncalled=tuple(g for g in container.unsafe_globals if g not in container.called_globals)
        if container.ok else (),
        **fields,
    )
    source = SourceFile(rel_path, "checkpoint", size, mtime, container.bytes_read)
    return CheckpointRead(info=info, findings=tuple(container.findings) + tuple(field_findings), source=source,
                          container=container.kind, payload=container.payload,
                          globals_seen=tuple(container.globals_seen), dcp_keys=container.dcp_keys,
                          byteorder=container.byteorder, archive_version=container.archive_version)


def _tree_size(directory: Path, max_entries: int = 10_000) -> int:
    """Total bytes of regular files under a checkpoint dir (shallow walk, capped)."""
    total, seen = 0, 0
    stack = [directory]
    while stack and seen < max_entries:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


# ---------------------------------------------------------------- model/ folder

def _read_last_dir(directory: Path, rel_dir: str, role: str) -> tuple[CheckpointInfo, list[Finding], list[SourceFile]]:
    """A standard ``last``-style dir (weights.pth + trainer.dcp/) or a DCP-only dir, merged into one info."""
    _, mtime = _stat(directory)
    try:
        return _read_sealed_dir(directory, rel_dir, role, mtime)
    except OSError as exc:  # a folder this user may not list or search: say so, never that the publish was cut
        return (CheckpointInfo(path=rel_dir, format="standard", role=role, complete=False, mtime_s=mtime),
                [file_finding("file.unreadable", rel_dir, f"{rel_dir}: cannot read ({exc.strerror})")], [])


def _read_sealed_dir(directory: Path, rel_dir: str, role: str,
                     mtime: float) -> tuple[CheckpointInfo, list[Finding], list[SourceFile]]:
    """``_read_last_dir`` once the folder's metadata is reachable (an OSError means it is not)."""
    size = _tree_size(directory)
    sealed = (directory / ".complete").is_file()
    if (directory / ".metadata").is_file():  # DCP-only layout (spec 5.4)
        read = read_checkpoint_file(directory, rel_dir)
        info = dataclasses.replace(read.info, role=role, format="dcp", size_bytes=size, mtime_s=mtime,
                                   complete=sealed and read.info.complete)
        return info, list(read.findings), [read.source]
    findings: list[Finding] = []
    sources: list[SourceFile] = []
    weights_path, dcp_dir = directory / "weights.pth", directory / "trainer.dcp"
    weights = read_checkpoint_file(weights_path, f"{rel_dir}/weights.pth") if weights_path.exists() else None
    trainer = read_checkpoint_file(dcp_dir, f"{rel_dir}/trainer.dcp") if (dcp_dir / ".metadata").exists() else None
    fields: dict[str, Any] = {}
    unsafe: list[str] = []
    called: list[str] = []
    tensors = tensor_bytes = 0
    for part in (weights, trainer):
        if part is None:
            continue
        findings += part.findings
        sources.append(part.source)
        tensors += part.info.tensor_count
        tensor_bytes += part.info.tensor_bytes
        unsafe += [g for g in part.info.unsafe_globals if g not in unsafe]
        called += [g for g in part.info.unsafe_globals if g not in part.info.unsafe_uncalled and g not in called]
    if trainer is not None:
        fields = checkpoint_fields(trainer.payload) if trainer.payload is not None else {}  # findings: in trainer
        fields["top_level_keys"] = tuple(fields.get("top_level_keys", ())) + (("model",) if weights else ())
    complete = (sealed and weights is not None and weights.info.complete and trainer is not None
                and trainer.info.complete and (dcp_dir / ".complete").is_file())
    info = CheckpointInfo(path=rel_dir, format="standard", role=role, complete=complete,
                          tensor_count=tensors, tensor_bytes=tensor_bytes, size_bytes=size, mtime_s=mtime,
                          unsafe_globals=tuple(unsafe), unsafe_uncalled=tuple(g for g in unsafe if g not in called),
                          **fields)
    return info, findings, sources


def _link_facts(model_dir: Path) -> tuple[str | None, bool]:
    try:
        if not model_dir.is_symlink():
            return None, False
        target = os.readlink(model_dir)
    except OSError:
        return None, False
    return target, not model_dir.exists()


def read_model_dir(model_dir: Path, run_root: Path) -> ModelDirResult:
    """Read every checkpoint in a pimm ``model/`` folder and mark pimm's resume candidate (spec 5.5)."""
    link_target, dangling = _link_facts(model_dir)
    rel_model = rel(model_dir, run_root)
    findings: list[Finding] = []
    try:
        st = os.stat(model_dir)
        entries = sorted(os.scandir(model_dir), key=lambda e: e.name) if stat.S_ISDIR(st.st_mode) else []
    except FileNotFoundError:
        entries = []
    except OSError as exc:
        findings.append(file_finding("file.unreadable", rel_model, f"{rel_model}: cannot list ({exc.strerror})"))
        entries = []
    infos: list[CheckpointInfo] = []
    leftovers: list[str] = []
    sources: list[SourceFile] = []
    for entry in entries:
        name, entry_rel = entry.name, f"{rel_model}/{entry.name}"
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if name in ("last.tmp", "last.prev") or name.endswith(".tmp"):
            leftovers.append(entry_rel)
        if is_dir and name in ("last", "last.prev", "last.tmp"):
            try:
                info, more, srcs = _read_last_dir(Path(entry.path), entry_rel, name)
            except Exception as exc:  # noqa: BLE001 - one odd folder must not hide the other checkpoints
                findings.append(_reader_failed(entry_rel, exc))
                continue
            if name == "last.tmp":
                info = dataclasses.replace(info, complete=False)
            infos.append(info)
            findings += more
            sources += srcs
            for inner in ("trainer.dcp.tmp", "weights.pth.tmp"):
                if os.path.lexists(os.path.join(entry.path, inner)):
                    leftovers.append(f"{entry_rel}/{inner}")
        elif name.endswith((".pth", ".pth.prev", ".pth.tmp", ".pt")) or name in _HF_FILES:
            try:
                read = read_checkpoint_file(Path(entry.path), entry_rel)
            except Exception as exc:  # noqa: BLE001 - one odd file must not hide the other checkpoints
                findings.append(_reader_failed(entry_rel, exc))
                continue
            infos.append(read.info)
            findings += read.findings
            sources.append(read.source)
    return ModelDirResult(checkpoints=tuple(_mark_resume_candidate(infos, rel_model)), findings=tuple(findings),
                          model_link_target=link_target, model_link_dangling=dangling,
                          leftovers=tuple(leftovers), sources=tuple(sources))


def _reader_failed(entry_rel: str, exc: Exception) -> Finding:
    return file_finding("internal.reader-failed", entry_rel,
                        f"{entry_rel}: could not be read: {type(exc).__name__}: {exc}"[:400],
                        "The checkpoint reader failed on this file's content; the other "
                        "checkpoints were read. Please report this bug.", Severity.ERROR)


def _mark_resume_candidate(infos: list[CheckpointInfo], rel_model: str) -> list[CheckpointInfo]:
    """Flag the newest-mtime of: complete last/, complete last.prev/, model_last.pth (a file)."""
    eligible = [i for i, info in enumerate(infos)
                if (info.path in (f"{rel_model}/last", f"{rel_model}/last.prev") and info.complete)
                or (info.path == f"{rel_model}/model_last.pth")]
    if not eligible:
        return infos
    best = max(eligible, key=lambda i: (infos[i].mtime_s if math.isfinite(infos[i].mtime_s) else 0.0))
    infos[best] = dataclasses.replace(infos[best], resume_candidate=True)
    return infos
