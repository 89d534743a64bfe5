"""checkpoint-N/ directories of HF Trainer runs: files present and safetensors header metadata (no weights read)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...model import CheckpointInfo, Finding, Severity
from .._common import UnreadableFile, file_finding, open_regular, rel
from .._limits import json_over_limit
from ..checkpoint import LFS_HEAD, lfs_finding, read_pointer, save_unknown
from .state import STATE_NAME, StateDoc, as_float, as_int, read_state

CHECKPOINT_RE = re.compile(r"^(tmp-)?checkpoint-(\d{1,18})$")
"""At most 18 digits: a longer number is not a step (and ``int()`` refuses over 4300 digits)."""
WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin",
                "model.safetensors.index.json", "pytorch_model.bin.index.json")
RESUME_NAMES = ("optimizer.pt", "scheduler.pt")
MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024
MAX_SAFETENSORS_VALUES = 2_000_000
"""Headers with more JSON containers and separators than this are not parsed (a real tensor costs ~7).

Counted on the raw bytes before ``json.loads``, whose objects cost ~60x their text: 90 MB of ``[],``
would take several GB.
"""
_SHARD_RE = re.compile(r"^(model|adapter_model)-\d+-of-\d+\.(safetensors|bin)$")


def is_weight_file(name: str) -> bool:
    """True for the weight files save_model() writes (single, sharded or adapter)."""
    return name in WEIGHT_NAMES or _SHARD_RE.match(name) is not None


@dataclass(frozen=True, slots=True)
class HfCheckpoint:
    """What is on disk in one checkpoint-N directory, beside its CheckpointInfo."""

    info: CheckpointInfo
    dir_step: int
    """N from the directory name."""
    state_step: int | None
    """global_step from its trainer_state.json; None when absent or unreadable."""
    files: tuple[str, ...]
    """Names of the files present (not recursive)."""
    missing: tuple[str, ...]
    """Essential files that are absent."""
    weight_dtypes: tuple[str, ...] = ()
    denied: bool = False
    """True when a file or the folder may not be read by this user, or a file is a Git LFS pointer (not fetched):
    not known to be incomplete."""
    save_finished: bool = False
    """True when its trainer_state.json is there and intact: ``Trainer._save_checkpoint`` writes it after the weights,
    optimizer and scheduler, so the save ran to its end (files missing beside it were deleted or not copied since)."""


def safetensors_meta(path: Path, rel_path: str) -> tuple[int, int, tuple[str, ...], list[Finding]]:
    """Tensor count, data bytes and dtypes from a safetensors header (the weights are never read)."""
    try:
        with open_regular(path, rel_path) as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if head[:4] == LFS_HEAD and (pointer := read_pointer(fh)) is not None:
                return 0, 0, (), [lfs_finding(rel_path, pointer)]
            if len(head) < 8:
                return 0, 0, (), [file_finding("file.truncated", rel_path, f"{rel_path} has {size} bytes, fewer "
                                               "than the 8-byte safetensors header length")]
            length = int.from_bytes(head, "little")
            if length > min(size - 8, MAX_SAFETENSORS_HEADER):
                return 0, 0, (), [file_finding("file.truncated" if length > size - 8 else "file.corrupt", rel_path,
                                               f"{rel_path}: safetensors header length {length} does not fit the "
                                               f"{size}-byte file")]
            header_bytes = fh.read(length)
    except UnreadableFile as exc:
        return 0, 0, (), [exc.finding]
    except OSError as exc:
        return 0, 0, (), [file_finding("file.unreadable", rel_path, f"{rel_path}: read failed ({exc.strerror})")]
    values = header_bytes.count(b"{") + header_bytes.count(b"[") + header_bytes.count(b",")
    if values > MAX_SAFETENSORS_VALUES:
        return 0, 0, (), [file_finding("file.corrupt", rel_path, f"{rel_path}: safetensors header holds over "
                                       f"{MAX_SAFETENSORS_VALUES} JSON values; not parsed")]
    try:
        header_text = header_bytes.decode("utf-8", errors="replace")
        if json_over_limit(header_text):
            return 0, 0, (), [file_finding("file.over-limit", rel_path, f"{rel_path}: safetensors header "
                                           f"{json_over_limit(header_text)}")]
        header = json.loads(header_text)
        tensors = {k: v for k, v in header.items() if k != "__metadata__"}
        offsets = [(int(v["data_offsets"][0]), int(v["data_offsets"][1])) for v in tensors.values()]
        if any(not 0 <= start <= end < 2**63 for start, end in offsets):
            raise ValueError("data offsets out of range")
        ends = [end for _, end in offsets]
        total = sum(end - start for start, end in offsets)
        dtypes = tuple(sorted({str(v["dtype"])[:32] for v in tensors.values()}))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
        return 0, 0, (), [file_finding("file.corrupt", rel_path, f"{rel_path}: safetensors header is not valid")]
    findings = []
    if 8 + length + max(ends, default=0) > size:
        findings.append(file_finding("file.truncated", rel_path, f"{rel_path}: tensor data should end at byte "
                                     f"{8 + length + max(ends)} but the file has {size} bytes"))
    return len(tensors), total, dtypes, findings


def weights_meta(folder: Path, names: list[str], run_root: Path) -> tuple[int, int, tuple[str, ...], list[Finding]]:
    """Sum safetensors metadata over the weight files of a folder (sharded files included)."""
    count = total = 0
    dtypes: set[str] = set()
    findings: list[Finding] = []
    for name in names:
        if name.endswith(".safetensors"):
            c, b, d, f = safetensors_meta(folder / name, rel(folder / name, run_root))
            count, total, findings = count + c, total + b, findings + f
            dtypes.update(d)
    return count, total, tuple(sorted(dtypes)), findings


@dataclass(frozen=True, slots=True)
class Listing:
    """A folder's non-directory entries (``list_files``), with each regular file's stat."""

    names: list[str]
    """Sorted names of the non-directory entries (FIFOs, sockets and dangling links too)."""
    stats: dict[str, os.stat_result]
    """Name -> stat (links followed) of the regular files."""
    size: int
    mtime: float
    """Total size and newest mtime of the regular files (0 and 0.0 when there is none)."""
    error: OSError | None = None
    """Why the folder could not be listed (then nothing is in it)."""


def listing(folder: Path) -> Listing:
    """The non-directory entries of ``folder`` (no recursion), each regular file stat'ed once."""
    names, stats, size, mtime = [], {}, 0, 0.0
    try:
        entries = list(os.scandir(folder))
    except OSError as exc:
        return Listing([], {}, 0, 0.0, exc)
    for entry in entries:
        try:
            if entry.is_dir():
                continue
            names.append(entry.name)
            if entry.is_file():
                st = stats[entry.name] = entry.stat()
                size, mtime = size + st.st_size, max(mtime, st.st_mtime)
        except OSError:  # vanished or a dangling link: keep the name, reading it will say why
            continue
    return Listing(sorted(names), stats, size, mtime)


