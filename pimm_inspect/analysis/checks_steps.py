"""Checks about steps across attempts: replays, gaps, rollbacks, inexact resumes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..model import Finding, Run, ScalarSeries, Severity
from . import _facts
from .curves import overlaps, within_duplicates


@dataclass
class _Replay:
    first: int
    last: int
    paths: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    max_diff: float = float("nan")
    max_diff_tag: str = ""
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per file: the step range it holds for the affected tags (evidence for the explanation)."""
    purged: bool = False
    kinds: set[str] = field(default_factory=set)


def _has_purge_marker(run: Run, newer_source: str, first_overlap: int) -> bool:
    """A session_log START at or before the overlap in the newer file makes TensorBoard drop the old copy."""
    for event_file in run.event_files:
        if event_file.path == newer_source:
            return any(m.kind == "session_log" and m.detail.upper() == "START" and m.step <= first_overlap
                       for m in event_file.markers)
    return False


def check_replayed(run: Run) -> list[Finding]:
    """``steps.replayed``: the same step written by more than one attempt or writer."""
    stale = _facts.stale_event_files(run)  # another run's steps: artifacts.stale reports those
    by_tag: dict[tuple[str, str], list[ScalarSeries]] = defaultdict(list)
    for s in run.series:
        kind = _facts.source_kind(run, s)
        if s.source in stale:
            continue
        by_tag[(s.tag, kind)].append(s)
    replays: dict[tuple[str, str], _Replay] = {}
    for (tag, kind), group in by_tag.items():
        for ov in overlaps(group):
            key = (f"attempt {ov.older_attempt}" if ov.older_attempt is not None else ov.older,
                   f"attempt {ov.newer_attempt}" if ov.newer_attempt is not None else ov.newer)
            if key[0] == key[1]:
                continue
            rep = replays.setdefault(key, _Replay(ov.first_step, ov.last_step))
            rep.first, rep.last = min(rep.first, ov.first_step), max(rep.last, ov.last_step)
            rep.paths |= {ov.older, ov.newer}
            rep.tags.add(tag)
            rep.kinds.add(kind)
            if kind == "tb_events" and _has_purge_marker(run, ov.newer, ov.first_step):
                rep.purged = True
            # Report the loss when it is among the tags: a diff in point counts says little.
            loss_like = "loss" in tag
            better = not rep.max_diff_tag or (loss_like and "loss" not in rep.max_diff_tag) or (
                loss_like == ("loss" in rep.max_diff_tag) and not (ov.max_abs_diff <= rep.max_diff))
            if np.isfinite(ov.max_abs_diff) and better:
                rep.max_diff, rep.max_diff_tag = ov.max_abs_diff, tag
            for member in group:
                if member.source in (ov.older, ov.newer) and len(member):
                    lo, hi = rep.spans.get(member.source, (member.first_step, member.last_step))
                    rep.spans[member.source] = (min(lo, member.first_step), max(hi, member.last_step))
        for s in group:
            dup = within_duplicates(s, differing_only=True)
            if dup and kind != "train_log":
                rep = replays.setdefault((s.source, s.source), _Replay(dup[0], dup[1]))
                rep.first, rep.last = min(rep.first, dup[0]), max(rep.last, dup[1])
                rep.paths.add(s.source)
                rep.tags.add(tag)
                rep.kinds.add(kind)
    for first, last in (run.hf.replayed if run.hf is not None else ()) if not replays else ():
        rep = replays.setdefault(("hf attempt", "hf resume"), _Replay(first, last))
        rep.paths.add("trainer_state.json")
        rep.kinds.add("hf_trainer")
    return [_replay_finding(run, key, rep) for key, rep in sorted(replays.items(), key=lambda kv: kv[1].first)]


