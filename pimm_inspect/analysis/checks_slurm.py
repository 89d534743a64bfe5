"""Checks that cross the run's attempts with the Slurm log beside it (submitit markers, spec section 7)."""

from __future__ import annotations

from ..model import Finding, Run, Severity
from .lost_compute import failed_requeues


def check_attempts_mismatch(run: Run) -> list[Finding]:
    """``slurm.attempts-mismatch``: submitit started attempts that left no trace in train.log or event files."""
    findings = []
    logged = len(run.attempts)
    by_path = {log.path: log for log in run.slurm_logs}
    for path, ks, total in failed_requeues(run):
        log = by_path[path]
        silent = [seg for seg in log.segments if seg.k in ks]
        lines = [line for seg in silent for _kind, line in seg.problems]
        said = f" The Slurm log says: {lines[0]}" if lines else ""
        findings.append(Finding(
            "slurm.attempts-mismatch", Severity.WARNING,
            f"{log.path}: submitit started attempt(s) {', '.join(map(str, ks))} of {total}, but the run's logs show "
            f"only {logged} attempt(s)",
            (log.path,), None,
            "These attempts ended before training wrote anything: the launch script failed (no complete "
            "checkpoint to resume from, a code-snapshot timeout, a bad node) or the job was cancelled while "
            "starting. Their time was spent but no step was trained; a chain that fails this way stops "
            "requeueing." + said))
    return findings
