"""``pimm-inspect config RUN``: the resolved config (secrets masked), flat or as a diff."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ._common import EXIT_USAGE, json_option, load_runs, stderr

KINDS = ("resolved_config", "model_config", "config_py", "wandb_config", "lightning_hparams")


def _pick(run, kind: str):
    doc = run.config(kind)
    if doc is None:
        for fallback in KINDS:
            doc = run.config(fallback)
            if doc is not None:
                break
    return doc


@click.command("config")
@click.argument("run", type=click.Path(), default=".")
@click.option("--diff", "other", type=click.Path(), help="Show only the keys that differ from OTHER run.")
@click.option("--flat", is_flag=True, help="One `key = value` line per leaf.")
@click.option("--kind", type=click.Choice(KINDS), default="resolved_config", show_default=True,
              help="Which config document (falls back to the first present).")
@json_option
def command(run: str, other: str | None, flat: bool, kind: str, as_json: bool) -> None:
    """Print a run's config with secrets masked, or its differences from another run.

    Example: pimm-inspect config exp/run-a --diff exp/run-b
    """
    from ..analysis.configs import flatten_config
    from ..analysis.secrets import mask_text, mask_value
    from ..report.json_doc import config_document, dumps

    target = load_runs(run, single=True)[0]
    doc = _pick(target, kind)
    if doc is None:
        stderr(f"pimm-inspect: {run} has no config document")
        sys.exit(EXIT_USAGE)
    if other:
        other_run = load_runs(other, single=True)[0]
        other_doc = _pick(other_run, doc.kind)
        left = flatten_config(mask_value(doc.data)) if doc.data is not None else {}
        right = flatten_config(mask_value(other_doc.data)) if other_doc is not None and other_doc.data is not None else {}
        keys = sorted(k for k in left.keys() | right.keys() if left.get(k, ...) != right.get(k, ...))
        if as_json:
            click.echo(dumps({"schema_version": 1, "left": run, "right": other, "kind": doc.kind,
                              "differences": {k: {"left": left.get(k), "right": right.get(k)} for k in keys}}))
            return
        for k in keys:
            click.echo(f"{k}: {json.dumps(left.get(k, '<absent>'))} -> {json.dumps(right.get(k, '<absent>'))}")
        if not keys:
            stderr("pimm-inspect: no differences")
        return
    if doc.data is None:
        if as_json:
            click.echo(dumps(config_document(target, Path(run), {"text": mask_text(doc.text or "")}, doc.kind)))
        else:
            click.echo(mask_text(doc.text or ""), nl=False)
        return
    if as_json:
        click.echo(dumps(config_document(target, Path(run), doc.data, doc.kind)))
    elif flat:
        for key, value in flatten_config(mask_value(doc.data)).items():
            click.echo(f"{key} = {json.dumps(value)}")
    else:
        click.echo(json.dumps(mask_value(doc.data), indent=2))
