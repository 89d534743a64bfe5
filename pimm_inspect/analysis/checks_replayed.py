"""``steps.replayed``: one finding per replayed range of ``Run.replayed`` (never one per pair of writers)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..load.attempt_endings import restore_point
from ..load.column_ranges import ColumnRanges
from ..model import Attempt, Finding, ReplayedRange, Run, Severity
from . import _facts
from .replay_copies import Writers, copy_spreads, densest_tags, writers_of
from .replays import describe, drawn_series, marks
from .wandb_view import wandb_view

MAX_FINDINGS = 50
"""Replayed ranges reported one finding each; past this many, one more finding sums up the rest."""
NAMED_FILES = 6
"""Files named in a finding's text (its ``paths`` name them all)."""


@dataclass(frozen=True, slots=True)
class ReplayCheck:
    """How far the copies of a range differ, in which tag, and whether that tag is logged per step."""

    max_diff: float
    tag: str
    per_step: bool
    tags: tuple[str, ...]
    """Every tag with two or more copies in the range."""
    written: tuple[int, int]
    """First and last step that really holds two or more copies (the range may be wider: what was trained)."""


def compare_copies(by_writer: Writers, r: ReplayedRange) -> ReplayCheck | None:
    """Compare like with like: per step, the copies of each tag; the figure comes from a per-step tag first
    (``replay_copies.densest_tags``, the rule ``compare --attempts`` shares)."""
    spreads = copy_spreads(by_writer, r)
    if not spreads:
        return None
    written = (min(c.first_held for c in spreads), max(c.last_held for c in spreads))
    results = [(c.tag, c.spread) for c in spreads]  # (tag, max spread of the copies)
    per_step = densest_tags({c.tag: c.held for c in spreads})
    tags = tuple(sorted((t for t, _d in results), key=lambda t: ("loss" not in t, t)))
    finite_results = [res for res in results if np.isfinite(res[1])]
    pool = [res for res in finite_results if res[0] in per_step] or finite_results
    if not pool:
        return ReplayCheck(float("nan"), "", False, tags, written)
    pool = [res for res in pool if "loss" in res[0]] or pool
    tag, diff = max(pool, key=lambda res: res[1])
    return ReplayCheck(diff, tag, tag in per_step, tags, written)


@dataclass(frozen=True, slots=True)
class _Context:
    """What every finding of the run needs, computed once: file spans and attempts, event files."""

    spans: dict[str, tuple[int, int]]
    attempt_of: dict[str, int]
    by_writer: Writers


def _context(run: Run) -> _Context:
    spans: dict[str, tuple[int, int]] = {}
    attempt_of: dict[str, int] = {}
    ranges = ColumnRanges()  # each step column scanned once (the tags of a train.log share theirs)
    for s in run.series:
        span = ranges.steps(s) if len(s) else None
        if span is None:
            continue
        lo, hi = span
        old = spans.get(s.source, (lo, hi))
        spans[s.source] = (min(old[0], lo), max(old[1], hi))
        if s.attempt is not None:
            attempt_of.setdefault(s.source, s.attempt)
    return _Context(spans, attempt_of, writers_of(drawn_series(run)))


def check_replayed(run: Run) -> list[Finding]:
    """``steps.replayed``: one finding per range of ``run.replayed`` (steps written by more than one attempt or
    writer), which ``analyze`` works out once before the checks run; a run not analysed holds none."""
    from .checks_steps import _repeated_in_session

    ranges = run.replayed
    findings: list[Finding] = []
    if ranges:
        ctx = _context(run)
        findings += [_replay_finding(run, r, ctx) for r in ranges[:MAX_FINDINGS]]
    rest = ranges[MAX_FINDINGS:]
    if rest:
        files = sorted({p for r in rest for p in r.paths})
        findings.append(Finding(
            "steps.replayed", Severity.WARNING,
            f"{len(rest)} more replayed step ranges ({_facts.fmt_range(rest[0].first_step, rest[-1].last_step)}), "
            f"{max(r.copies for r in rest)} copies at most", tuple(files), (rest[0].first_step, rest[-1].last_step),
            "Each range holds steps written by more than one writer: " + "; ".join(describe(r) for r in rest[:5])
            + (f"; and {len(rest) - 5} more." if len(rest) > 5 else "."),
            attempts=tuple(sorted({a for r in rest for a in r.attempts}))))
    stale = _facts.stale_event_files(run)
    for s in run.series:
        if s.source not in stale and _facts.source_kind(run, s) != "train_log":
            findings += _repeated_in_session(run, s)
    return findings


