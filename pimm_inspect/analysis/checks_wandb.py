"""Checks about W&B identity and history cursors (spec 5.3, 11.1 items 6-7)."""

from __future__ import annotations

from collections import defaultdict

from ..model import Finding, Run, Severity
from . import _facts
from .summary import expected_cursor


def check_no_cursor(run: Run) -> list[Finding]:
    """``wandb.no-cursor``: a resume from a checkpoint without a W&B history cursor."""
    warnings = [e for e in run.events if "no W&B rewind state" in e.message]
    resumed = [a for a in run.attempts if a.origin in ("resume", "rollback", "resume-inexact")]
    if warnings:
        event = warnings[0]
        return [Finding(
            "wandb.no-cursor", Severity.WARNING,
            f"attempt {event.attempt} resumed from a checkpoint without W&B rewind state",
            (event.source,), None,
            f"{event.source}:{event.line_no}: {event.message.splitlines()[0]}\n"
            "Without `logger.wandb.resume_step` pimm cannot rewind W&B history to the checkpoint, so steps replayed "
            "after the rollback may appear twice in W&B (or W&B drops them as going backwards), or the resume "
            "started a separate W&B run. Compare the W&B run's history with the TensorBoard/train.log steps.")]
    if not resumed or not _facts.uses_wandb(run):
        return []
    legacy = [ck for ck in run.checkpoints if ck.role in ("last", "last.prev", "legacy", "other")
              and ck.wandb_state is not None and ck.wandb_cursor is None and ck.format != "hf"]
    if not legacy:
        return []
    paths = tuple(ck.path for ck in legacy)
    return [Finding(
        "wandb.no-cursor", Severity.WARNING,
        f"W&B run resumed, but {len(legacy)} checkpoint(s) carry no W&B history cursor",
        paths, None,
        "These checkpoints' `logger.wandb` has no `resume_step`/`next_step`, so a resume from them cannot rewind "
        "W&B history: replayed steps may be duplicated or the history split across runs.")]


def check_cursor_mismatch(run: Run) -> list[Finding]:
    """``wandb.cursor-mismatch``: ``resume_step != checkpoint_global_step + step_offset + 1`` (E2)."""
    findings = []
    for ck in run.checkpoints:
        expected = expected_cursor(ck)
        if expected is None or ck.wandb_cursor is None:
            continue
        global_step = ck.wandb_checkpoint_global_step if ck.wandb_checkpoint_global_step is not None else ck.global_step
        if ck.wandb_cursor != expected:
            delta = ck.wandb_cursor - expected
            what = f"{delta} extra" if delta > 0 else f"{-delta} missing"
            findings.append(Finding(
                "wandb.cursor-mismatch", Severity.WARNING,
                f"{ck.path}: W&B resume_step is {ck.wandb_cursor}, expected {expected}",
                (ck.path,), None,
                f"The checkpoint was saved at global step {global_step} with step offset {ck.wandb_step_offset or 0}, "
                f"so the next W&B history row should be {expected}. A resume rewinds W&B to row {ck.wandb_cursor}: "
                f"{what} row(s) in W&B history relative to the model's steps."))
    return findings


def check_run_split(run: Run) -> list[Finding]:
    """``wandb.run-split``: one run mapped to several W&B ids, or several local folders sharing one id."""
    findings = []
    ids = [ck.wandb_run_id for ck in sorted(run.checkpoints, key=lambda k: k.global_step or -1) if ck.wandb_run_id]
    distinct = list(dict.fromkeys(ids))
    policy = next((ck.wandb_state.get("history") for ck in run.checkpoints
                   if ck.wandb_state and isinstance(ck.wandb_state.get("history"), str)), None)
    if len(distinct) > 1:
        severity = Severity.INFO if policy == "new" else Severity.WARNING
        findings.append(Finding(
            "wandb.run-split", severity,
            f"checkpoints of this run point at {len(distinct)} W&B runs: {', '.join(distinct)}",
            tuple(ck.path for ck in run.checkpoints if ck.wandb_run_id), None,
            "Successive checkpoints carry different W&B run ids, so the run's curves are split across W&B runs. "
            + ("This is expected with the E3b history policy `new` (one W&B run per attempt)." if policy == "new"
               else "Group them in W&B (by `group`) or pass the original id to resume into one run.")))
    by_id: dict[str, list[str]] = defaultdict(list)
    for wrun in run.wandb_runs:
        if wrun.run_id:
            by_id[wrun.run_id].append(wrun.path)
    for run_id, folders in by_id.items():
        if len(folders) > 1:
            from ..sources.wandb.link_rules import id_projects  # only for runs with W&B folders

            online = [w.path for w in run.wandb_runs if w.run_id == run_id and not w.offline]
            places = [id_projects([(w.entity, w.project)]) for w in run.wandb_runs if w.run_id == run_id]
            known = [p[0] for p in places if p]
            if len(set(known)) > 1 and len(known) == len(set(known)) == len(folders):
                findings.append(Finding(
                    "wandb.run-split", Severity.WARNING,
                    f"{len(folders)} local W&B folders share run id {run_id}",
                    tuple(sorted(folders)), None,
                    f"Each folder logged to another project ({', '.join(known)}): each is a W&B run of its own, so no "
                    "two of them share a history (`wandb sync` uploads each into its own run)."))
                continue
            findings.append(Finding(
                "wandb.run-split", Severity.WARNING,
                f"{len(folders)} local W&B folders share run id {run_id}",
                tuple(sorted(folders)), None,
                "Each requeued offline attempt wrote its own folder with the same id. `wandb sync` uploads each "
                "folder separately and does not merge them, so the later upload's history conflicts with the earlier one. "
                "Sync them in order, or use W&B's resume/rewind when online." if not online else
                f"Each attempt wrote its own folder with the same id ({len(online)} of them online: their rows were "
                "streamed to the server as they were logged). Each folder holds only its own attempt's rows; what the "
                "server kept of steps logged again depends on how the attempt resumed (the W&B view of the "
                "steps.replayed finding says what the folders record: dropped steps, a resume_from rewind)."))
    for run_id in by_id:
        from ..sources.wandb.link_rules import id_projects  # only for runs with W&B folders

        projects = id_projects((w.entity, w.project) for w in run.wandb_runs if w.run_id == run_id)
        if len(projects) > 1:
            findings.append(Finding(
                "wandb.run-split", Severity.WARNING,
                f"W&B id {run_id} was used in {len(projects)} projects ({', '.join(projects)}): {len(projects)} W&B runs",
                tuple(sorted(by_id[run_id])), None,
                "A W&B run is identified by entity, project and id: the same id in another project is another run on "
                "the server, with its own history. The run's link points where its history is (the newest folder "
                "that logged rows); the other project's run holds only what its folders logged."))
    names = [w.display_name or "" for w in run.wandb_runs]
    if any(n.rsplit("-job", 1)[-1].isdigit() and "-job" in n for n in names):
        findings.append(Finding("wandb.run-split", Severity.INFO, "W&B display names carry -jobNNNN suffixes (E1 chained runs)",
                                (), None, "Before 2026-07-14 each chained attempt became its own W&B run named <base>-job0001, -job0002, ..."))
    return findings


