"""The configs of an HF Trainer output dir: ``config.json`` (the model) and ``training_args.bin`` (TrainingArguments).

``training_args.bin`` is a torch pickle of a ``TrainingArguments`` dataclass. It is read with the
allow-listing unpickler (``safe_pickle``): the class and its enums become inert placeholders, nothing is
imported or called, and the object's BUILD state (its ``__dict__``) is taken as the arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...model import ConfigDoc, Finding
from .._common import UnreadableFile, file_finding, open_regular, read_json, rel


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False when a folder on the way may not be searched (it says nothing then)."""
    try:
        return path.is_file()
    except OSError:
        return False


SAME_BYTES_CAP = 1024 * 1024
"""training_args.bin files up to this size are compared byte for byte with those already read in the run: a copy
(every checkpoint-N/ holds one, the same unless the arguments changed) is not unpickled again."""

Seen = dict[bytes, tuple[Any, tuple[str, ...]]]
"""The bytes of training_args.bin files read in one run (without a finding) -> their TrainingArguments as plain data
and the caps ``to_plain`` hit on them (the same bytes unpickle to the same state, which converts to the same)."""


def _small_bytes(path: Path, rel_path: str) -> bytes | None:
    """The file's bytes when it is a readable regular file of at most ``SAME_BYTES_CAP`` bytes, else None."""
    try:
        with open_regular(path, rel_path) as fh:
            data = fh.read(SAME_BYTES_CAP + 1)
    except (UnreadableFile, OSError):
        return None
    return data if len(data) <= SAME_BYTES_CAP else None


def _training_args(path: Path, rel_path: str, seen: Seen | None = None) -> tuple[ConfigDoc | None, list[Finding]]:
    """TrainingArguments as a plain dict, from the pickle's BUILD state (never executed).

    With ``seen``, a file byte-identical to one read before in the run (without a finding) takes that one's
    arguments: the same bytes unpickle to the same state, and convert to the same plain data.
    """
    from ..checkpoint.reader import read_checkpoint_file  # torch zip/pickle containers, read without torch
    from ..checkpoint.safe_pickle import PickledObject, to_plain

    raw = _small_bytes(path, rel_path) if seen is not None else None
    known = seen.get(raw) if seen is not None and raw is not None else None
    findings: list[Finding] = []
    if known is not None:
        data, caps = known
    else:
        read = read_checkpoint_file(path, rel_path)
        findings = list(read.findings)
        payload = read.payload
        state = payload.state if isinstance(payload, PickledObject) else None
        if not isinstance(state, dict):
            if not findings:
                findings.append(file_finding("file.corrupt", rel_path,
                                             f"{rel_path}: no TrainingArguments state in the pickle",
                                             "The file does not hold a pickled TrainingArguments object."))
            return None, findings
        cut: list[str] = []
        data = to_plain(state, cut=cut)
        caps = tuple(cut)
        if seen is not None and raw is not None and not findings:
            seen[raw] = (data, caps)
    if caps:
        findings.append(file_finding("file.over-limit", rel_path, f"{rel_path}: TrainingArguments are {', '.join(caps)}; "
                                     "the rest is not shown", "Real TrainingArguments are a flat set of a few hundred "
                                     "values; this pickle was cut where it passed the limit."))
    return (ConfigDoc(rel_path, "hf_training_args", data) if isinstance(data, dict) else None), findings


def read_hf_configs(run_dir: Path, run_root: Path, checkpoint_dirs: list[Path], seen: Seen | None = None
                    ) -> tuple[list[ConfigDoc], list[Finding]]:
    """config.json and training_args.bin from the top level, else from the newest checkpoint that has them.

    ``checkpoint_dirs`` are the checkpoint-N folders in step order; ``seen`` as in ``_training_args``.
    """
    docs: list[ConfigDoc] = []
    findings: list[Finding] = []
    folders = [run_dir] + list(checkpoint_dirs)[::-1]
    model = next((d / "config.json" for d in folders if _is_file(d / "config.json")), None)
    if model is not None:
        result = read_json(model, rel(model, run_root))
        findings += [f for f in result.findings if f.code != "file.empty"]
        if isinstance(result.data, dict):
            docs.append(ConfigDoc(rel(model, run_root), "model_config", result.data))
    args = next((d / "training_args.bin" for d in folders if _is_file(d / "training_args.bin")), None)
    if args is not None:
        doc, more = _training_args(args, rel(args, run_root), seen)
        findings += more
        if doc is not None:
            docs.append(doc)
    return docs, findings


def attempt_training_args(run_dir: Path, run_root: Path, attempts: list[Any], checkpoint_steps: list[int],
                          docs: list[ConfigDoc], seen: Seen | None = None) -> tuple[list[ConfigDoc], list[Finding]]:
    """Each attempt's TrainingArguments: the training_args.bin of the newest checkpoint that attempt saved.

    A checkpoint at step s was saved by the last attempt that trained s (it started fresh or resumed
    from a checkpoint below s, and reached s). A document already in ``docs`` gets the attempt set
    instead of being read twice.
    """
    # The attempt that saved each checkpoint (its training's, ``trainings.checkpoint_owners``); a checkpoint no
    # attempt is known to have saved (an incomplete one) goes to the last attempt that trained its step.
    owner: dict[int, int] = {step: att.index for att in attempts for step in getattr(att, "saved_steps", ())}
    for step in checkpoint_steps:
        if step in owner:
            continue
        for att in attempts:
            start = att.resumed_from_checkpoint if att.resumed_from_checkpoint is not None else 0
            if att.last_step is not None and start < step <= att.last_step:
                owner[step] = att.index
    out, findings = list(docs), []
    for att in attempts:
        owned = [s for s, index in owner.items() if index == att.index]
        if not owned:
            continue
        path = run_dir / f"checkpoint-{max(owned)}" / "training_args.bin"
        rel_path = rel(path, run_root)
        if not _is_file(path):
            continue
        known = next((i for i, d in enumerate(out) if d.path == rel_path), None)
        if known is not None:
            out[known] = ConfigDoc(out[known].path, out[known].kind, out[known].data, out[known].text, att.index)
            continue
        doc, more = _training_args(path, rel_path, seen)
        findings += more
        if doc is not None:
            out.append(ConfigDoc(doc.path, doc.kind, doc.data, None, att.index))
    return out, findings