def _replay_finding(run: Run, key: tuple[str, str], rep: _Replay) -> Finding:
    span = _facts.fmt_range(rep.first, rep.last)
    what = f"step {span}" if rep.first == rep.last else f"steps {span}"
    paths = tuple(sorted(rep.paths))
    if key[0] == key[1]:
        message = f"{what} appear{'s' if rep.first == rep.last else ''} more than once inside {key[0]}"
    else:
        message = f"{what} {'was' if rep.first == rep.last else 'were'} written by {key[0]} and again by {key[1]}"
    evidence = "; ".join(f"{path} holds steps {_facts.fmt_range(*rep.spans[path])}" for path in paths if path in rep.spans)
    lines = [f"{evidence or 'Files: ' + ', '.join(paths)}. Tags affected: {len(rep.tags)} "
             f"(e.g. {', '.join(sorted(rep.tags, key=lambda t: ('loss' not in t, t))[:3])})."]
    if np.isfinite(rep.max_diff):
        exact = ("the copies are identical (a deterministic replay)" if rep.max_diff == 0 else
                 f"the copies differ by up to {rep.max_diff:.4g} in {rep.max_diff_tag}")
        lines.append(f"Replay check: {exact}.")
    views = []
    if "tb_events" in rep.kinds:
        if rep.purged:
            views.append(("TensorBoard", "drops the older copy (the newer file starts with a purge marker)"))
            lines.append("TensorBoard: the newer file starts with a purge marker (session_log START), so TensorBoard "
                         "drops the older copy; its Python loader ignores the first restart marker in a run, so it may still show both.")
        else:
            views.append(("TensorBoard", "its default (Rust) loader shows the newest copy per step"))
            lines.append("TensorBoard: its default (Rust) loader shows the newest copy per step; its Python loader "
                         "(EventAccumulator, tbparse) keeps both copies and draws a zig-zag. Nothing in the files marks the "
                         f"restart (pimm passes no purge_step): to see one copy, move the older file's steps {span} aside "
                         "or pass purge_step to the writer on resume.")
    wandb_shows, wandb_sentence = _wandb_view(run, rep.first)
    views.append(("W&B", wandb_shows))
    lines.append(wandb_sentence)
    lines.append("pimm-inspect: pick the overlap policy (all / newest / oldest) in `curves --policy` or the UI; "
                 "`newest` matches what TensorBoard's default loader shows.")
    severity = Severity.INFO if rep.purged else Severity.WARNING
    return Finding("steps.replayed", severity, message, paths, (rep.first, rep.last), " ".join(lines),
                   views=tuple(views))


def _wandb_view(run: Run, first: int) -> tuple[str, str]:
    """(what W&B shows, the explanation's sentence about it)."""
    if run.kind == "wandb":
        return ("keeps the first value logged for a step, so the replayed copy may be dropped",
                "W&B: each local folder is uploaded as-is by `wandb sync`; for one run id the server keeps the "
                "first value logged for a step, so the replayed copy may be dropped.")
    if run.kind == "hf-trainer":
        return ("drops replayed steps as going backwards (if reporting)",
                "W&B (if reporting): the Trainer logs with its own step, so replayed steps are dropped as going backwards.")
    if not _facts.uses_wandb(run):
        return "not used by this run", "W&B: not used by this run."
    cursors = [ck for ck in run.checkpoints if ck.wandb_cursor is not None]
    if cursors:
        return ("shows only the replayed copy (history rewound by the checkpoint cursor)",
                f"W&B: resumed with the checkpoint cursor (resume_from rewinds history to row {first}), "
                "so W&B shows only the replayed copy.")
    return ("keeps the first value logged for each step and drops the replays, or the resume started a new run",
            "W&B: no history cursor in the checkpoint, so W&B keeps the first value logged for each step and "
            "drops the replays with a warning, or the resume started a new run.")


def _densest_by_kind(run: Run) -> dict[str, dict[int, ScalarSeries]]:
    """Per source kind, the attempt-attributed series of its most densely logged tag."""
    per_kind: dict[str, dict[str, dict[int, ScalarSeries]]] = defaultdict(lambda: defaultdict(dict))
    for s in run.series:
        if s.attempt is not None and len(s):
            per_kind[_facts.source_kind(run, s)][s.tag][s.attempt] = s
    densest: dict[str, dict[int, ScalarSeries]] = {}
    for kind, tags in per_kind.items():
        # Per-epoch metrics (val/*, train/*) are too sparse to show a gap; the per-step ones are not.
        densest[kind] = max(tags.values(), key=lambda by_attempt: (sum(len(s) for s in by_attempt.values()),
                                                                    len(by_attempt)))
    return densest


