"""``pimm-inspect show RUN``: attempts, scalars, checkpoints, provenance and W&B link."""

from __future__ import annotations

import click

from ._common import console, discovery_options, json_option, stream_many


@click.command("show")
@click.argument("runs", nargs=-1, type=click.Path())
@discovery_options
@json_option
def command(runs: tuple[str, ...], as_json: bool) -> None:
    """Summarise a run (or every run under a folder).

    Example: pimm-inspect show exp/panda/semseg/semseg-fft --json
    """
    from ..report.json_text import SCHEMA_VERSION, dumps

    stream = stream_many(runs)
    if as_json:
        # Only each run's summary document is kept, never its series (an unchanged run's comes from the cache).
        click.echo(dumps({"schema_version": SCHEMA_VERSION, "runs": list(stream.show_documents)}))
        stream.exit()
    from ..report.text import run_summary

    out = console()
    for i, r in enumerate(stream.runs):
        if i:
            out.print()
        out.print(run_summary(r, stream.base))
    stream.exit()
