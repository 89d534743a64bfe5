"""The analysis of one run: every check in order (``CHECKS``), then the derived row facts (``analyze``).

Imported by name through the package (``pimm_inspect.analysis.analyze``) on first use."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..model import Finding, Run
from . import (checks_checkpoint, checks_provenance, checks_run, checks_slurm, checks_sources, checks_steps,
               checks_wandb)
from .replays import compute_replayed
from .resume_hint import resume_hint
from .summary import summarize

Check = Callable[[Run], list[Finding]]

CHECKS: tuple[tuple[str, Check], ...] = (
    ("steps.replayed", checks_steps.check_replayed),
    ("steps.gap", checks_steps.check_gaps),
    ("resume.rollback", checks_steps.check_rollback),
    ("resume.inexact", checks_steps.check_inexact),
    ("wandb.no-cursor", checks_wandb.check_no_cursor),
    ("wandb.cursor-mismatch", checks_wandb.check_cursor_mismatch),
    ("wandb.run-split", checks_wandb.check_run_split),
    ("wandb.step-dropped", checks_wandb.check_step_dropped),
    ("wandb.few-rows", checks_wandb.check_one_point),
    ("wandb.no-local-run", checks_wandb.check_missing_local_run),
    ("wandb.link-refused", checks_wandb.check_link_refused),
    ("checkpoint.incomplete", checks_checkpoint.check_incomplete),
    ("checkpoint.unsafe", checks_checkpoint.check_unsafe),
    ("provenance.git", checks_provenance.check_git),
    ("provenance.config-drift", checks_provenance.check_config_drift),
    ("provenance.secret", checks_provenance.check_secrets),
    ("run.crashed", checks_run.check_crashed),
    ("run.stalled", checks_run.check_stalled),
    ("run.ranks-diverged", checks_run.check_ranks_diverged),
    ("slurm.attempts-mismatch", checks_slurm.check_attempts_mismatch),
    ("metrics.non-finite", checks_run.check_non_finite),
    ("metrics.source-mismatch", checks_sources.check_source_mismatch),
    ("artifacts.stale", checks_run.check_stale),
)
"""Every check, in the order its findings are listed; each is a pure function of the Run."""


def run_checks(run: Run) -> list[Finding]:
    """All analysis findings for a run (its replayed ranges worked out first, as ``analyze`` does); a failing check
    becomes an ``internal.check-failed`` finding."""
    return _checks(dataclasses.replace(run, replayed=compute_replayed(run)))


def _checks(run: Run) -> list[Finding]:
    """Every check's findings on a run whose ``replayed`` analysis has set (``steps.replayed`` reads them)."""
    from ..model import Severity

    findings: list[Finding] = []
    for name, check in CHECKS:
        try:
            findings += check(run)
        except Exception as exc:  # a bug in one check must not hide the others' findings
            findings.append(Finding("internal.check-failed", Severity.INFO,
                                    f"check {name} failed: {type(exc).__name__}: {exc}"))
    return findings


def scalar_frame(run: Run, tags: tuple[str, ...] | list[str] | str = (), policy: str = "all",
                 all_sources: bool = False) -> Any:  # a pandas.DataFrame
    """``Run.scalars()``: the tidy table (tag, step, value, wall_time, attempt, source, seq) of ``scalar_rows``."""
    from .scalar_rows import scalar_rows, to_frame

    return to_frame(scalar_rows(run, tags, policy, all_sources))


def analyze(run: Run) -> Run:
    """The run with reader findings plus every check's findings, worst first, its derived row facts (the replayed
    ranges among them), and the row rules of ``Run.scalars()``."""
    run = dataclasses.replace(run, replayed=compute_replayed(run))  # computed once: the checks and every view read it
    combined = list(run.findings) + _checks(run)
    combined.sort(key=lambda f: (-int(f.severity), f.code, f.steps or (0, 0)))
    return dataclasses.replace(run, findings=tuple(combined), summary=summarize(run), scalar_table=scalar_frame,
                               resume=resume_hint(run))
