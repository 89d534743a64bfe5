"""``pimm-inspect check PATH``: findings per run, worst first; exit 1 at or above --fail-on."""

from __future__ import annotations

import click

from ..model import Severity
from ._common import EXIT_FINDINGS, EXIT_OK, console, discovery_options, json_option, stderr, stream_many


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
def command(paths: tuple[str, ...], as_json: bool, fail_on: str, min_severity: str, brief: bool) -> None:
    """Check runs for replayed steps, rollbacks, W&B cursor problems, incomplete checkpoints,
    provenance issues and damaged files.

    Example: pimm-inspect check exp/ --fail-on error
    """
    from ..report.json_doc import SCHEMA_VERSION, dumps, finding_json, run_path

    stream = stream_many(paths)
    runs, base = stream.runs, stream.base
    threshold = None if fail_on == "never" else Severity.parse(fail_on)
    failed = False
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
        if out is None:  # --json
            documents.append({"path": run_path(run, base), "findings": [finding_json(f) for f in run.findings]})
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
    if out is None:  # --json
        click.echo(dumps({"schema_version": SCHEMA_VERSION, "runs": documents}))
    elif total > 1:
        summary = (f"{total} runs, {flagged} with warnings or errors: {counts[Severity.ERROR]} error(s), "
                   f"{counts[Severity.WARNING]} warning(s), {counts[Severity.INFO]} info")
        if brief:  # stdout stays one line per finding
            stderr(f"pimm-inspect: {summary}")
        else:
            out.print("\n" + summary)
    stream.exit(EXIT_FINDINGS if failed else EXIT_OK)
