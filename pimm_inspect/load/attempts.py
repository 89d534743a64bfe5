"""Reconstruct a run's attempts (process starts) from every source that knows about them; how each began and ended
is ``attempt_endings`` (``finish_attempts``, ``restore_point``, re-exported here)."""

from __future__ import annotations

import dataclasses
from collections.abc import Set
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import Attempt, Origin, ScalarSeries
from .attribution import attributed, kind_of_source
from .attempt_endings import INEXACT_MARKERS, finish_attempts, restore_point
from .collect import Collected
from .column_ranges import ColumnRanges
from .process_evidence import (RAN_AT_ONCE_S, csv_attempts, epoch_axis_tags, fold_evaluator_segments,
                               lightning_restore_step, ran_alongside)
from .stale import is_stale
from .tb_sessions import tb_sessions, writer_sessions
from .wandb_order import process_folders, start_estimates

if TYPE_CHECKING:  # W&B's reader (its protos, link rules) loads only for runs with a W&B folder
    from ..sources.wandb.reader import WandbRunResult



def _utc(seconds: float | None) -> str | None:
    if not seconds:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def attempts_and_series(c: Collected) -> tuple[list[Attempt], list[ScalarSeries]]:
    """Attempts from train.log segments (else one per event file), with every series attributed to its attempt and
    tagged with its source file's reader kind (``attribution``)."""
    series: list[ScalarSeries] = []
    attempts: list[Attempt] = []
    c.train_log = fold_evaluator_segments(c.train_log)  # a tester's config line is no process start
    segments = list(c.train_log.segments) if c.train_log is not None else []
    tb_attempt = _map_event_files(c, segments)
    tb_parts = tb_sessions(c.tb_files) if not segments else list(c.tb_files)
    part_attempt: dict[int, int] = {}  # id(result part) -> attempt, for a file that holds several writer sessions
    wandb_attempt: dict[str, int] = {}
    if segments:
        for seg in segments:
            sources = ["train.log"] + [p for p, a in tb_attempt.items() if a == seg.index]
            attempts.append(Attempt(
                index=seg.index, started_at=seg.started_at, first_step=seg.first_step,
                last_step=seg.last_step, origin=_segment_origin(seg), resumed_from=seg.resumed_from,
                resume_step=seg.resume_step, ended=seg.ended or "unknown",
                end_detail=seg.end_detail, sources=tuple(sources), saved_steps=tuple(seg.saved_steps)))
        series += list(c.train_log.series)
    elif c.tb_files:
        # One attempt per writer process (same host and pid in the names: one process, several files).
        earliest: int | None = None
        previous_end: float | None = None
        sessions = list(writer_sessions(tb_parts))
        ranges = ColumnRanges()
        # metrics.csv beside the event files (a CSVLogger given the same folder) is that one process's, too.
        csv_series = [s for _p, r in c.csv_metrics for s in r.series.values()] if len(sessions) == 1 else []
        for index, (group, went_back) in enumerate(sessions, start=1):
            part_attempt.update((id(r), index) for _p, _n, r in group)
            group_spans = [span for _p, _n, result in group for s in result.series.values()
                           if len(s) and (span := ranges.steps(s)) is not None]
            first = min((span[0] for span in group_spans), default=None)
            last = max((span[1] for span in group_spans), default=None)
            first_wall = min((r.first_wall_time_s for _p, _n, r in group if r.first_wall_time_s), default=None)
            started = _utc(first_wall)
            if attempts and first_wall is not None and first_wall < (previous_end or 0.0) - RAN_AT_ONCE_S:
                attempts[-1] = ran_alongside(attempts[-1], index)
            previous_end = max((r.last_wall_time_s or 0.0 for _p, _n, r in group), default=None)
            origin: Origin
            restored = None
            if index == 1:
                if any(d.kind == "lightning_hparams" for d in c.configs):  # a Lightning logger's folder
                    # The event files' own epoch first; metrics.csv's when they hold none (hp_metric alone).
                    restored = lightning_restore_step(
                        [s for _p, _n, r in group for s in r.series.values()] + csv_series,
                        {p for p, _n, _r in group} | {p for p, _r in c.csv_metrics})
                origin = "fresh" if restored is None else "resume"
            elif went_back:  # a new writer in the same process whose steps went back: training started again
                origin = "restart"
            else:  # a later process that starts where the earlier ones started (or after none logged) begins anew
                origin = "resume" if first is not None and earliest is not None and first > earliest else "restart"
            if first is not None:
                earliest = first if earliest is None else min(earliest, first)
            attempts.append(Attempt(index=index, started_at=started, started_at_utc=started is not None, first_step=first, last_step=last,
                                    origin=origin, restore_step=restored,
                                    sources=tuple(dict.fromkeys(p for p, _n, _r in group))))
    elif c.wandb_runs and c.kind == "wandb":
        # By the best start evidence, folder stamps included; a second wandb.init inside a live process is no start.
        ordered = process_folders(c.wandb_runs)
        _order, utc_starts = start_estimates(c.wandb_runs)
        ranges = ColumnRanges()
        for index, wrun in enumerate(ordered, start=1):
            # A declared step metric (pimm's train/global_step) counts W&B rows, not training steps.
            step_metrics = set(wrun.x_axis.values()) - {"_step"}
            wandb_spans = [span for s in wrun.series if len(s) and s.tag not in step_metrics
                           if (span := ranges.steps(s)) is not None]
            started = _utc(wrun.start_time_s or utc_starts[wrun.rel_path])
            ended = {"finished": "completed", "crashed": "crashed", "stopped": "stopped"}.get(wrun.status, "unknown")
            attempts.append(Attempt(index=index, started_at=started, started_at_utc=started is not None,
                                    first_step=min((span[0] for span in wandb_spans), default=None),
                                    last_step=max((span[1] for span in wandb_spans), default=None),
                                    origin=_wandb_origin(wrun, ordered[:index - 1]), ended=ended,
                                    end_detail=_wandb_end_detail(wrun),
                                    sources=(wrun.rel_path,)))
            if len(c.wandb_runs) > 1:
                wandb_attempt[wrun.rel_path] = index
    elif c.hf is not None and c.hf.attempts:
        attempts += _hf_attempts(c)
    elif c.csv_metrics:
        attempts += csv_attempts(c.csv_metrics)
    placed: list[tuple[ScalarSeries, int | None]] = [(s, s.attempt) for s in series]  # (series, its attempt)
    for rel_path, _name, result in tb_parts:
        attempt = part_attempt.get(id(result), tb_attempt.get(rel_path))
        placed += [(s, attempt) for s in result.series.values()]
    if not wandb_attempt and len(c.wandb_runs) > 1 and len({r.run_id for r in c.wandb_runs}) == 1:
        # One W&B id, several local folders: each folder is one process start (a requeued offline run).
        wandb_attempt = {r.rel_path: i for i, r in enumerate(process_folders(c.wandb_runs), start=1)}
    for run in c.wandb_runs:
        attempt = wandb_attempt.get(run.rel_path)
        # A declared step metric (pimm's hidden train/global_step) is the x axis of the others, not a curve.
        step_metrics = set(run.x_axis.values()) - {"_step"}
        placed += [(s, attempt if attempt is not None else s.attempt) for s in run.series if s.tag not in step_metrics]
    for _rel, csv_result in c.csv_metrics:  # Lightning's CSVLogger: one file, one logger version, one process
        only = attempts[0].index if len(attempts) == 1 else None  # beside several writers of event files: unknown
        placed += [(s, only) for s in csv_result.series.values()]
    if c.hf is not None:
        # Trainer history (trainer_state.json) plus the runs/* TensorBoard folders, one per process start.
        placed += [(s, s.attempt) for s in (*c.hf.series, *c.hf.tb_series)]
    kinds = {source.path: source.kind for source in c.sources}
    series = [attributed(s, attempt, kind_of_source(s.source, kinds)) for s, attempt in placed]  # each built once
    return _reconcile_spans(attempts, series, epoch_axis_tags(c.train_log, series)), series


