"""Checks about steps across attempts: replays, gaps, rollbacks, inexact resumes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..load.attempts import restore_point
from ..model import Attempt, Finding, LogEvent, Run, ScalarSeries, Severity
from . import _facts
from .curves import overlaps, within_duplicates
from .distinct import distinct_sorted
from .wandb_view import wandb_view


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
    tb_paths: set[str] = field(default_factory=set)
    """Event files among ``paths``: advice about moving an older file's steps needs two of them."""


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
            if kind == "tb_events":
                rep.tb_paths |= {ov.older, ov.newer}
                rep.purged = rep.purged or _has_purge_marker(run, ov.newer, ov.first_step)
            # Report the loss when it is among the tags: a diff in point counts says little.
            loss_like = "loss" in tag
            better = not rep.max_diff_tag or (loss_like and "loss" not in rep.max_diff_tag) or (
                loss_like == ("loss" in rep.max_diff_tag) and not (ov.max_abs_diff <= rep.max_diff))
            if np.isfinite(ov.max_abs_diff) and better:
                rep.max_diff, rep.max_diff_tag = ov.max_abs_diff, tag
            for member in group:
                if member.source in (ov.older, ov.newer) and len(member):
                    first_step, last_step = member.first_step, member.last_step
                    assert first_step is not None and last_step is not None  # the series is not empty
                    lo, hi = rep.spans.get(member.source, (first_step, last_step))
                    rep.spans[member.source] = (min(lo, first_step), max(hi, last_step))
    repeats: list[Finding] = []
    for (tag, kind), group in by_tag.items():
        for s in group:
            if kind != "train_log":
                repeats += _repeated_in_session(run, s)
    for first, last in (run.hf.replayed if run.hf is not None else ()) if not replays else ():
        rep = replays.setdefault(("hf attempt", "hf resume"), _Replay(first, last))
        rep.paths.add("trainer_state.json")
        rep.kinds.add("hf_trainer")
    return [_replay_finding(run, key, rep) for key, rep in sorted(replays.items(), key=lambda kv: kv[1].first)] + repeats


PSEUDO_METRICS = {"epoch"}
"""Tags a writer logs beside every metric row rather than as a measurement: PyTorch Lightning logs ``epoch``
with the training rows and again with the validation rows at the step of each epoch boundary, where the
epoch number changes between the two rows. Repeats of these are how the writer works, not a finding."""


def _repeated_in_session(run: Run, s: ScalarSeries) -> list[Finding]:
    """A tag repeating a step inside one file (one writer session): never a replay; classified."""
    dup = within_duplicates(s, differing_only=True)
    if dup is None or s.tag.rsplit("/", 1)[-1] in PSEUDO_METRICS:
        return []  # same value twice (merged rows) or a pseudo-metric: nothing was trained twice
    first, last, count = dup
    return [Finding(
        "steps.repeated", Severity.INFO,
        f"{s.tag} has two different values at {count} step(s) ({_facts.fmt_range(first, last)}) inside {s.source}",
        (s.source,), (first, last),
        "One file is one writer session, so this is no replay: the program logged this tag twice at the same step "
        "(from two places, e.g. a training and an evaluation loop, or with a step counter that did not advance). "
        "pimm-inspect keeps both points; a chart draws them as a vertical jump at that step.")]