def check_gaps(run: Run) -> list[Finding]:
    """``steps.gap``: steps missing between consecutive attempts, in every source that covers both."""
    verdicts: dict[tuple[int, int], list[bool]] = defaultdict(list)
    for by_attempt in _densest_by_kind(run).values():
        steps = np.unique(np.concatenate([s.steps for s in by_attempt.values()]))
        diffs = np.diff(steps)
        interval = int(np.median(diffs)) if diffs.size else 1
        ordered = sorted(by_attempt)
        for a, b in zip(ordered, ordered[1:]):
            jump = by_attempt[b].first_step - by_attempt[a].last_step
            verdicts[(a, b)].append(jump > max(2 * interval, interval + 1))
    findings = []
    by_index = {a.index: a for a in run.attempts}
    for (a, b), flags in sorted(verdicts.items()):
        prev, nxt = by_index.get(a), by_index.get(b)
        if not flags or not all(flags) or prev is None or nxt is None or prev.last_step is None or nxt.first_step is None:
            continue
        first, last = prev.last_step + 1, nxt.first_step - 1
        if last < first:
            continue
        findings.append(Finding(
            "steps.gap", Severity.WARNING,
            f"no steps logged between {prev.last_step} (end of attempt {prev.index}) and {nxt.first_step} (start of attempt {nxt.index})",
            tuple(sorted(set(prev.sources) | set(nxt.sources))), (first, last),
            f"Attempt {nxt.index} started at step {nxt.first_step} although attempt {prev.index} stopped logging at "
            f"{prev.last_step}, in every source that covers both: its log was lost (unflushed writer, deleted file) "
            "or it resumed from a checkpoint newer than anything logged."))
    return findings


def check_rollback(run: Run) -> list[Finding]:
    """``resume.rollback``: an attempt resumed from a checkpoint older than the previous attempt's last step."""
    findings = []
    attempts = list(run.attempts)
    for prev, nxt in zip(attempts, attempts[1:]):
        if prev.last_step is None:
            continue
        restored = nxt.resume_step
        if restored is None and nxt.first_step is not None and nxt.origin in ("resume", "rollback", "resume-inexact"):
            restored = nxt.first_step - 1
        if restored is None or restored >= prev.last_step:
            continue
        lost = prev.last_step - restored
        source = nxt.resumed_from or "a checkpoint"
        findings.append(Finding(
            "resume.rollback", Severity.WARNING,
            f"attempt {nxt.index} resumed from step {restored} after attempt {prev.index} reached {prev.last_step}: "
            f"rolled back {lost} step{'s' if lost != 1 else ''}",
            tuple(sorted(set(prev.sources) | set(nxt.sources))), (restored + 1, prev.last_step),
            f"Attempt {prev.index} ended ({prev.ended}) at step {prev.last_step}; its last checkpoint was at step {restored}, "
            f"so attempt {nxt.index} restarted from {source} and trained steps {restored + 1}-{prev.last_step} again. "
            f"The work after step {restored} was lost; save more often (save_freq) to lose less on preemption."))
    return findings


_INEXACT = ("Skipping dataloader-cursor restore", "mid-epoch but has no dataloader state",
            "Legacy checkpoint is mid-epoch", "State was saved with world_size", "RNG state was saved with world_size",
            "Sampler state was saved with num_replicas", "Sampler state length", "Cannot create an exact mid-epoch checkpoint")


def check_inexact(run: Run) -> list[Finding]:
    """``resume.inexact``: pimm's own non-exact-resume warnings, one finding per attempt."""
    per_attempt: dict[int | None, list] = defaultdict(list)
    for event in run.events:
        if event.level in ("WARNING", "ERROR") and any(marker in event.message for marker in _INEXACT):
            per_attempt[event.attempt].append(event)
    findings = []
    for attempt, events in per_attempt.items():
        first_line = events[0].message.splitlines()[0]
        who = f"attempt {attempt}" if attempt is not None else "a resumed attempt"
        quoted = "\n".join(f"  {e.source}:{e.line_no}: {e.message.splitlines()[0]}" for e in events)
        findings.append(Finding(
            "resume.inexact", Severity.WARNING, f"{who} did not resume exactly: {first_line}",
            tuple(sorted({e.source for e in events})), None,
            "pimm warned that it could not restore the exact data-loader position, so already-seen batches were "
            f"replayed and the curves after the seam are not bit-for-bit what an uninterrupted run would give:\n{quoted}"))
    return findings