def _wandb_origin(wrun: Any, earlier: list[Any]) -> Origin:
    """A W&B folder's origin from its own records: resumed when they say the server continued the id (the run
    record's ``resumed`` flag or ``starting_step``, the telemetry feature ``resumed``, debug.log's ``run resumed``:
    ``WandbRunResult.resumed``), or when it asked to resume and an earlier folder of its id is in the run;
    ``resume="allow"`` on the first folder of an id resumed nothing; a folder W&B continued that logs from the earlier
    folders' first step again restored nothing (``restart``). A later folder nothing says W&B continued is a
    ``restart`` when it logged from at or below the earliest first step of the folders before it (the same id or
    folder used again from scratch), a ``resume`` when it went on past it, ``unknown`` when it logged nothing.
    ``finish_attempts`` turns a resume whose first step lies before the previous attempt's last into ``rollback``."""
    first = _logged_first(wrun)
    starts = [s for s in (_logged_first(w) for w in earlier) if s is not None]
    if wrun.resumed or (wrun.resume_requested and any(w.run_id == wrun.run_id for w in earlier)):
        # W&B continued the id; the training went on only when it logged past where the earlier folders began (a
        # folder that logs from their first step again restored nothing: another project's run of the id, or a
        # script that resumes the W&B run and trains from scratch).
        return "restart" if first is not None and starts and first <= min(starts) else "resume"
    if not earlier:
        return "fresh"
    # A later process nothing says W&B continued: it started again at or below where the earlier ones started (a
    # restart into a used id or folder), or went on past it; a folder that logged nothing says neither.
    if first is None or not starts:
        return "unknown" if first is None else "fresh"
    return "resume" if first > min(starts) else "restart"