def list_files(folder: Path) -> tuple[list[str], int, float]:
    """Names of the non-directory entries, total size and newest mtime of the regular files (no recursion).

    FIFOs and sockets are listed by name so that readers report them (opening is refused later, never blocks).
    """
    found = listing(folder)
    return found.names, found.size, found.mtime


def _in_range(value: object) -> object:
    """A JSON number as it is, or None for an integer no step or metric can be (``float()`` would overflow)."""
    return None if isinstance(value, int) and not -2**63 < value < 2**63 else value


def _resume_effect(missing: list[str], damaged: bool, state_bad: bool, tmp: bool, only_resume: bool,
                   save_finished: bool, empty: tuple[str, ...] = ()) -> str:
    """What ``Trainer.train(resume_from_checkpoint=<this folder>)`` does with what is missing or damaged (transformers'
    ``_load_from_checkpoint``, ``_load_optimizer_and_scheduler``, ``_load_rng_state``), and how it came to be so."""
    if tmp:
        return ("HF saves into tmp-checkpoint-N and renames it when the save finishes: this one never finished, and "
                "get_last_checkpoint never picks it.")
    if damaged or missing[:1] in (["model.safetensors"], ["adapter_model.safetensors"]):  # no weights, or damaged
        effect = "Resuming from it fails (no readable weights: \"Can't find a valid checkpoint\")."
    elif any(is_weight_file(n) for n in empty):
        effect = (f"Resuming from it fails: loading the empty {', '.join(n for n in empty if is_weight_file(n))} "
                  "raises.")
    elif empty:  # transformers torch.loads optimizer, scheduler and RNG state when the files are there
        effect = f"Resuming from it fails: torch.load raises on the empty {', '.join(empty)}."
    else:
        effects = []
        if STATE_NAME in missing or state_bad:
            effects.append(f"without a readable {STATE_NAME} it loads the weights but restarts at step 0")
        if set(RESUME_NAMES) & set(missing):
            effects.append("the optimizer and scheduler start afresh (HF loads them only when both are there)")
        if "rng_state.pth" in missing:
            effects.append("the random state is not restored (HF warns and goes on)")
        effect = f"Resuming from it: {'; '.join(effects)}." if effects else ""
    gone = "emptied" if empty and not missing else "deleted or not copied"
    why = (f"Its save ran to its end (trainer_state.json is written last): the files were {gone} since."
           if save_finished else
           "save_only_model=True skips optimizer, scheduler and RNG state on purpose; otherwise the save was "
           "interrupted or files were deleted since." if only_resume else
           "The save was interrupted, or files were deleted or not copied since.")
    return f"{effect} {why}".strip()