def _replay_finding(run: Run, key: tuple[str, str], rep: _Replay) -> Finding:
    written = (rep.first, rep.last)
    trained = _trained_twice(run, key, rep)
    first, last = trained or written
    span = _facts.fmt_range(first, last)
    what = f"step {span}" if first == last else f"steps {span}"
    paths = tuple(sorted(rep.paths))
    newer = _attempt_of(run, key[1])
    if newer is not None and newer.origin == "restart":
        message = (f"attempt {newer.index} restarted from scratch into the same directory and wrote {what} again "
                   f"(already written by {key[0]})")
    elif trained is not None:
        message = f"{what} {'was' if first == last else 'were'} trained by {key[0]} and again by {key[1]}"
    else:
        message = f"{what} {'was' if first == last else 'were'} written by {key[0]} and again by {key[1]}"
    evidence = "; ".join(f"{path} holds steps {_facts.fmt_range(*rep.spans[path])}" for path in paths if path in rep.spans)
    lines = []
    if newer is not None and newer.origin == "restart":
        lines.append(f"Attempt {newer.index} did not resume: it started again at step {newer.first_step} with nothing "
                     "restored, so it overwrote nothing and every step it logged duplicates one already logged.")
    elif trained is not None and newer is not None:
        copies = _facts.fmt_range(*written)
        if written == (first, last):
            have = "both copies are in the files"
        else:
            have = (f"step {copies} has" if written[0] == written[1] else f"steps {copies} have") + \
                " two written copies in the files"
        lines.append(f"Attempt {newer.index} continued from step {restore_point(newer)}, so {what} "
                     f"{'was' if first == last else 'were'} trained twice; {have}.")
    lines.append(f"{evidence or 'Files: ' + ', '.join(paths)}. Tags affected: {len(rep.tags)} "
                 f"(e.g. {', '.join(sorted(rep.tags, key=lambda t: ('loss' not in t, t))[:3])}).")
    if np.isfinite(rep.max_diff):
        exact = ("the copies are identical (a deterministic replay)" if rep.max_diff == 0 else
                 f"the copies differ by up to {rep.max_diff:.4g} in {rep.max_diff_tag}")
        lines.append(f"Replay check: {exact}.")
    views: list[tuple[str, str]] = []
    if len(rep.tb_paths) > 1:
        copies = _facts.fmt_range(*written)
        if rep.purged:
            views.append(("TensorBoard", "drops the older copy (the newer file starts with a purge marker)"))
            lines.append("TensorBoard: the newer file starts with a purge marker (session_log START), so TensorBoard "
                         "drops the older copy; its Python loader ignores the first restart marker in a run, so it may still show both.")
        elif newer is not None and newer.origin == "restart":
            views.append(("TensorBoard", "both processes as one run (the newest copy per step by default)"))
            lines.append("TensorBoard shows both processes as one run (its Python loader, EventAccumulator or tbparse, "
                         "draws a zig-zag; its default loader the newest copy): to compare them, give each launch its "
                         "own log folder, or move the older file into a folder of its own.")
        else:
            who = "pimm passes no purge_step" if run.kind == "pimm" else "the writer was given no purge_step"
            views.append(("TensorBoard", "its default (Rust) loader shows the newest copy per step"))
            lines.append("TensorBoard: its default (Rust) loader shows the newest copy per step; its Python loader "
                         "(EventAccumulator, tbparse) keeps both copies and draws a zig-zag. Nothing in the files marks the "
                         f"restart ({who}): to see one copy, move the older file's steps {copies} aside "
                         "or pass purge_step to the writer on resume.")
    wandb_shows, wandb_sentence = wandb_view(run, rep.tags, *written)  # from the run's W&B folders
    views.append(("W&B", wandb_shows))
    lines.append(wandb_sentence)
    lines.append("pimm-inspect: pick the overlap policy (all / newest / oldest) in `curves --policy` or the UI; "
                 "`newest` matches what TensorBoard's default loader shows.")
    severity = Severity.INFO if rep.purged else Severity.WARNING
    attempts = tuple(a.index for a in (_attempt_of(run, key[0]), newer) if a is not None)
    return Finding("steps.replayed", severity, message, paths, (first, last), " ".join(lines),
                   attempts=attempts, views=tuple(views))


def _attempt_of(run: Run, label: str) -> Attempt | None:
    """The Attempt named ``attempt N`` in a replay key, or None."""
    if not label.startswith("attempt "):
        return None
    index = label.removeprefix("attempt ")
    return next((a for a in run.attempts if str(a.index) == index), None)


