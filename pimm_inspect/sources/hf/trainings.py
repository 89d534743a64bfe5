"""Which training and which attempt wrote each checkpoint-N of an HF Trainer output dir.

A Trainer keeps ``max_steps`` and ``train_batch_size`` in every ``trainer_state.json`` it writes, from its first
save to its last: two checkpoints that disagree on them were written by two trainings (the same output dir used
again for a new run). A checkpoint at step s was saved by the last attempt of its training that trained s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...model import Finding, Severity
from .state import StateDoc, as_int

TRAINING_KEYS = ("max_steps", "train_batch_size")
"""trainer_state.json fields a training never changes (a resumed Trainer restores them from the checkpoint)."""


@dataclass(frozen=True, slots=True)
class Training:
    """One training (``Trainer`` set up once, then started and resumed) found in the output dir."""

    key: tuple[int | None, ...]
    """Its ``TRAINING_KEYS`` values."""
    checkpoint_steps: tuple[int, ...]
    """N of its checkpoint-N folders, ascending."""
    newest: StateDoc
    """The trainer_state.json of its newest checkpoint (or the top-level one, which the last training wrote)."""
    first_mtime_s: float
    """When its oldest checkpoint was written: trainings are ordered by it."""


def training_key(state: StateDoc | None) -> tuple[int | None, ...] | None:
    """(max_steps, train_batch_size) of a state file; None when it records neither."""
    if state is None:
        return None
    key = tuple(as_int(state.fields.get(name)) for name in TRAINING_KEYS)
    return key if any(v is not None for v in key) else None


def trainings(checkpoint_states: Sequence[tuple[int, float, StateDoc]], top: StateDoc | None) -> list[Training]:
    """The trainings whose checkpoints are in the dir, oldest first; one (or none) in the usual case.

    ``checkpoint_states`` are (N, mtime, trainer_state.json) of every readable checkpoint-N; the top-level state
    belongs to the training whose key it has (the last one: it is written when a training ends).
    """
    groups: dict[tuple[int | None, ...], list[tuple[int, float, StateDoc]]] = {}
    for step, mtime, state in sorted(checkpoint_states, key=lambda t: t[0]):
        key = training_key(state)
        if key is not None:
            groups.setdefault(key, []).append((step, mtime, state))
    out = []
    for key, members in groups.items():
        newest = members[-1][2]
        if top is not None and training_key(top) == key:
            newest = top if (as_int(top.fields.get("global_step")) or -1) >= (
                as_int(newest.fields.get("global_step")) or -1) else newest
        out.append(Training(key, tuple(s for s, _m, _st in members), newest, min(m for _s, m, _st in members)))
    top_key = training_key(top)
    if top is not None and top_key is not None and top_key not in groups:
        out.append(Training(top_key, (), top, float("inf")))
    # The top level's training ends last; the others by when their first checkpoint was written.
    return sorted(out, key=lambda t: (t.key == top_key and top is not None, t.first_mtime_s, t.checkpoint_steps))


def _describe(t: Training) -> str:
    values = ", ".join(f"{name} {value}" for name, value in zip(TRAINING_KEYS, t.key) if value is not None)
    folders = ", ".join(f"checkpoint-{s}" for s in t.checkpoint_steps[:4]) + (" ..." if len(t.checkpoint_steps) > 4
                                                                              else "")
    return f"{folders or t.newest.rel_path} ({values})"


def trainings_finding(found: list[Training], rel_dir: str) -> Finding | None:
    """``hf.new-training``: the dir holds checkpoints of more than one training (it was used again)."""
    if len(found) < 2:
        return None
    paths = tuple(f"{rel_dir}/checkpoint-{s}".removeprefix("./") for t in found for s in t.checkpoint_steps)
    return Finding(
        "hf.new-training", Severity.WARNING,
        f"{len(found)} trainings wrote into this output dir: " + "; then ".join(_describe(t) for t in found),
        paths or tuple(t.newest.rel_path for t in found), None,
        "A Trainer keeps max_steps and train_batch_size from its first save to its last (a resume restores them), "
        "so checkpoints that disagree on them come from different trainings: the dir was used again without "
        "overwrite. Each later training started from scratch (origin `restart`); `resume_from_checkpoint=True` "
        "picks the highest checkpoint-N whichever training wrote it. Use a new output_dir per training.")


def attempt_trainings(resumed: Sequence[int | None], count: int) -> list[int | None]:
    """The training (0-based, oldest first) of each attempt: a non-first attempt that restored nothing starts the next.

    None for every attempt with one training, or when the starts do not add up to ``count`` trainings (the files
    do not say which).
    """
    index, out = 0, []  # type: tuple[int, list[int | None]]
    for i, restored in enumerate(resumed):
        if i and restored is None:
            index += 1
        out.append(index)
    return list(out) if count > 1 and index + 1 == count else [None] * len(out)


def checkpoint_owners(spans: Sequence[tuple[int | None, int | None, int | None]], steps: Sequence[tuple[int, int | None]]
                      ) -> dict[int, int]:
    """Checkpoint step -> 0-based attempt that saved it.

    ``spans`` are each attempt's (restored step or None, last step, training); ``steps`` each complete checkpoint's
    (step, training or None when unknown). The saver is the last attempt of that training that started below the
    step and reached it (its last logged step may be before its last save: then the last one that started below).
    """
    owners: dict[int, int] = {}
    for step, training in steps:
        started = [i for i, (restored, _last, t) in enumerate(spans)
                   if (restored or 0) < step and (training is None or t is None or t == training)]
        reached = [i for i in started if spans[i][1] is not None and step <= spans[i][1]]  # type: ignore[operator]
        if reached or started:
            owners[step] = (reached or started)[-1]
    return owners
