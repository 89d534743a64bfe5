"""How each attempt began and ended: its end from the logs (train.log, the Slurm log), its restore point, a resume's
kind (exact, inexact, a rollback) and the steps no checkpoint kept (``finish_attempts``)."""

from __future__ import annotations

import dataclasses

from ..model import Attempt
from .collect import Collected

INEXACT_MARKERS = ("Skipping dataloader-cursor restore", "mid-epoch but has no dataloader state",
                   "Legacy checkpoint is mid-epoch", "State was saved with world_size",
                   "RNG state was saved with world_size", "Sampler state was saved with num_replicas",
                   "Sampler state length")
"""pimm's own warnings that a resume replayed batches (spec section 10)."""


def _close_attempts(attempts: list[Attempt], live: bool) -> list[Attempt]:
    """Say how attempts without an end marker ended: killed when a later one exists, else running/stopped."""
    out = []
    for i, att in enumerate(attempts):
        if att.ended == "unknown":
            if i < len(attempts) - 1:
                att = dataclasses.replace(att, ended="killed", end_detail=att.end_detail or
                                          "log stops without an end marker; a later attempt started")
            else:
                att = dataclasses.replace(att, ended="running" if live else "stopped",
                                          end_detail=att.end_detail or (None if live else "log stops without an end marker"))
        out.append(att)
    return out




_SLURM_KILLS = ("time-limit", "preempted", "cancelled")
_SLURM_CRASHES = ("oom", "nccl", "no-progress", "pimm-error")


def _short(line: str, limit: int = 90) -> str:
    """A Slurm log line cut to fit beside its file name (``slurmstepd: error: *** JOB ...``)."""
    line = line.removeprefix("slurmstepd: error: ").strip("* ").strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _slurm_endings(attempts: list[Attempt], c: Collected) -> list[Attempt]:
    """How the Slurm log says each attempt ended, from the part of a Slurm log that attempt wrote
    (``attempt_context.slurm_parts``: with one log submitit's attempt k is attempt k; a job resubmitted by hand
    starts again at ``attempt 1/N`` in a new log, paired by the structured logs' job ids or the job order).
    """
    from .attempt_context import slurm_parts

    parts = slurm_parts(attempts, c)
    out = []
    for att in attempts:
        found = parts.get(att.index)
        if found is None or found[1] is None or att.ended in ("completed", "crashed"):
            out.append(att)
            continue
        path, seg = found[0].path, found[1]
        problems = dict(seg.problems)
        crash = next((kind for kind in _SLURM_CRASHES if kind in problems), None)
        kill = next((kind for kind in _SLURM_KILLS if kind in problems), None)
        if seg.requeued or crash or kill:
            att = dataclasses.replace(att, sources=att.sources + (path,))
        if seg.requeued:
            att = dataclasses.replace(att, ended="killed", end_detail=(
                f"Slurm signalled submitit attempt {seg.k}/{seg.n} (time limit or preemption); requeued ({path})"))
        elif crash is not None:
            att = dataclasses.replace(att, ended="crashed", end_detail=f"{_short(problems[crash])} ({path})")
        elif kill is not None:
            att = dataclasses.replace(att, ended="killed", end_detail=f"{_short(problems[kill])} ({path})")
        out.append(att)
    return out


def finish_attempts(attempts: list[Attempt], live: bool, c: Collected) -> list[Attempt]:
    """Say how each attempt began and ended, its restore point, and which of its steps no checkpoint kept."""
    attempts = _close_attempts(_slurm_endings(attempts, c), live)
    inexact = _inexact_attempts(c)
    evidence = _has_checkpoint_evidence(c)
    out: list[Attempt] = []
    cut = _interrupted_saves(c)
    restored = [_with_restore(att, cut) for att in attempts]
    for i, att in enumerate(restored):
        prev = out[-1] if out else None
        nxt = restored[i + 1] if i + 1 < len(restored) else None
        origin = att.origin
        if origin == "resume" and prev is not None:
            if att.restore_step is not None and prev.last_step is not None and att.restore_step < prev.last_step:
                origin = "rollback"
            elif att.index in inexact:
                origin = "resume-inexact"
        keeps = _end_kept(c, nxt is None)
        lost = (_lost(att, nxt, keeps) if evidence or att.saved_steps or (nxt is not None and nxt.resume_step is not None)
                else None)
        out.append(att if (origin, lost) == (att.origin, att.lost_steps) else
                   dataclasses.replace(att, origin=origin, lost_steps=lost))
    return out


