"""Config documents that come with reader results: one W&B config per local folder (with its attempt), HF configs."""

from __future__ import annotations

from ..model import ConfigDoc
from .collect import Collected
from .wandb_order import process_folders


def folder_attempts(c: Collected) -> dict[str, int]:
    """W&B folder -> attempt, where each folder is one process start (as ``attempts`` numbers them).

    A W&B-only run, or several folders sharing one run id (a requeued or resumed run), in start order.
    """
    runs = list(c.wandb_runs)
    if not runs or not (c.kind == "wandb" or (len(runs) > 1 and len({r.run_id for r in runs}) == 1)):
        return {}
    return {r.rel_path: i for i, r in enumerate(process_folders(runs), start=1)}


def extra_configs(c: Collected) -> tuple[ConfigDoc, ...]:
    """Each W&B folder's config (``wandb_config``, attempt set when known), then the HF Trainer documents."""
    attempts = folder_attempts(c)
    docs = [ConfigDoc(path=run.rel_path, kind="wandb_config", data=dict(run.config), attempt=attempts.get(run.rel_path))
            for run in c.wandb_runs if run.config]
    if c.hf is not None:
        docs += list(c.hf.configs)
    return tuple(docs)