def _attempt(run: Run, index: int) -> Attempt | None:
    return next((a for a in run.attempts if a.index == index), None)


def _who(r: ReplayedRange) -> str:
    """``attempt 1 and again by attempt 2``-style words for the writers of a range."""
    if r.attempts and len(r.attempts) == r.copies:
        if len(r.attempts) > 6:
            return f"{len(r.attempts)} attempts"
        if len(r.attempts) > 2:
            return "attempts " + ", ".join(str(a) for a in r.attempts[:-1]) + f" and {r.attempts[-1]}"
        names = [f"attempt {a}" for a in r.attempts]
    else:
        names = [f"attempt {a}" for a in r.attempts] + _named(r.paths, NAMED_FILES)
    if len(names) == 2:
        return f"{names[0]} and again by {names[1]}"
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _named(paths: tuple[str, ...], limit: int) -> list[str]:
    shown = list(paths[:limit])
    return shown + ([f"{len(paths) - limit} more files"] if len(paths) > limit else [])


def _replay_finding(run: Run, r: ReplayedRange, ctx: _Context) -> Finding:
    first, last = r.first_step, r.last_step
    check = compare_copies(ctx.by_writer, r)
    span = _facts.fmt_range(first, last)
    what = f"step {span}" if first == last else f"steps {span}"
    was = "was" if first == last else "were"
    newest = _attempt(run, r.attempts[-1]) if r.attempts else None
    restored = restore_point(newest) if newest is not None else None
    trained = newest is not None and restored is not None and newest.origin != "restart"
    copies = f"{r.copies} copies: {marks(r.attempts)}" if r.attempts else f"{r.copies} copies"
    if newest is not None and newest.origin == "restart" and len(r.attempts) == 2 == r.copies:
        message = (f"attempt {newest.index} restarted from scratch into the same directory and wrote {what} again "
                   f"(already written by attempt {r.attempts[0]})")
    elif r.copies == 2:
        message = f"{what} {was} {'trained' if trained else 'written'} by {_who(r)}"
    else:
        message = f"{what} {was} {'trained' if trained else 'written'} {r.copies} times, by {_who(r)} ({copies})"
    lines = []
    if newest is not None and newest.origin == "restart":
        lines.append(f"Attempt {newest.index} did not resume: it started again at step {newest.first_step} with "
                     "nothing restored, so it overwrote nothing and every step it logged duplicates one already logged.")
    elif trained and newest is not None:
        times = "twice" if r.copies == 2 else f"{r.copies} times"
        have = "every copy is in the files" if r.copies > 2 else "both copies are in the files"
        if check is not None and check.written != (first, last):
            lo, hi = check.written
            have = (f"step {lo} has" if lo == hi else f"steps {_facts.fmt_range(lo, hi)} have") + \
                f" {'two' if r.copies == 2 else r.copies} written copies in the files"
        lines.append(f"Attempt {newest.index} continued from step {restored}, so {what} {was} trained {times}; {have}.")
    spans = [(p, ctx.spans[p]) for p in r.paths if p in ctx.spans]
    evidence = "; ".join(f"{path} holds steps {_facts.fmt_range(*ends)}" for path, ends in spans[:NAMED_FILES])
    if len(spans) > NAMED_FILES:
        evidence += f"; and {len(spans) - NAMED_FILES} more files"
    tags = check.tags if check is not None else ()
    lines.append(f"{evidence or 'Files: ' + ', '.join(_named(r.paths, NAMED_FILES))}."
                 + (f" Tags affected: {len(tags)} (e.g. {', '.join(tags[:3])})." if tags else ""))
    if check is not None and np.isfinite(check.max_diff):
        exact = f"the copies differ by up to {check.max_diff:.4g} in {check.tag}" + (
            ": identical, a deterministic replay" if check.max_diff == 0 else "")
        kind = "a per-step tag" if check.per_step else "the densest tag with copies"
        lines.append(f"Replay check: {exact} ({check.tag} is {kind}, compared step by step).")
    purged = _purged(run, r, ctx)
    views, view_lines = _views(run, r, newest, purged, check.written if check is not None else (first, last), tags)
    lines += view_lines
    lines.append("pimm-inspect: pick the overlap policy (all / newest / oldest) in `curves --policy` or the UI; "
                 "`newest` matches what TensorBoard's default loader shows.")
    explanation = " ".join(lines)
    return Finding("steps.replayed", Severity.INFO if purged else Severity.WARNING, message,
                   r.paths + _quoted(run, r.paths, explanation), (first, last), explanation, attempts=r.attempts,
                   views=tuple(views))