def read_checkpoint_dir(folder: Path, step: int, tmp: bool,
                        run_root: Path) -> tuple[HfCheckpoint, StateDoc | None, list[Finding]]:
    """Inspect one checkpoint-N directory: files present, weight metadata, its trainer_state.json."""
    rel_dir = rel(folder, run_root)
    found = listing(folder)
    names, size, mtime = found.names, found.size, found.mtime
    findings: list[Finding] = []
    if found.error is not None:  # an empty listing must not read as a save that never finished
        findings.append(file_finding("file.unreadable", rel_dir, f"{rel_dir}: cannot list ({found.error.strerror})"))
    state = None
    if STATE_NAME in names:
        state, more = read_state(folder / STATE_NAME, f"{rel_dir}/{STATE_NAME}")
        findings += more
    weight_names = [n for n in names if is_weight_file(n)]
    count, total, dtypes, more = weights_meta(folder, weight_names, run_root)
    findings += more
    # A PEFT adapter checkpoint (adapter_config.json) saves adapter_model.safetensors as its weights.
    missing = [] if weight_names else ["adapter_model.safetensors" if "adapter_config.json" in names
                                       else "model.safetensors"]
    missing += [n for n in (STATE_NAME, *RESUME_NAMES) if n not in names]
    if not any(n.startswith("rng_state") for n in names):
        missing.append("rng_state.pth")
    # Weights, optimizer, scheduler and RNG state of 0 bytes: no save writes them so; they were emptied since.
    empty = [n for n in names if (is_weight_file(n) or n in RESUME_NAMES or n.startswith("rng_state"))
             and n in found.stats and found.stats[n].st_size == 0]
    damaged = any(f.code in ("file.truncated", "file.corrupt", "file.unreadable") for f in more) and \
        not set(weight_names) <= set(empty)
    state_bad = STATE_NAME in names and (state is None or state.damaged)
    state_step = as_int(_in_range(state.fields.get("global_step"))) if state else None
    complete = not missing and not damaged and not empty and not state_bad and not tmp
    save_finished = not tmp and state is not None and not state.damaged
    # A file this user may not read, or a Git LFS pointer in its place, says nothing about how the save ended:
    # file.unreadable or file.lfs-pointer names it.
    unreadable = any(save_unknown(f) for f in findings)
    if not complete and not unreadable:
        only_resume = set(missing) <= {*RESUME_NAMES, "rng_state.pth"} and not damaged and not state_bad and not tmp \
            and not empty
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + \
            ([f"empty (0 bytes): {', '.join(empty)}"] if empty else [])
        why = ("a temporary directory HF renames when a save finishes" if tmp else
               "; ".join(parts) if parts else "a weights file is damaged" if damaged else
               f"{STATE_NAME} is damaged or unreadable")
        if save_finished and (missing or empty) and not tmp:
            gone = "deleted or not copied" if missing and not empty else "emptied" if not missing else \
                "deleted, emptied or not copied"
            why += (f"; its {STATE_NAME}, which the Trainer writes after the weights and optimizer, is there: the save "
                    f"finished and these files were {gone} since")
        findings.append(Finding("checkpoint.incomplete", Severity.INFO if only_resume and len(missing) == 3
                                else Severity.WARNING, f"{rel_dir} is incomplete: {why}", (rel_dir,), (step, step),
                                _resume_effect(missing, damaged, state_bad, tmp, only_resume,
                                               save_finished and bool(missing or empty), tuple(empty))))
    if state_step is not None and state_step != step and not tmp:
        findings.append(Finding("hf.checkpoint-step-mismatch", Severity.WARNING, f"{rel_dir}/{STATE_NAME} says "
                                f"global_step={state_step}, the directory name says {step}", (rel_dir,), (step, step)))
    best = as_float(_in_range(state.fields.get("best_metric"))) if state else None
    info = CheckpointInfo(path=rel_dir, format="hf", role="tmp" if tmp else "checkpoint", complete=complete,
                          global_step=state_step if state_step is not None else step, best_metric_value=best,
                          tensor_count=count, tensor_bytes=total, size_bytes=size, mtime_s=mtime)
    return (HfCheckpoint(info, step, state_step, tuple(names), tuple(missing), dtypes, unreadable, save_finished), state,
            findings)
