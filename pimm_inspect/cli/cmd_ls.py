"""``pimm-inspect ls ROOT``: one line per run under ROOT."""

from __future__ import annotations

import click

from ._common import console, json_option, load_many


@click.command("ls")
@click.argument("roots", nargs=-1, type=click.Path())
@json_option
def command(roots: tuple[str, ...], as_json: bool) -> None:
    """List the runs under ROOT with kind, era, status, attempts and findings.

    Example: pimm-inspect ls exp/panda
    """
    from ..report.json_doc import dumps, show_run

    runs, base = load_many(roots)
    if as_json:
        doc = {"schema_version": 1, "runs": [{k: v for k, v in show_run(r, base).items()
                                              if k in ("path", "name", "kind", "era", "status", "findings")}
                                             | {"attempts": len(r.attempts), "wandb_run_ids": list(r.wandb.run_ids)}
                                             for r in runs]}
        click.echo(dumps(doc))
        return
    from ..report.text import runs_table

    console().print(runs_table(runs, base))
