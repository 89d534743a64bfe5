"""Config documents as flat ``a.b.c`` key maps, shared by the drift check, ``config --flat/--diff`` and the UI."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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


def attempt_query_config(run: Run, attempt: int) -> ConfigDoc | None:
    """The parsed config attempt ``attempt`` ran with, by ``query_config``'s rule: the first kind in
    ``QUERY_CONFIG_KINDS`` with a document of that attempt wins, the run-level document standing for attempt 1
    (pimm writes ``resolved_config.json`` on the first attempt only; within a kind it wins, as in
    ``query_config``). An attempt that has no document of its own gets the run's query config."""
    for kind in QUERY_CONFIG_KINDS:
        docs = [doc for doc in run.configs if doc.kind == kind and isinstance(doc.data, Mapping)
                and (doc.attempt == attempt or (doc.attempt is None and attempt == 1))]
        if docs:
            return max(docs, key=lambda doc: doc.attempt is None)
    return query_config(run)


PER_ATTEMPT_KINDS = ("log_config", "wandb_config")
"""Kinds that exist once per attempt (train.log's ``Config:`` dumps, W&B folders), preferred in this order."""


def attempt_configs(run: Run, attempt: int) -> list[ConfigDoc]:
    """The config documents attempt ``attempt`` started with, the per-attempt kinds first (train.log's dump, then
    its W&B folder, then the rest, e.g. the ``training_args.bin`` of the checkpoints it saved)."""
    docs = [doc for doc in run.configs if doc.attempt == attempt]
    rank = {kind: i for i, kind in enumerate(PER_ATTEMPT_KINDS)}
    return sorted(docs, key=lambda doc: rank.get(doc.kind, len(PER_ATTEMPT_KINDS)))


@dataclass(frozen=True, slots=True)
class ConfigDifference:
    """One ``a.b.c`` key whose value differs between two config documents."""

    key: str
    left: Any
    right: Any
    in_left: bool
    """False when the key is absent on the left (so ``left`` None is not a real null)."""
    in_right: bool


def config_differences(left: Any, right: Any) -> list[ConfigDifference]:
    """The flattened keys whose values differ between two documents' data, sorted by key (``config --diff``, the
    report's diffs between attempts). Mask before calling when the values are shown."""
    flat_left = flatten_config(left) if left is not None else {}
    flat_right = flatten_config(right) if right is not None else {}
    missing = object()
    keys = sorted(k for k in flat_left.keys() | flat_right.keys()
                  if not _same(flat_left.get(k, missing), flat_right.get(k, missing)))
    return [ConfigDifference(k, flat_left.get(k), flat_right.get(k), k in flat_left, k in flat_right) for k in keys]


def _same(left: Any, right: Any) -> bool:
    """Equal values; two NaNs are the same value (``NaN != NaN`` would report every NaN key as changed)."""
    if isinstance(left, float) and isinstance(right, float) and left != left and right != right:
        return True
    return bool(left == right)
