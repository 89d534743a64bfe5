"""``pimm-inspect check PATH``: findings per run, worst first; exit 1 at or above --fail-on."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..model import Severity
from ._common import EXIT_FINDINGS, EXIT_OK, console, discovery_options, json_option, stderr, stream_many
from .watch import EXIT_STALLED, Duration, WatchOptions, watch_runs


def watch_clock() -> float:
    """The clock of the stall rule (``watch.now``, which a test replaces)."""
    from . import watch

    return watch.now()


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@json_option
@discovery_options
@click.option("--fail-on", type=click.Choice(["info", "warning", "error", "never"]), default="warning",
              show_default=True, help="Exit 1 when a finding at or above this severity exists.")
@click.option("--min-severity", type=click.Choice(["info", "warning", "error"]), default="info",
              show_default=True, help="Hide findings below this severity in text output.")
@click.option("--brief", is_flag=True,
              help="One line per finding (PATH SEVERITY CODE MESSAGE), never wrapped, without explanations; "
                   "runs without findings and the summary are named on stderr.")
@click.option("--watch", is_flag=True,
              help="Keep polling (a live run or a tree): print each finding once, as it appears (PATH SEVERITY CODE "
                   "MESSAGE lines; with --json one object per line); ends when every run has ended, or on Ctrl-C.")
@click.option("--interval", "interval_s", type=click.FloatRange(min=0.0), default=60.0, show_default=True,
              metavar="SECONDS", help="Seconds between polls of --watch.")
@click.option("--stalled-after", "stalled_after_s", type=Duration(), default=None, metavar="DURATION",
              help="Exit 3 when a run that has not ended has logged nothing for longer than this (90s, 30m, 2h, 1d).")
@click.option("--max-polls", type=click.IntRange(min=1), default=None, hidden=True,
              help="Stop --watch after this many polls (for tests and scripts).")
def command(paths: tuple[str, ...], as_json: bool, fail_on: str, min_severity: str, brief: bool, watch: bool,
            interval_s: float, stalled_after_s: float | None, max_polls: int | None) -> None:
    """Check runs for replayed steps, rollbacks, W&B cursor problems, incomplete checkpoints,
    provenance issues and damaged files.

    Example: pimm-inspect check exp/ --fail-on error
    """
    from ..report.json_doc import SCHEMA_VERSION, dumps, finding_json, run_path

    threshold = None if fail_on == "never" else Severity.parse(fail_on)
    if watch:
        base = Path(paths[0]) if len(paths) == 1 else Path(".")
        options = WatchOptions(interval_s=interval_s, stalled_after_s=stalled_after_s,
                               max_polls=max_polls, as_json=as_json, min_severity=Severity.parse(min_severity),
                               threshold=threshold)
        sys.exit(watch_runs(paths or (".",), base, options))
    from ..load.stale import silent_for_s

    stream = stream_many(paths)
    runs, base = stream.runs, stream.base
    failed = stalled = False
    counts = {sev: 0 for sev in Severity}
    total = flagged = 0
    documents = []
    out = None if as_json else console()
    for run in runs:  # one run in memory at a time: only its findings are kept
        total += 1
        failed |= threshold is not None and any(f.severity >= threshold for f in run.findings)
        flagged += any(f.severity >= Severity.WARNING for f in run.findings)
        for f in run.findings:
            counts[f.severity] += 1
        silent = silent_for_s(run.status, run.sources, watch_clock()) if stalled_after_s is not None else None
        run_stalled = silent is not None and stalled_after_s is not None and silent > stalled_after_s
        stalled |= run_stalled
        if out is None:  # --json
            document: dict[str, Any] = {"path": run_path(run, base), "findings": [finding_json(f) for f in run.findings]}
            if stalled_after_s is not None:
                document.update(silent_s=None if silent is None else round(silent, 3), stalled=run_stalled)
            documents.append(document)
        elif brief:
            from ..report.text import brief_empty_note, findings_brief

            for line in findings_brief(run, base, Severity.parse(min_severity)):
                out.print(line, soft_wrap=True)
            note = brief_empty_note(run, base, Severity.parse(min_severity))
            if note is not None:  # stdout carries finding lines only; this is for people
                stderr(f"pimm-inspect: {note}")
        else:
            from ..report.text import findings_view

            if total > 1:
                out.print()
            out.print(findings_view(run, base, Severity.parse(min_severity)))
        if run_stalled and out is not None and silent is not None and stalled_after_s is not None:
            from ..report.text import stalled_line

            line = stalled_line(run, base, f"nothing logged for {silent:.0f} s (longer than {stalled_after_s:.0f} s)")
            if brief:  # stdout keeps its promise of finding lines only; exit 3 says it to a script
                stderr(f"pimm-inspect: {line.plain}")
            else:
                out.print(line, soft_wrap=True)
    if out is None:  # --json
        click.echo(dumps({"schema_version": SCHEMA_VERSION, "runs": documents}))
    elif total > 1:
        summary = (f"{total} runs, {flagged} with warnings or errors: {counts[Severity.ERROR]} error(s), "
                   f"{counts[Severity.WARNING]} warning(s), {counts[Severity.INFO]} info")
        if brief:  # stdout stays one line per finding
            stderr(f"pimm-inspect: {summary}")
        else:
            out.print("\n" + summary)
    stream.exit(EXIT_STALLED if stalled else EXIT_FINDINGS if failed else EXIT_OK)