def check_step_dropped(run: Run) -> list[Finding]:
    """``wandb.step-dropped``: W&B ignored log calls whose step went backwards."""
    findings = []
    for wrun in run.wandb_runs:
        if not wrun.dropped_steps:
            continue
        steps = sorted(wrun.dropped_steps)
        findings.append(Finding(
            "wandb.step-dropped", Severity.WARNING,
            f"W&B dropped {len(steps)} log call(s) in {wrun.path} because their step went backwards",
            (wrun.path,), (steps[0], steps[-1]),
            (f"W&B said: {wrun.dropped_step_warning.strip()[:300]}\n" if wrun.dropped_step_warning else "")
            + "W&B's `_step` must increase; a call with a smaller explicit step is ignored, so those points are "
              "missing from the W&B chart. Log a custom step metric (define_metric(..., step_metric=...)) instead "
              "of passing step=, or rewind the run with resume_from."))
    return findings


def check_one_point(run: Run) -> list[Finding]:
    """``wandb.few-rows``: the 'chart shows one point' confusion from explicit steps."""
    findings = []
    for wrun in run.wandb_runs:
        if wrun.few_rows_late_start:
            findings.append(Finding(
                "wandb.few-rows", Severity.INFO,
                f"{wrun.path}: history has only {wrun.history_rows} row(s), starting at _step {wrun.first_step}",
                (wrun.path,), None,
                "Steps were passed explicitly (run.log(..., step=N)); calls that share a step merge into one row, "
                "so a chart against _step shows one point per distinct step. Plot against a step metric "
                "(define_metric) or log without step= to get one row per call."))
    return findings


def check_missing_local_run(run: Run) -> list[Finding]:
    """``wandb.no-local-run``: a checkpoint names a W&B run id with no local folder beside the run."""
    local_ids = {w.run_id for w in run.wandb_runs if w.run_id}
    if not local_ids:
        return []
    missing = sorted({ck.wandb_run_id for ck in run.checkpoints if ck.wandb_run_id} - local_ids)
    if not missing:
        return []
    return [Finding(
        "wandb.no-local-run", Severity.INFO,
        f"checkpoint W&B run id(s) {', '.join(missing)} have no local W&B folder here",
        tuple(ck.path for ck in run.checkpoints if ck.wandb_run_id in missing), None,
        "The local wandb/ folders belong to other runs; the run named in the checkpoint was logged elsewhere "
        "(another working directory or machine) or its folder was deleted.")]


def check_link_refused(run: Run) -> list[Finding]:
    """``wandb.link-refused``: a server address, name or folder from the run's files that cannot become a link."""
    if not run.wandb.link_refused:
        return []
    reasons = run.wandb.link_refused
    return [Finding(
        "wandb.link-refused", Severity.WARNING,
        f"no W&B link or command formed: {reasons[0]}" + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""),
        tuple(run.wandb.local_dirs), None,
        "Refused: " + "; ".join(reasons) + ". A W&B link is built only on an http:// or https:// server address "
        "with a valid host and no user name or password, from an entity, project and run id without control "
        "characters or / \\ # ? % : (each percent-encoded as one path segment); a `wandb sync` command only names "
        "existing folders whose paths are text. These values come from files anyone who wrote the run controls, so "
        "`url`, `show` and the UI's o/y give no link rather than pass one on.")]