def _trained_twice(run: Run, key: tuple[str, str], rep: _Replay) -> tuple[int, int] | None:
    """What was trained twice: from the newer attempt's restore point + 1 to where both attempts got."""
    older, newer = _attempt_of(run, key[0]), _attempt_of(run, key[1])
    restored = restore_point(newer) if newer is not None else None
    if older is None or newer is None or restored is None or older.last_step is None:
        return None
    last = min(older.last_step, newer.last_step if newer.last_step is not None else older.last_step)
    first = restored + 1
    if last < first:
        return None
    return first, last


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
    """``steps.gap``: steps never logged between attempts, or never trained after a restore point.

    A resumed attempt trains from its restore point + 1; when every source that covers it starts
    later, the steps in between were skipped (E0 treats the saved epoch as the next one and skips
    ``iter`` batches of it). Without a restore point, the gap is between the two attempts' logs.
    """
    verdicts: dict[tuple[int, int], list[bool]] = defaultdict(list)
    skipped: dict[int, list[bool]] = defaultdict(list)
    by_index = {a.index: a for a in run.attempts}
    for by_attempt in _densest_by_kind(run).values():
        steps = distinct_sorted([s.steps for s in by_attempt.values()])
        diffs = np.diff(steps)
        interval = int(np.median(diffs)) if diffs.size else 1
        far = max(2 * interval, interval + 1)
        ordered = sorted(by_attempt)
        # _densest_by_kind keeps non-empty series only: every first_step/last_step here is an int.
        firsts = {i: s.first_step for i, s in by_attempt.items() if s.first_step is not None}
        lasts = {i: s.last_step for i, s in by_attempt.items() if s.last_step is not None}
        for a, b in zip(ordered, ordered[1:]):
            jump = firsts[b] - lasts[a]
            verdicts[(a, b)].append(jump > far)
        for b in ordered:
            restored = restore_point(by_index[b]) if b in by_index else None
            if restored is not None and by_index[b].resume_step is not None:
                skipped[b].append(firsts[b] - restored > far)
    findings = []
    nxt: Attempt | None  # by_index[b] here, by_index.get(b) in the loop over verdicts
    for b, flags in sorted(skipped.items()):
        nxt = by_index[b]
        if not flags or not all(flags) or nxt.first_step is None:
            continue
        restored = restore_point(nxt)
        assert restored is not None  # skipped[] holds only attempts with a restore point
        first, last = restored + 1, nxt.first_step - 1
        findings.append(Finding(
            "steps.gap", Severity.WARNING,
            f"attempt {nxt.index} restored step {restored} but trained from step {nxt.first_step}: "
            f"steps {_facts.fmt_range(first, last)} were never trained",
            tuple(sorted(nxt.sources)), (first, last),
            f"Attempt {nxt.index} restored the state after step {restored} "
            f"({nxt.resumed_from or 'its checkpoint'}), yet every source that covers it starts at step "
            f"{nxt.first_step}: the resume skipped {last - first + 1} step(s) of data instead of continuing at step "
            f"{first}. pimm's E0 resume does this: it takes the saved epoch (stored as epoch index + 1) as the next "
            "epoch to run and then skips the saved number of batches of it." if run.era == "E0" else
            f"Attempt {nxt.index} restored the state after step {restored}, yet every source that covers it starts "
            f"at step {nxt.first_step}: the resume skipped {last - first + 1} step(s) of data."))
    gapped = {b for b, flags in skipped.items() if flags and all(flags)}
    for (a, b), flags in sorted(verdicts.items()):
        prev, nxt = by_index.get(a), by_index.get(b)
        if b in gapped or not flags or not all(flags) or prev is None or nxt is None or prev.last_step is None \
                or nxt.first_step is None:
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
    """``resume.rollback``: an attempt resumed from a restore point older than the previous attempt's last step."""
    findings = []
    attempts = list(run.attempts)
    for prev, nxt in zip(attempts, attempts[1:]):
        restored = restore_point(nxt)
        if prev.last_step is None or restored is None or restored >= prev.last_step:
            continue
        lost = prev.last_step - restored
        if nxt.resume_step is not None:
            how = (f"its restore point was step {restored}, so attempt {nxt.index} restarted from "
                   f"{nxt.resumed_from or 'a checkpoint'}")
        else:
            how = (f"attempt {nxt.index} logged its first step at {nxt.first_step} (no restore step is recorded), "
                   f"so it continued from step {restored}")
        advice = ("save more often (save_freq) to lose less on preemption." if run.kind == "pimm" else
                  "save checkpoints more often to lose less on preemption.")
        findings.append(Finding(
            "resume.rollback", Severity.WARNING,
            f"attempt {nxt.index} resumed from step {restored} after attempt {prev.index} reached {prev.last_step}: "
            f"rolled back {lost} step{'s' if lost != 1 else ''}",
            tuple(sorted(set(prev.sources) | set(nxt.sources))), (restored + 1, prev.last_step),
            f"Attempt {prev.index} ended ({prev.ended}) at step {prev.last_step}; {how} and trained steps "
            f"{_facts.fmt_range(restored + 1, prev.last_step)} again. The work after step {restored} was lost; {advice}"))
    return findings


_INEXACT = ("Skipping dataloader-cursor restore", "mid-epoch but has no dataloader state",
            "Legacy checkpoint is mid-epoch", "State was saved with world_size", "RNG state was saved with world_size",
            "Sampler state was saved with num_replicas", "Sampler state length", "Cannot create an exact mid-epoch checkpoint")


def check_inexact(run: Run) -> list[Finding]:
    """``resume.inexact``: pimm's own non-exact-resume warnings, one finding per attempt."""
    per_attempt: dict[int | None, list[LogEvent]] = defaultdict(list)
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
