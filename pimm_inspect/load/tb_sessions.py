"""Event files as writer sessions: which files (or parts of a file) one training process start wrote.

Files of one writer process (same host and pid in their names) belong together, unless a new writer of that
process goes back to an earlier step (a notebook kernel running ``trainer.train()`` again), and a file that holds
two writer sessions (a later ``file_version`` record) whose steps go back is cut in two.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from ..model import ScalarSeries
from .process_evidence import group_by_process


def _file_steps(result: Any) -> tuple[int | None, int | None]:
    """(first, last) step an event file logged over all its tags; (None, None) when it logged none."""
    firsts = [s.first_step for s in result.series.values() if len(s)]
    lasts = [s.last_step for s in result.series.values() if len(s)]
    return (min(firsts), max(lasts)) if firsts else (None, None)


def tb_sessions(tb_files: list[tuple[str, Any, Any]]) -> list[tuple[str, Any, Any]]:
    """Event files, each file that holds more than one writer session of a restarted training cut in parts.

    Writers open a new file per session, but a file can hold two: files joined end to end (``cat``, an object
    store's compose), a writer that appends. A ``file_version`` record after the first record starts a session;
    it is a restart when the steps go back there: each tag's points are cut where its steps go back."""
    out: list[tuple[str, Any, Any]] = []
    for rel_path, name, result in tb_files:
        later = [m for m in result.markers if m.kind == "file_version" and m.record_index > 0]
        parts = _cut_sessions(result, later) if later else [result]
        out += [(rel_path, name, part) for part in parts]
    return out


def _cut_sessions(result: Any, later: list[Any]) -> list[Any]:
    """``result`` as one part per writer session when a later session's steps go back, else whole.

    A tag's points are cut at the first ``len(later)`` places its steps go back (each session writes steps in
    order); a tag whose steps never go back belongs to the session its first point's wall time falls in."""
    sessions = len(later) + 1
    edges = np.asarray(sorted(m.wall_time_s for m in later), dtype=np.float64)
    pieces: list[dict[str, ScalarSeries]] = [{} for _ in range(sessions)]
    went_back = False
    for tag, s in result.series.items():
        back = (np.flatnonzero(s.steps[1:] < s.steps[:-1]) + 1)[:sessions - 1].tolist() if len(s) > 1 else []
        if back:
            went_back = True
            bounds = [0] + back + [len(s)]
            for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
                pieces[k][tag] = dataclasses.replace(s, steps=s.steps[lo:hi], values=s.values[lo:hi],
                                                     wall_times_s=s.wall_times_s[lo:hi])
            continue
        first_wall = float(s.wall_times_s[0]) if len(s) and np.isfinite(s.wall_times_s[0]) else float("-inf")
        pieces[min(int(np.searchsorted(edges, first_wall, side="right")), sessions - 1)][tag] = s
    pieces = [p for p in pieces if p]
    if not went_back or len(pieces) < 2:
        return [result]
    return [dataclasses.replace(result, series=piece) for piece in pieces]


_EVAL_TAG = re.compile(r"(^|[/_.\-])(val|valid|validation|test|eval|evaluation)([/_.\-]|$)|^(epoch|hp_metric)$",
                       re.IGNORECASE)
"""Tags an evaluation pass logs (``val_loss_step``, ``test/acc``, ``eval_loss``), and the step counters beside them."""


def writer_sessions(tb_files: list[tuple[str, Any, Any]]) -> list[tuple[list[tuple[str, Any, Any]], bool]]:
    """Event files as attempts: those of one writer process together (``group_by_process``), except that a new
    writer session (a new file) of the same process whose first step goes back below a step the process already
    logged starts again: a notebook kernel that ran ``trainer.train()`` several times into one folder. A new file of
    evaluation tags only (``trainer.validate()``/``test()`` reopening the writer) starts nothing. Each entry is
    (files, True when it is such a restart inside one process)."""
    out: list[tuple[list[tuple[str, Any, Any]], bool]] = []
    for group in group_by_process(tb_files):
        current: list[tuple[str, Any, Any]] = []
        reached: int | None = None
        went_back = False
        for item in group:
            first, last = _file_steps(item[2])
            # A file of evaluation tags only (Lightning's validate()/test() reopen the logger's writer) trains nothing:
            # its steps going back are no training started again.
            evaluation = bool(item[2].series) and all(_EVAL_TAG.search(tag) for tag in item[2].series)
            if current and current[-1][0] == item[0] or (
                    current and first is not None and reached is not None and first < reached and not evaluation):
                out.append((current, went_back))
                current, reached, went_back = [], None, True
            current.append(item)
            if last is not None and not evaluation:  # only training moves the step a restart goes back below
                reached = last if reached is None else max(reached, last)
        out.append((current, went_back))
    return out