def _with_restore(att: Attempt, cut: set[int]) -> Attempt:
    """The attempt with its restore point set and its interrupted saves left out (itself when neither changes)."""
    restore = restore_point(att)
    saved = tuple(s for s in att.saved_steps if s not in cut) if cut else tuple(att.saved_steps)
    if restore == att.restore_step and saved == att.saved_steps:
        return att
    return dataclasses.replace(att, restore_step=restore, saved_steps=saved)


def _interrupted_saves(c: Collected) -> set[int]:
    """Steps whose save was cut short: every checkpoint of that step on disk is incomplete (a save line is no save).

    A checkpoint this user may not read (``file.unreadable``) or that is a Git LFS pointer (``file.lfs-pointer``) is
    not known to be incomplete and cuts nothing.
    """
    if c.model_dir is None:
        return set()
    from ..sources.checkpoint import save_unknown  # the one rule for "may not read, or not fetched"

    denied = {p for f in c.findings if save_unknown(f) for p in f.paths}
    infos = c.model_dir.checkpoints
    kept = {ck.global_step for ck in infos if ck.complete}
    return {ck.global_step for ck in infos if not ck.complete and ck.global_step is not None
            and not any(p == ck.path or p.startswith(ck.path + "/") for p in denied)} - kept


_RESUMED = ("resume", "rollback", "resume-inexact")


def restore_point(att: Attempt) -> int | None:
    """The step a resumed attempt continued from: the logged restore step, else the step before its first."""
    if att.restore_step is not None:
        return att.restore_step
    if att.origin not in _RESUMED:
        return None
    if att.resume_step is not None:
        return att.resume_step
    return att.first_step - 1 if att.first_step is not None else None


def _has_checkpoint_evidence(c: Collected) -> bool:
    """True when the run has checkpoints or a log of saves and restores: only then can work be lost."""
    if c.model_dir is not None and c.model_dir.checkpoints:
        return True
    if c.hf is not None and (c.hf.checkpoints or c.hf.attempts):
        return True
    if c.model_dir is not None or (c.train_log is not None and c.train_log.segments):
        return True  # pimm saves into model/ (a missing or empty one is itself evidence of what was lost)
    return False


def _end_kept(c: Collected, last: bool) -> bool:
    """Whether a completed attempt's end state was kept: pimm saves ``last`` as training ends; the HF Trainer's
    ``train()`` returns without saving, so only a complete final model (``save_model``: top-level weights) keeps the
    last attempt's end, and nothing keeps an earlier one's."""
    if c.hf is None or (not c.hf.checkpoints and c.hf.final_model is None):
        return True  # no checkpoint and no model file here: nothing says what was saved (weights kept elsewhere?)
    final = c.hf.final_model
    return last and final is not None and final.complete


def _lost(att: Attempt, nxt: Attempt | None, end_kept: bool = True) -> tuple[int, int] | None:
    """Steps after what survived: the next attempt's restore point, else this attempt's last save."""
    if att.last_step is None:
        return None
    went_back = (nxt is not None and nxt.origin in _RESUMED and nxt.resume_step is not None
                 and nxt.resume_step < att.last_step)
    if att.ended == "completed" and end_kept and not went_back:  # a later resume that went back redid them: lost
        return None
    if nxt is not None and nxt.origin in _RESUMED and nxt.resume_step is not None:
        # A save of this attempt after the next one's restore point still kept its steps (a resume that rewinds
        # to the epoch start retrains them on top of them): a step kept by a checkpoint is never lost.
        kept = max((nxt.resume_step, *att.saved_steps))
    elif att.saved_steps:
        kept = max(att.saved_steps)
    elif nxt is None and att.ended in ("running", "unknown"):
        return None
    elif att.resume_step is not None:
        kept = att.resume_step
    else:
        kept = (att.first_step - 1) if att.first_step is not None else 0
    return (kept + 1, att.last_step) if att.last_step > kept else None


def _inexact_attempts(c: Collected) -> set[int]:
    if c.train_log is None:
        return set()
    return {e.attempt for e in c.train_log.events
            if e.attempt is not None and any(marker in e.message for marker in INEXACT_MARKERS)}
