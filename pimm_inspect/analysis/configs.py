"""Config documents as flat ``a.b.c`` key maps, shared by the drift check, ``config --flat/--diff`` and the UI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import ConfigDoc, Run


def flatten_config(data: Any) -> dict[str, Any]:
    """Nested dicts to ``a.b.c`` keys; lists and scalars are leaf values; empty dicts are kept as ``{}``.

    Iterative, so a deeply nested (hostile) document cannot hit the recursion limit.
    """
    out: dict[str, Any] = {}
    if not isinstance(data, dict):
        return {"value": data} if data is not None else out
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(list(data.items()))]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict) and node:
            stack += [(f"{path}.{k}", v) for k, v in reversed(list(node.items()))]
        else:
            out[path] = node
    return out


QUERY_CONFIG_KINDS = ("resolved_config", "hf_training_args", "wandb_config", "log_config", "lightning_hparams",
                      "checkpoint_config", "model_config")
"""Where a run's hyperparameters are looked for, in this order (the first kind with a parsed document wins)."""


def query_config(run: Run) -> ConfigDoc | None:
    """The one parsed config a query over many runs filters on (``lr > 1e-3``): pimm's resolved config, else HF's
    training arguments, else the W&B config, train.log's ``Config:`` dump, Lightning's hparams, a checkpoint's or
    the model's config. Within a kind the run-level document wins, else the newest attempt's (what the run
    last ran with). None when the run has no parsed config (``config.py`` alone is text)."""
    for kind in QUERY_CONFIG_KINDS:
        docs = [doc for doc in run.configs if doc.kind == kind and isinstance(doc.data, Mapping)]
        if docs:
            return max(docs, key=lambda doc: (doc.attempt is None, doc.attempt or 0))
    return None
