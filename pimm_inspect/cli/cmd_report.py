"""``pimm-inspect report RUN... -o FILE.html``: a shareable audit of runs (or of a tree) as one HTML or Markdown file."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..report.safe_text import clean
from ._common import EXIT_USAGE, discovery_options, refuse_output_in_a_run, stderr, stream_many

FORMATS = ("html", "md")


def _format(output: str, chosen: str | None) -> str:
    """``--format``, else the output file's extension (``.md``/``.markdown``), else html."""
    if chosen:
        return chosen
    return "md" if output.lower().endswith((".md", ".markdown")) else "html"


def _write(output: str, text: str) -> None:
    """Write ``text`` to stdout (``-``) or to ``output`` through a temporary file renamed into place (the exports'
    rule: a failure never leaves a partial file)."""
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from ..report.export import replaced_atomically

    with replaced_atomically(output) as out:
        out.write(text)


@click.command("report")
@click.argument("runs", nargs=-1, type=click.Path())
@click.option("-o", "--output", required=True, help="The report file, or - for stdout.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="html (one self-contained page) or md (Markdown for an issue or chat); default: from -o's "
                   "extension, else html.")
@click.option("--tag", "tags", multiple=True, metavar="GLOB",
              help="Tags to draw (repeatable); for a tree, the tags overlaid across runs. Default: every tag of a run.")
@click.option("--policy", type=click.Choice(("all", "newest", "oldest")), default="all", show_default=True,
              help="Overlap policy of the curves: every attempt's copy, or one value per step.")
@click.option("--redact", is_flag=True,
              help="Remove host names, user names, the Slurm account, e-mail addresses, git remotes and absolute "
                   "paths (shown relative to the run).")
@discovery_options
def command(runs: tuple[str, ...], output: str, fmt: str | None, tags: tuple[str, ...], policy: str,
            redact: bool) -> None:
    """Write an offline, shareable audit of runs (or of every run under ROOT): attempts, replayed and lost steps,
    curves, findings, checkpoints, provenance and config per attempt, the W&B link, the files read.

    The HTML file needs no network and no script to be read; secrets are masked.

    Example: pimm-inspect report exp/panda/semseg/semseg-rollback -o rollback.html
    """
    from ..report.audit.document import build_report

    kind = _format(output, fmt)
    stream = stream_many(runs)  # the one way runs are found and loaded (the same as `show`)
    if output != "-":
        refuse_output_in_a_run(output, stream.run_dirs)
        if not Path(output).absolute().parent.is_dir():
            stderr(f"pimm-inspect: {clean(output, newlines=False)}: no such folder")
            sys.exit(EXIT_USAGE)
    report = build_report(stream.runs, stream.base, len(stream.run_dirs), tags, policy, redact)
    if kind == "md":
        from ..report.audit.markdown import render_markdown

        text = render_markdown(report)
    else:
        from ..report.audit.html import render_html

        text = render_html(report)
    _write(output, text)
    if output != "-":
        stderr(f"pimm-inspect: wrote {clean(output, newlines=False)} ({len(text.encode('utf-8')) / 1e3:.0f} KB, "
               f"{len(report.runs)} run{'s' if len(report.runs) != 1 else ''})")
    stream.exit()