def _logged_first(wrun: Any) -> int | None:
    """The first step a W&B folder logged on the axis its attempts use (its series, step metrics left out)."""
    step_metrics = set(wrun.x_axis.values()) - {"_step"}
    firsts = [s.first_step for s in wrun.series if len(s) and s.tag not in step_metrics]
    return min(firsts) if firsts else None


def _segment_origin(seg: Any) -> Origin:
    """A train.log segment's origin; one with no config line (a Pointcept-style log) that is the log's first
    process and trains from step 1 with nothing restored started fresh."""
    if seg.origin == "unknown" and seg.start_line == 1 and seg.first_step is not None and seg.first_step <= 1 \
            and not seg.is_resume and seg.resume_step is None:
        return "fresh"
    return seg.origin  # type: ignore[no-any-return]  # the reader's origin words are the model's


def _hf_attempts(c: Collected) -> list[Attempt]:
    """HF Trainer attempts as the HF reader worked them out: origin, restore point, the checkpoints each saved."""
    assert c.hf is not None
    return [Attempt(index=att.index, first_step=att.first_step, last_step=att.last_step, origin=att.origin,
                    resume_step=att.resumed_from_checkpoint,
                    resumed_from=f"checkpoint-{att.resumed_from_checkpoint}" if att.resumed_from_checkpoint else None,
                    ended="completed" if att.completed else "unknown", saved_steps=att.saved_steps,
                    sources=tuple(p for p in (att.tb_dir or att.state_path,) if p)) for att in c.hf.attempts]


