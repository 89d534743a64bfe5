"""The compute a run lost: steps trained that no checkpoint kept (rollbacks), and requeues that failed to start.

Per attempt the loader sets ``lost_steps``, ``lost_wall_s`` and ``lost_gpu_hours`` (``load.attempt_context``);
the run's totals (``RunSummary``: ``ls --json``, the runs table) add them up here, once, with the failed requeues:
submitit attempts a Slurm log started that left no trace in the run's logs (``slurm.attempts-mismatch``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Run


@dataclass(frozen=True, slots=True)
class LostTotals:
    """A run's lost compute over all its attempts."""

    steps: int
    """Steps trained that no checkpoint kept (each attempt's ``lost_steps`` counted)."""
    wall_s: float | None
    """Their wall time; None when no lost range has times (0.0 when nothing was lost)."""
    gpu_hours: float | None
    """Their GPU-hours; None when a lost range has no GPU count or no times (0.0 when nothing was lost)."""
    failed_requeues: int
    """submitit attempts that started but trained nothing (their allocation time is not recorded)."""


def failed_requeues(run: Run) -> list[tuple[str, tuple[int, ...], int | None]]:
    """(Slurm log, submitit attempts k, of N) per log whose attempt markers go beyond the attempts the run's logs
    show: those attempts started and trained nothing (the launch script failed, or the job was cancelled while
    starting). The one rule behind ``slurm.attempts-mismatch`` and ``LostTotals.failed_requeues``."""
    logged = len(run.attempts)
    out = []
    for log in run.slurm_logs:
        silent = [seg for seg in log.segments if seg.k is not None and seg.k > logged]
        if silent:
            out.append((log.path, tuple(sorted({seg.k for seg in silent if seg.k is not None})), silent[-1].n))
    return out


def lost_totals(run: Run) -> LostTotals:
    """The run's lost steps, wall time and GPU-hours (summed over attempts) and its failed requeues."""
    lost = [a for a in run.attempts if a.lost_steps is not None]
    steps = sum(a.lost_steps[1] - a.lost_steps[0] + 1 for a in lost if a.lost_steps is not None)
    walls = [a.lost_wall_s for a in lost]
    gpu = [a.lost_gpu_hours for a in lost]
    return LostTotals(
        steps=steps,
        wall_s=round(sum(w for w in walls if w is not None), 3) if all(w is not None for w in walls) else None,
        gpu_hours=round(sum(g for g in gpu if g is not None), 6) if all(g is not None for g in gpu) else None,
        failed_requeues=sum(len(ks) for _path, ks, _n in failed_requeues(run)))
