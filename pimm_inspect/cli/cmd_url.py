"""``pimm-inspect url RUN``: the W&B link (or the `wandb sync` command for a never-synced offline run)."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_FINDINGS, json_option, load_runs, stderr


@click.command("url")
@click.argument("run", type=click.Path(), default=".")
@json_option
def command(run: str, as_json: bool) -> None:
    """Print the run's W&B URL, or the `wandb sync` command of a never-synced offline run; exits 1 when neither.

    Example: pimm-inspect url exp/run
    """
    from ..report.json_doc import dumps, wandb_json
    from ..report.safe_text import clean

    target = load_runs(run, single=True)[0]
    info = target.wandb
    if as_json:
        click.echo(dumps({"schema_version": 1, **wandb_json(info)}))
    elif info.url:
        click.echo(clean(info.url, newlines=False))
    elif info.sync_command:
        click.echo(clean(info.sync_command, newlines=False))
    elif not info.run_ids:
        stderr("pimm-inspect: this run has no W&B link (TensorBoard mode or W&B disabled)")
    if not as_json and info.link_note:
        stderr(clean(f"pimm-inspect: {info.link_note}", newlines=False))
    elif not as_json and not info.url and not info.sync_command and info.run_ids:
        stderr(clean(f"pimm-inspect: W&B run id {', '.join(info.run_ids)} but no link can be formed", newlines=False))
    if not info.url and not info.sync_command:
        sys.exit(EXIT_FINDINGS)
