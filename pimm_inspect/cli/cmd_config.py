"""``pimm-inspect config RUN``: the resolved config (secrets masked), per attempt, flat or as a diff."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..report.safe_text import clean, clean_name
from ._common import EXIT_USAGE, color_wanted, json_option, load_runs, stderr

if TYPE_CHECKING:
    from ..model import ConfigDoc, Run

KINDS = ("resolved_config", "model_config", "config_py", "wandb_config", "log_config", "hf_training_args", "lightning_hparams")
"""Also the fallback order when the asked-for kind is absent."""


def _default(run: Run) -> list[ConfigDoc]:
    """The documents shown without --kind/--attempt: first the run's config by the one rule every surface uses
    (``analysis.configs.query_config``: what the ``cfg.`` filter and the dataset read), then its companions (HF's
    other document, the other folders' W&B configs); else, without a parsed config, every document of the first
    kind present (``config.py`` as text)."""
    from ..analysis.configs import query_config

    primary = query_config(run)
    if primary is not None:
        kinds = ("model_config", "hf_training_args") if run.kind == "hf-trainer" else (primary.kind,)
        return [primary] + [d for d in run.configs if d.kind in kinds and d is not primary]
    for kind in KINDS:
        docs = [d for d in run.configs if d.kind == kind]
        if docs:
            return docs
    return []


def _select(run: Run, kind: str | None, attempt: int | None, label: str) -> list[ConfigDoc]:
    """The documents asked for; exits with a usage error naming what exists when there are none."""
    label = clean_name(label)  # the RUN argument: a folder name a run's author chose (often a shell glob's match)
    if attempt is not None:
        from ..analysis.configs import attempt_configs

        docs = [d for d in attempt_configs(run, attempt) if kind is None or d.kind == kind]
        if not docs:
            have = sorted({d.attempt for d in run.configs if d.attempt is not None})
            stderr(f"pimm-inspect: {label} has no config for attempt {attempt}"
                   + (f" (attempts with one: {', '.join(map(str, have))})" if have else
                      " (no per-attempt configs: neither train.log Config: dumps nor W&B folders)"))
            sys.exit(EXIT_USAGE)
        return docs[:1] if kind is None else docs
    if kind is not None:
        docs = [d for d in run.configs if d.kind == kind]
        if docs:
            return docs
        kinds_had = sorted({d.kind for d in run.configs})
        stderr(f"pimm-inspect: {label} has no {kind} document"
               + (f" (it has: {', '.join(kinds_had)})" if kinds_had else " (it has no config document)"))
        sys.exit(EXIT_USAGE)
    docs = _default(run)
    if not docs:
        stderr(f"pimm-inspect: {label} has no config document")
        sys.exit(EXIT_USAGE)
    return docs


def _heading(doc: ConfigDoc) -> str:
    return clean(f"# {doc.path} ({doc.kind}" + (f", attempt {doc.attempt}" if doc.attempt is not None else "") + ")",
                 newlines=False)


def _entry(doc: ConfigDoc) -> dict[str, Any]:
    """One document of the ``documents`` list of ``config --json`` (secrets masked)."""
    from ..analysis.secrets import mask_text, mask_value

    body = {"config": mask_value(doc.data)} if doc.data is not None else {"text": mask_text(doc.text or "")}
    return {"path": doc.path, "kind": doc.kind, "attempt": doc.attempt, **body}


@click.command("config")
@click.argument("run", type=click.Path(), default=".")
@click.option("--diff", "other", help="Show only the keys that differ from OTHER: a run, or @N for attempt N of RUN.")
@click.option("--attempt", type=int, help="The config attempt N started with (train.log's Config: dump, its W&B folder).")
@click.option("--flat", is_flag=True, help="One `key = value` line per leaf.")
@click.option("--kind", type=click.Choice(KINDS), default=None,
              help="Which config document (default: the run's config, the one the cfg. filter reads, then its companions); "
                   "exit 2 naming the kinds the run has when it has none of this kind.")
@json_option
def command(run: str, other: str | None, attempt: int | None, flat: bool, kind: str | None, as_json: bool) -> None:
    """Print a run's config with secrets masked, per attempt, or its differences from another run or attempt.

    Example: pimm-inspect config exp/run --attempt 1 --diff @2
    """
    from ..analysis.configs import flatten_config
    from ..analysis.secrets import mask_text, mask_value
    from ..report.json_doc import config_document, dumps

    target = load_runs(run, single=True)[0]
    if other and other.startswith("@"):
        try:
            right_attempt = int(other[1:])
        except ValueError:
            stderr(f"pimm-inspect: --diff {clean_name(other)}: give @N with N an attempt number")
            sys.exit(EXIT_USAGE)
        left_doc = _select(target, kind, attempt if attempt is not None else 1, run)[0]
        right_doc = _select(target, left_doc.kind, right_attempt, run)[0]
        _diff(run, f"{run}@{right_attempt}", left_doc, right_doc, as_json, flatten_config, mask_value, dumps,
              (attempt if attempt is not None else 1, right_attempt))
        return
    docs = _select(target, kind, attempt, run)
    doc = docs[0]
    if other:
        other_run = load_runs(other, single=True)[0]
        same = [d for d in other_run.configs if d.kind == doc.kind and (attempt is None or d.attempt == attempt)]
        _diff(run, other, doc, same[0] if same else next(iter(_default(other_run)), None), as_json, flatten_config,
              mask_value, dumps, None)
        return
    if as_json:
        body = doc.data if doc.data is not None else {"text": mask_text(doc.text or "")}
        document = config_document(target, Path(run), body, doc.kind)
        document["attempt"] = doc.attempt
        document["source"] = doc.path
        document["documents"] = [_entry(d) for d in docs]
        click.echo(dumps(document))
        return
    newest = max((a.index for a in target.attempts), default=None)
    older = attempt is None and doc.attempt is not None and newest is not None and doc.attempt < newest
    for i, item in enumerate(docs):
        if len(docs) > 1 or older:  # one document, but an older attempt's: say whose it is, as --json does
            click.echo(("\n" if i else "") + _heading(item))
        if item.data is None:
            text = mask_text(item.text or "")
            click.echo(clean(text), nl=not text.endswith("\n") and len(docs) > 1)
        elif flat:
            for key, value in flatten_config(mask_value(item.data)).items():
                click.echo(f"{clean(key, newlines=False)} = {json.dumps(value)}")
        else:
            click.echo(json.dumps(mask_value(item.data), indent=2))


ABSENT = "<absent>"
"""A key (or list element) one side lacks; unquoted, so it never reads as the JSON string ``"<absent>"``."""


def _diff(left_label: str, right_label: str, left_doc: ConfigDoc, right_doc: ConfigDoc | None, as_json: bool,
          flatten_config: Callable[[Any], dict[str, Any]], mask_value: Callable[[Any], Any],
          dumps: Callable[[dict[str, Any]], str], attempts: tuple[int, int] | None) -> None:
    """Keys whose values differ (lists: only the differing elements, ``key[i]``); values as JSON, a key one side
    lacks as an unquoted ``<absent>`` (dim on a terminal); in JSON ``in_left``/``in_right`` false and a null."""
    from ..analysis.configs import config_differences

    left = mask_value(left_doc.data) if left_doc.data is not None else None
    right = mask_value(right_doc.data) if right_doc is not None and right_doc.data is not None else None
    differences = config_differences(left, right)
    if as_json:
        document = {"schema_version": 1, "left": left_label, "right": right_label, "kind": left_doc.kind,
                    "differences": {d.key: {"left": d.left, "right": d.right, "in_left": d.in_left,
                                            "in_right": d.in_right} for d in differences}}
        if attempts is not None:
            document["attempts"] = list(attempts)
        click.echo(dumps(document))
        return
    absent = click.style(ABSENT, dim=True) if color_wanted() else ABSENT
    for d in differences:
        shown_left = json.dumps(d.left) if d.in_left else absent
        shown_right = json.dumps(d.right) if d.in_right else absent
        click.echo(f"{clean(d.key, newlines=False)}: {shown_left} -> {shown_right}", color=color_wanted())
    if not differences:
        stderr("pimm-inspect: no differences")