def _quoted(run: Run, listed: tuple[str, ...], text: str) -> tuple[str, ...]:
    """The run's W&B folders and checkpoints the W&B sentence quotes (a folder's histories, the checkpoint holding
    the history cursor), after the replayed files: every file a finding's text names is in its paths."""
    candidates = [f.path for f in run.wandb_runs] + [ck.path for ck in run.checkpoints]
    return tuple(dict.fromkeys(p for p in candidates if p and p not in listed and p in text))


def _tb_paths(run: Run, r: ReplayedRange) -> list[str]:
    """The event files among a range's files (a plain run's and the Trainer's ``runs/*`` ones alike)."""
    tb = {f.path for f in run.event_files} | {src.path for src in run.sources if src.kind == "tb_events"}
    return [p for p in r.paths if p in tb]


def _purged(run: Run, r: ReplayedRange, ctx: _Context) -> bool:
    """A session_log START at or before the range in each newer event file makes TensorBoard drop older copies."""
    files = {f.path: f for f in run.event_files}
    tb = _tb_paths(run, r)
    if len(tb) < 2:
        return False
    oldest = r.attempts[0] if r.attempts else None
    newer = [p for p in tb if ctx.attempt_of.get(p) != oldest] if oldest is not None else tb[1:]
    return bool(newer) and all(p in files and any(m.kind == "session_log" and m.detail.upper() == "START"
                                                  and m.step <= r.first_step for m in files[p].markers) for p in newer)


def _views(run: Run, r: ReplayedRange, newest: Attempt | None, purged: bool,
           written: tuple[int, int], tags: tuple[str, ...]) -> tuple[list[tuple[str, str]], list[str]]:
    views: list[tuple[str, str]] = []
    lines: list[str] = []
    span = _facts.fmt_range(*written)  # the steps the files hold twice: what moving a file's steps aside means
    if len(_tb_paths(run, r)) > 1:
        if purged:
            views.append(("TensorBoard", "drops the older copy (the newer file starts with a purge marker)"))
            lines.append("TensorBoard: the newer file starts with a purge marker (session_log START), so TensorBoard "
                         "drops the older copy; its Python loader ignores the first restart marker in a run, so it may "
                         "still show both.")
        elif newest is not None and newest.origin == "restart":
            views.append(("TensorBoard", "every writer as one run (the newest copy per step by default)"))
            lines.append("TensorBoard shows every writer as one run (its Python loader, EventAccumulator or tbparse, "
                         "draws a zig-zag; its default loader the newest copy): to compare them, give each launch its "
                         "own log folder, or move the older file into a folder of its own.")
        else:
            who = "pimm passes no purge_step" if run.kind == "pimm" else "the writer was given no purge_step"
            older = "the older file's" if r.copies == 2 else "the older files'"
            views.append(("TensorBoard", "its default (Rust) loader shows the newest copy per step"))
            lines.append("TensorBoard: its default (Rust) loader shows the newest copy per step; its Python loader "
                         "(EventAccumulator, tbparse) keeps every copy and draws a zig-zag. Nothing in the files marks "
                         f"the restart ({who}): to see one copy, move {older} steps {span} aside "
                         "or pass purge_step to the writer on resume.")
    wandb_shows, wandb_sentence = wandb_view(run, tags, *written)  # from the run's W&B folders
    views.append(("W&B", wandb_shows))
    lines.append(wandb_sentence)
    return views, lines