def _reconcile_spans(attempts: list[Attempt], series: list[ScalarSeries],
                     epoch_tags: Set[str] = frozenset()) -> list[Attempt]:
    """Widen each attempt's step span to every source attributed to it.

    train.log prints every log_frequency steps while TensorBoard and W&B record every step,
    so the text log alone understates where an attempt started and stopped. Tags on an epoch
    axis (``epoch_tags``) say nothing about global steps and are left out.
    """
    spans: dict[int, tuple[int, int]] = {}
    first_wall: dict[int, float] = {}
    unstarted = {att.index for att in attempts if att.started_at is None}  # only these take a start from the points
    ranges = ColumnRanges()  # each step and time column scanned once (the tags of a train.log share theirs)
    for s in series:
        if s.attempt is None or not len(s) or s.tag in epoch_tags:
            continue
        span = ranges.steps(s)
        assert span is not None  # the series is not empty
        lo, hi = span
        old = spans.get(s.attempt)
        spans[s.attempt] = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))
        walls = ranges.of(s.wall_times_s, finite_only=True) if s.attempt in unstarted else None
        if walls is not None:
            first_wall[s.attempt] = min(first_wall.get(s.attempt, np.inf), float(walls[0]))
    out = []
    for att in attempts:
        changes: dict[str, Any] = {}
        span = spans.get(att.index)
        if span is not None:
            first = span[0] if att.first_step is None else min(att.first_step, span[0])
            last = span[1] if att.last_step is None else max(att.last_step, span[1])
            if (first, last) != (att.first_step, att.last_step):
                changes.update(first_step=first, last_step=last)
        if att.started_at is None and att.index in first_wall:
            # No log line gives the start: the first point the attempt wrote is the best evidence.
            changes.update(started_at=_utc(first_wall[att.index]), started_at_utc=True)
        out.append(dataclasses.replace(att, **changes) if changes else att)  # rebuilt once, when something changed
    return out


def created_at_seconds(text: str | None) -> float | None:
    """run_metadata.json's ISO ``created_at`` (attempt 1's launch) as unix seconds; naive means UTC."""
    if not text:
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()


def _map_event_files(c: Collected, segments: list[Any]) -> dict[str, int]:
    """Attribute each event file to an attempt: one file per process start, in order."""
    mapping: dict[str, int] = {}
    if not c.tb_files:
        return mapping
    if not segments:
        return {p: index for index, (group, _back) in enumerate(writer_sessions(c.tb_files), start=1)
                for p, _n, _r in group}
    if len(segments) == len(c.tb_files):
        for index, (rel_path, _n, _r) in enumerate(c.tb_files, start=1):
            mapping[rel_path] = segments[index - 1].index if segments else index
        return mapping
    # Counts differ (a file lost, or a stale file from a reused directory): match by first step,
    # leaving out files written before this run was created (they belong to an earlier run).
    created = created_at_seconds(c.provenance.created_at)
    for rel_path, _n, result in c.tb_files:
        if is_stale(result.first_wall_time_s, created):  # the one stale rule (EventFileFacts.stale too)
            continue
        firsts = [s.first_step for s in result.series.values() if s.first_step is not None]
        if not firsts:
            continue
        first = min(firsts)
        best = min(segments, key=lambda seg: abs((seg.first_step if seg.first_step is not None else 10**18) - first))
        mapping[rel_path] = best.index
    return mapping


__all__ = ["INEXACT_MARKERS", "attempts_and_series", "created_at_seconds", "finish_attempts", "restore_point"]


def _wandb_end_detail(wrun: WandbRunResult) -> str | None:
    """What a W&B run's files say about its end: the interrupt its console ended with (file and line), its exit code."""
    code = f"exit code {wrun.exit_code}" if wrun.exit_code else None
    if wrun.interrupted:
        return f"interrupted ({wrun.interrupted})" + (f", {code}" if code else "")
    if code is None and wrun.status == "unknown" and wrun.wandb_file is None:
        # No transaction log (GitHub refuses files over 100 MB; a copy left it out): say so, and what files/ holds.
        folder = "" if wrun.rel_path == "." else f" in {wrun.rel_path}"
        detail = f"no .wandb log{folder}: how the run ended is not recorded"
        step, runtime = wrun.summary.get("_step"), wrun.summary.get("_runtime")
        if type(step) is int:
            summary = f"{wrun.rel_path}/files/wandb-summary.json" if wrun.rel_path != "." else "files/wandb-summary.json"
            after = f" after {runtime:,.0f} s" if isinstance(runtime, (int, float)) and runtime == runtime else ""
            detail += f" ({summary}: last _step {step:,}{after})"
        return detail
    return code
