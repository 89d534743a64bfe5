"""``pimm-inspect url RUN``: the W&B link (or the `wandb sync` command for a never-synced offline run)."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_FINDINGS, json_option, load_runs, stderr


@click.command("url")
@click.argument("run", type=click.Path(), default=".")
@json_option
def command(run: str, as_json: bool) -> None:
    """Print the run's W&B URL; exits 1 when there is none.

    Example: pimm-inspect url exp/run
    """
    from ..report.json_doc import dumps
    from ..report.safe_text import clean

    target = load_runs(run, single=True)[0]
    info = target.wandb
    if as_json:
        click.echo(dumps({"schema_version": 1, "url": info.url, "run_ids": list(info.run_ids),
                          "project": info.project, "entity": info.entity, "sync_command": info.sync_command}))
    elif info.url:
        click.echo(clean(info.url, newlines=False))
    elif info.sync_command:
        click.echo(clean(info.sync_command, newlines=False))
        stderr("pimm-inspect: offline run never synced; the command above uploads it")
    elif info.run_ids:
        stderr(clean(f"pimm-inspect: W&B run id {', '.join(info.run_ids)} (project {info.project or '?'}) but no "
                     "entity is recorded: open https://wandb.ai/<entity>/" + (info.project or "<project>")
                     + f"/runs/{info.run_ids[0]}", newlines=False))
    else:
        stderr("pimm-inspect: this run has no W&B link (TensorBoard mode or W&B disabled)")
    if not info.url and not info.sync_command:
        sys.exit(EXIT_FINDINGS)
