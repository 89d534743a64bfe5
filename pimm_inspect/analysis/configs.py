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
    report's diffs between attempts). Mask before calling when the values are shown.

    Two lists are compared element by element: only the elements that differ are reported, each under its index
    (``data.transform[2].p``; an element one list lacks is absent on that side), never the whole list."""
    flat_left = flatten_config(left) if left is not None else {}
    flat_right = flatten_config(right) if right is not None else {}
    keys = sorted(k for k in flat_left.keys() | flat_right.keys()
                  if not _same(flat_left.get(k, _MISSING), flat_right.get(k, _MISSING)))
    out: list[ConfigDifference] = []
    for k in keys:
        out += _difference(k, flat_left.get(k, _MISSING), flat_right.get(k, _MISSING))
    return out


_MISSING: Any = object()
"""A key or list element one side does not have."""


def _difference(key: str, left: Any, right: Any) -> list[ConfigDifference]:
    """``key``'s differences: one, or per differing element when both values are lists (nested lists and dicts in
    them are followed the same way, without recursion, so a deeply nested hostile document cannot overflow)."""
    out: list[ConfigDifference] = []
    todo: list[tuple[str, Any, Any]] = [(key, left, right)]
    while todo:
        k, a, b = todo.pop()
        if isinstance(a, list) and isinstance(b, list):
            todo += [(f"{k}[{i}]", a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING)
                     for i in reversed(range(max(len(a), len(b))))]
        elif isinstance(a, dict) and isinstance(b, dict) and a and b:
            flat_a, flat_b = flatten_config(a), flatten_config(b)
            todo += [(f"{k}.{sub}", flat_a.get(sub, _MISSING), flat_b.get(sub, _MISSING))
                     for sub in sorted(flat_a.keys() | flat_b.keys(), reverse=True)]
        elif not _same(a, b):
            out.append(ConfigDifference(k, None if a is _MISSING else a, None if b is _MISSING else b,
                                        a is not _MISSING, b is not _MISSING))
    return out


def _same(left: Any, right: Any) -> bool:
    """Equal values; two NaNs are the same value (``NaN != NaN`` would report every NaN key as changed)."""
    if isinstance(left, float) and isinstance(right, float) and left != left and right != right:
        return True
    return bool(left == right)
