"""``pimm-inspect check PATH``: findings per run, worst first; exit 1 at or above --fail-on."""

from __future__ import annotations

import sys
import click

from ..model import Severity
from ._common import EXIT_FINDINGS, EXIT_OK, console, json_option, load_many


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@json_option
@click.option("--fail-on", type=click.Choice(["info", "warning", "error", "never"]), default="warning",
              show_default=True, help="Exit 1 when a finding at or above this severity exists.")
@click.option("--min-severity", type=click.Choice(["info", "warning", "error"]), default="info",
              show_default=True, help="Hide findings below this severity in text output.")
@click.option("--brief", is_flag=True, help="One line per finding, without explanations.")
def command(paths: tuple[str, ...], as_json: bool, fail_on: str, min_severity: str, brief: bool) -> None:
    """Check runs for replayed steps, rollbacks, W&B cursor problems, incomplete checkpoints,
    provenance issues and damaged files.

    Example: pimm-inspect check exp/ --fail-on error
    """
    from ..report.json_doc import check_document, dumps

    runs, base = load_many(paths)
    if as_json:
        click.echo(dumps(check_document(runs, base)))
    else:
        from ..report.text import findings_view

        out = console()
        for i, r in enumerate(runs):
            if i:
                out.print()
            out.print(findings_view(r, base, Severity.parse(min_severity), explain=not brief))
        if len(runs) > 1:
            counts = {sev: sum(1 for r in runs for f in r.findings if f.severity == sev) for sev in Severity}
            flagged = sum(1 for r in runs if any(f.severity >= Severity.WARNING for f in r.findings))
            out.print(f"\n{len(runs)} runs, {flagged} with warnings or errors: {counts[Severity.ERROR]} error(s), "
                      f"{counts[Severity.WARNING]} warning(s), {counts[Severity.INFO]} info")
    if fail_on != "never":
        threshold = Severity.parse(fail_on)
        if any(f.severity >= threshold for r in runs for f in r.findings):
            sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)
