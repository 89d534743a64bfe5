"""``pimm-inspect ls ROOT``: one line per run under ROOT."""

from __future__ import annotations

import click

from ._common import discovery_options, console, json_option, stream_many


@click.command("ls")
@click.argument("roots", nargs=-1, type=click.Path())
@discovery_options
@json_option
def command(roots: tuple[str, ...], as_json: bool) -> None:
    """List the runs under ROOT with kind, era, status, attempts and findings.

    Example: pimm-inspect ls exp/panda
    """
    stream = stream_many(roots)
    if as_json:
        from ..report.json_doc import SCHEMA_VERSION, dumps, ls_run

        doc = {"schema_version": SCHEMA_VERSION, "runs": [ls_run(r, stream.base) for r in stream.rows]}
        click.echo(dumps(doc))
    else:
        from ..report.text import plain_runs_table, runs_table, runs_table_row  # Rich: only for the table

        rows = [runs_table_row(r, stream.base) for r in stream.rows]
        out = console()
        plain = plain_runs_table(rows, out.width) if out.color_system is None else None
        if plain is not None:
            out.file.write(plain)  # what Rich would print, without its per-cell layout cost
        else:
            out.print(runs_table(rows))
    stream.exit()
