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
    from ..report.json_doc import SCHEMA_VERSION, dumps, show_run
    from ..report.text import runs_table, runs_table_row

    runs, base = stream_many(roots)
    if as_json:
        keep = ("path", "name", "kind", "era", "status", "findings")
        doc = {"schema_version": SCHEMA_VERSION, "runs": [
            {k: v for k, v in show_run(r, base).items() if k in keep}
            | {"attempts": len(r.attempts), "wandb_run_ids": list(r.wandb.run_ids)} for r in runs]}
        click.echo(dumps(doc))
        return
    console().print(runs_table([runs_table_row(r, base) for r in runs]))
