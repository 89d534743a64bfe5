"""Checks about steps across attempts: replays, gaps, rollbacks, inexact resumes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ..arrays import median_gap, value_range
from ..load.attempt_endings import restore_point
from ..model import Attempt, Finding, LogEvent, Run, ScalarSeries, Severity
from . import _facts
from .curves import within_duplicates
from .distinct import distinct_sorted


def check_replayed(run: Run) -> list[Finding]:
    """``steps.replayed``: one finding per range of ``run.replayed``, set by ``analyze`` (``checks_replayed``)."""
    from .checks_replayed import check_replayed as check

    return check(run)


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




def _densest_by_kind(run: Run) -> dict[str, dict[int, ScalarSeries]]:
    """Per source kind, the attempt-attributed series of its most densely logged tag."""
    per_kind: dict[str, dict[str, dict[int, ScalarSeries]]] = {}
    for s in run.series:
        if s.attempt is not None and len(s):
            per_kind.setdefault(s.source_kind or _facts.source_kind(run, s), {}).setdefault(s.tag, {})[s.attempt] = s
    densest: dict[str, dict[int, ScalarSeries]] = {}
    for kind, tags in per_kind.items():
        # Per-epoch metrics (val/*, train/*) are too sparse to show a gap; the per-step ones are not.
        densest[kind] = max(tags.values(), key=lambda by_attempt: (sum(map(len, by_attempt.values())),
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
        interval = int(median_gap(steps)) if steps.shape[0] > 1 else 1
        far = max(2 * interval, interval + 1)
        ordered = sorted(by_attempt)
        # _densest_by_kind keeps non-empty series only: every span here is a pair of ints (one scan per series).
        spans = {i: span for i, s in by_attempt.items() if (span := value_range(s.steps)) is not None}
        firsts = {i: int(span[0]) for i, span in spans.items()}
        lasts = {i: int(span[1]) for i, span in spans.items()}
        for a, b in zip(ordered, ordered[1:]):
            jump = firsts[b] - lasts[a]
            verdicts[(a, b)].append(jump > far and not _facts.other_wandb_runs(run, a, b))
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
            _with_checkpoint(nxt.sources, _run_checkpoint(run, nxt.resumed_from)), (first, last),
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


def _run_checkpoint(run: Run, quoted: str | None) -> str | None:
    """``quoted`` (a restore point as the log names it) when it is a checkpoint of this run (an HF ``checkpoint-N``
    folder, a pimm weight file named run-relative): the finding lists what its text quotes, so every surface writes
    that name by the one name escape (a path the log names elsewhere on disk is no file of this run)."""
    if quoted and any(ck.path == quoted or ck.path.startswith(quoted + "/") for ck in run.checkpoints):
        return quoted
    return None


def _with_checkpoint(sources: Iterable[str], checkpoint: str | None) -> tuple[str, ...]:
    """A finding's paths: the attempts' sources, sorted, then the checkpoint its text names (the first path, the
    file a findings table shows, stays a source)."""
    files = tuple(sorted(set(sources)))
    return files + ((checkpoint,) if checkpoint and checkpoint not in files else ())


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
            _with_checkpoint((*prev.sources, *nxt.sources),
                             _run_checkpoint(run, nxt.resumed_from) if nxt.resume_step is not None else None),
            (restored + 1, prev.last_step),
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
