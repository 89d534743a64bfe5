"""``check --watch`` and ``check --stalled-after``: poll runs, print each finding once, exit 3 when a run stalls.

Every poll reads the runs again through the session (a live run's kept read cache reads only what was appended)
and prints the findings not printed before, in ``check --brief``'s line form (``--json``: one object per line).
A run that has not ended and has logged nothing for longer than ``--stalled-after`` (the one rule,
``load.stale.silent_for_s``) is named and the command exits 3. ``sleep`` and ``now`` are module attributes so a
test drives the loop without waiting.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..model import Finding, Run, Severity
from ._common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UsageProblem, console, find_runs, session

EXIT_STALLED = 3
"""``--stalled-after D``: a run that has not ended logged nothing for longer than D."""

sleep: Callable[[float], None] = time.sleep
"""Waits between polls (a test replaces it to change the run between polls)."""
now: Callable[[], float] = time.time
"""The clock the stall rule reads (a test replaces it)."""

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``90s``, ``30m``, ``2h``, ``1d`` or ``1h30m``; ValueError for anything else."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 2h, 1d, 1h30m)")
    return sum(float(n) * _UNITS[u] for n, u in parts)


if TYPE_CHECKING:
    _SecondsParam = click.ParamType[float]
else:  # click 8.1 (still supported) has no subscriptable ParamType; the type arguments are for the checker only
    _SecondsParam = click.ParamType


class Duration(_SecondsParam):
    """A click option value like ``30m``, as seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@dataclass(frozen=True)
class WatchOptions:
    """What ``check`` was asked: keep polling or not, how often, the stall limit and the output form."""

    interval_s: float
    stalled_after_s: float | None
    max_polls: int | None
    as_json: bool
    min_severity: Severity
    threshold: Severity | None


def _duration_text(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}h{whole // 60 % 60:02d}m{whole % 60:02d}s" if whole >= 3600 else \
        f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{seconds:.0f}s"


def _key(path: str, f: Finding) -> tuple[object, ...]:
    return (path, f.code, f.message, f.paths, f.steps)


class _Printer:
    """Writes finding and stall lines as they come, flushed at once (a reader sees them while the watch goes on)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.out = None if as_json else console()

    def _line(self, document: dict[str, Any]) -> None:
        from ..report.safe_text import clean_json

        sys.stdout.write(clean_json(json.dumps({"schema_version": 1, **document}, ensure_ascii=False,
                                               sort_keys=True, allow_nan=False, default=str)) + "\n")
        sys.stdout.flush()

    def finding(self, run: Run, base: Path, f: Finding) -> None:
        from ..report.json_doc import finding_json, run_path

        if self.out is None:
            self._line({"event": "finding", "path": run_path(run, base), "status": run.status,
                        "finding": finding_json(f)})
            return
        from ..report.text import finding_line

        self.out.print(finding_line(run, base, f), soft_wrap=True)
        self.out.file.flush()

    def stalled(self, run: Run, base: Path, silent_s: float, limit_s: float) -> None:
        from ..load.stale import last_write_s
        from ..report.json_doc import run_path

        last = last_write_s(run.sources)
        when = datetime.fromtimestamp(last, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if last else None
        if self.out is None:
            self._line({"event": "stalled", "path": run_path(run, base), "status": run.status,
                        "silent_s": round(silent_s, 3), "stalled_after_s": limit_s, "last_write": when})
            return
        from ..report.text import stalled_line

        self.out.print(stalled_line(run, base, f"nothing logged for {_duration_text(silent_s)} (longer than "
                                               f"{_duration_text(limit_s)}; last write {when})"), soft_wrap=True)
        self.out.file.flush()


def _run_dirs(paths: tuple[str, ...], known: list[Path], first: bool) -> list[Path]:
    """The runs under ``paths``: on the first poll by ``check``'s rules (problems on stderr, exit 2 with none);
    later quietly, adding runs that appeared (a tree being filled) to those already watched."""
    if first:
        found: list[Path] = []
        for path in paths:
            try:
                found += find_runs(path)
            except UsageProblem:
                continue
        if not found:
            sys.exit(EXIT_USAGE)
        return found
    out = list(known)
    for path in paths:
        try:
            out += [p for p in session().discover(path) if p not in out]
        except OSError:
            continue
    return out


def watch_runs(paths: tuple[str, ...], base: Path, options: WatchOptions) -> int:
    """Poll until a run stalls (3), every run has ended, ``--max-polls`` is reached, or Ctrl-C (``main``'s rule:
    one line, 130); then the exit code of ``--fail-on`` over every finding seen."""
    from ..load.stale import QUIET_STATUSES, silent_for_s
    from ..report.json_doc import run_path

    printer = _Printer(options.as_json)
    seen: set[tuple[object, ...]] = set()
    failed = False
    run_dirs: list[Path] = []
    polls = 0
    while True:
        polls += 1
        run_dirs = _run_dirs(paths, run_dirs, polls == 1)
        stalled = False
        ended = True
        for run_dir in run_dirs:
            run = session().stages(run_dir)  # a live run keeps its read cache: the next poll reads what was appended
            label = run_path(run, base)
            for f in run.findings:
                failed |= options.threshold is not None and f.severity >= options.threshold
                if f.severity >= options.min_severity and _key(label, f) not in seen:
                    seen.add(_key(label, f))
                    printer.finding(run, base, f)
            silent = silent_for_s(run.status, run.sources, now())
            if options.stalled_after_s is not None and silent is not None and silent > options.stalled_after_s:
                printer.stalled(run, base, silent, options.stalled_after_s)
                stalled = True
            ended &= run.status in QUIET_STATUSES
        if stalled:
            return EXIT_STALLED
        if ended or (options.max_polls is not None and polls >= options.max_polls):
            return EXIT_FINDINGS if failed else EXIT_OK
        sleep(options.interval_s)
