"""Which training and which attempt wrote each checkpoint-N of an HF Trainer output dir.

A Trainer keeps ``max_steps`` and ``train_batch_size`` in every ``trainer_state.json`` it writes, from its first
save to its last: two checkpoints that disagree on them were written by two trainings (the same output dir used
again for a new run), unless the later one's log_history goes on from the earlier one's (a resume with other
settings restores the history). A checkpoint at step s was saved by the last attempt of its training that trained s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ...model import Finding, Severity
from .state import StateDoc, as_int, as_step

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


def _losses(state: StateDoc) -> dict[int, float]:
    """Step -> logged training loss of a state's log_history."""
    out: dict[int, float] = {}
    for row in state.history:
        step, loss = as_step(row.get("step")), row.get("loss")
        if step is not None and isinstance(loss, (int, float)) and not isinstance(loss, bool):
            out.setdefault(step, float(loss))
    return out


def _agree(before: dict[int, float], after: dict[int, float]) -> tuple[bool, bool]:
    """(have common steps, the first common step has the same loss) of two step -> loss maps (NaN equals NaN).

    Only the first: one training's histories share their beginning, while a resume that rolled back may log other
    values at the steps it trained again; a new training differs from its first logged step on.
    """
    common = [step for step in before if step in after]
    if not common:
        return False, True
    first = min(common)
    return True, before[first] == after[first] or (before[first] != before[first] and after[first] != after[first])


def continues(later: StateDoc, earlier: StateDoc) -> bool:
    """True when ``later``'s log_history holds ``earlier``'s rows (a resume restores them), so one training went on.

    A resume that changed max_steps or the batch size writes the new values into its checkpoints, but its history
    starts with the restored one, row for row up to the restored step; a new training's history starts afresh. Every
    row of ``earlier`` must be there with its loss: a new training of the same script (same seed, data and warmup)
    logs the very same first rows and parts only where its schedule does, so agreeing on the first rows says nothing.
    """
    before, after = _losses(earlier), _losses(later)
    return bool(before) and all(step in after and _same(loss, after[step]) for step, loss in before.items())


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)  # NaN equals NaN


MTIME_ORDER_S = 2.0
"""Checkpoints' first write times closer than this order nothing (a copy or a checkout stamps them all at once)."""


def trainings(checkpoint_states: Sequence[tuple[int, float, StateDoc]], top: StateDoc | None) -> list[Training]:
    """The trainings whose checkpoints are in the dir, oldest first; one (or none) in the usual case.

    ``checkpoint_states`` are (N, mtime, trainer_state.json) of every readable checkpoint-N. Checkpoints of one
    training share its key and its history: one whose history has other losses at the same steps was written by
    another training with the same settings (a rerun that overwrote the lower checkpoint-N). The top-level state
    belongs to the last training of its key (it is written when a training ends).
    """
    groups: list[tuple[tuple[int | None, ...], list[tuple[int, float, StateDoc]], dict[int, float]]] = []
    for step, mtime, state in sorted(checkpoint_states, key=lambda t: t[0]):
        key = training_key(state)
        if key is None:
            continue
        losses = _losses(state)
        home = next((g for g in reversed(groups) if g[0] == key and _agree(g[2], losses)[1]), None)
        if home is None:
            groups.append((key, [(step, mtime, state)], losses))
        else:
            home[1].append((step, mtime, state))
            home[2].update(losses)
    top_key = training_key(top)
    top_home = None
    if top is not None and top_key is not None:  # written when the last training ended: the last one of its key
        top_home = next((i for i in reversed(range(len(groups))) if groups[i][0] == top_key), None)
    out = []
    for i, (key, members, _losses_seen) in enumerate(groups):
        newest = members[-1][2]
        if i == top_home and top is not None and (as_int(top.fields.get("global_step")) or -1) >= (
                as_int(newest.fields.get("global_step")) or -1):
            newest = top
        out.append((i == top_home, Training(key, tuple(s for s, _m, _st in members), newest,
                                            min(m for _s, m, _st in members))))
    if top is not None and top_key is not None and top_home is None:
        out.append((True, Training(top_key, (), top, float("inf"))))
    # The top level's training ends last; the others by when their first checkpoint was written, unless the times
    # say nothing: files copied or checked out (git, rsync without -t) are all stamped within a second or two, and
    # then the trainings go by their checkpoints' steps.
    stamps = [t.first_mtime_s for _last, t in out if math.isfinite(t.first_mtime_s)]
    timed = len(stamps) > 1 and max(stamps) - min(stamps) >= MTIME_ORDER_S
    ordered = [t for _last, t in sorted(out, key=lambda x: (x[0], x[1].first_mtime_s if timed else 0.0,
                                                             x[1].checkpoint_steps))]
    if not timed:
        ordered = _after_overwrites(ordered, {id(t) for last, t in out if last})
    merged: list[Training] = []
    for training in ordered:  # a resume with other settings is the same training going on
        if merged and continues(training.newest, merged[-1].newest):
            last = merged[-1]
            merged[-1] = Training(training.key, tuple(sorted(last.checkpoint_steps + training.checkpoint_steps)),
                                  training.newest, last.first_mtime_s)
        else:
            merged.append(training)
    return merged


def _save_every(t: Training) -> int | None:
    """The training's save interval: its state's ``save_steps``, else the gap its checkpoint-N folders keep."""
    every = as_int(t.newest.fields.get("save_steps"))
    if every is not None and every > 0:
        return every
    steps = t.checkpoint_steps
    gaps = {b - a for a, b in zip(steps, steps[1:])}
    return steps[0] if len(gaps) == 1 and steps[0] in gaps else None


def overwrote(later: Training, earlier: Training) -> int | None:
    """A checkpoint-N of ``later`` that ``earlier`` saved too (it trained past N and saves every k steps, k | N):
    the folder holds ``later``'s state, so ``later`` wrote it after ``earlier`` did. None when no folder says so."""
    every, reached = _save_every(earlier), as_int(earlier.newest.fields.get("global_step"))
    if every is None or reached is None:
        return None
    return next((n for n in later.checkpoint_steps if 0 < n <= reached and n % every == 0), None)


def _after_overwrites(ordered: list[Training], last: set[int]) -> list[Training]:
    """Trainings ordered so that one whose checkpoint-N holds its state where another, which also saved at N, went on
    past N, comes after that other (the files' only clock when checkouts and copies stamp every file at once)."""
    out = list(ordered)
    for _ in range(len(out) * len(out)):
        swap = next(((i, j) for i in range(len(out)) for j in range(i + 1, len(out))
                     if id(out[i]) not in last and overwrote(out[i], out[j]) is not None
                     and overwrote(out[j], out[i]) is None), None)
        if swap is None:
            break
        i, j = swap
        out.insert(j, out.pop(i))  # i goes right after j
    return out


def _values(t: Training) -> str:
    return ", ".join(f"{name} {value}" for name, value in zip(TRAINING_KEYS, t.key) if value is not None)


def _describe(t: Training) -> str:
    values = _values(t)
    folders = ", ".join(f"checkpoint-{s}" for s in t.checkpoint_steps[:4]) + (" ..." if len(t.checkpoint_steps) > 4
                                                                              else "")
    return f"{folders or t.newest.rel_path} ({values})"


def trainings_finding(found: list[Training], rel_dir: str) -> Finding | None:
    """``hf.new-training``: the dir holds checkpoints of more than one training (it was used again)."""
    if len(found) < 2:
        return None
    paths = tuple(f"{rel_dir}/checkpoint-{s}".removeprefix("./") for t in found for s in t.checkpoint_steps)
    order = ""
    for earlier, later in zip(found, found[1:]):
        n = overwrote(later, earlier)
        if n is not None:
            order += (f" checkpoint-{n} holds the state of the training with {_values(later)}, though the one with "
                      f"{_values(earlier)}, saving every {_save_every(earlier)} steps, went on to step "
                      f"{as_int(earlier.newest.fields.get('global_step'))}: it saved there first, and the other "
                      "wrote over it later.")
    stamps = [t.first_mtime_s for t in found if math.isfinite(t.first_mtime_s)]
    timed = len(stamps) > 1 and max(stamps) - min(stamps) >= MTIME_ORDER_S
    # The order is the files' when their times differ, a training wrote over another's checkpoint, or the later one
    # wrote the top-level trainer_state.json (at its end); else it is the folders' steps.
    known = all(timed or overwrote(later, earlier) is not None or "/" not in later.newest.rel_path.strip("./")
                for earlier, later in zip(found, found[1:]))
    if not known:
        order += (" Every file here has one time stamp (a checkout or a copy) and nothing else dates these trainings, "
                  "so their order is not recorded: they are listed, and numbered as attempts, by their checkpoints' "
                  "steps.")
    return Finding(
        "hf.new-training", Severity.WARNING,
        f"{len(found)} trainings wrote into this output dir" + (": " + "; then ".join(_describe(t) for t in found)
                                                                 if known else " (their order is not recorded): "
                                                                 + "; ".join(_describe(t) for t in found)),
        paths or tuple(t.newest.rel_path for t in found), None,
        "A Trainer keeps max_steps and train_batch_size from its first save to its last, and every checkpoint of one "
        "training holds the same log_history up to its step (a resume restores it); checkpoints that disagree on "
        "these come from different trainings: the dir was used again without overwrite." + order + " Each later training "
        "started from scratch (origin `restart`); `resume_from_checkpoint=True` picks the highest checkpoint-N "
        "whichever training wrote it. Use a new output_dir per training.")


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


def trainings_by_end(count: int, ended: Sequence[int | None], newest_key: tuple[int | None, ...] | None,
                     found: Sequence[Training]) -> list[int | None]:
    """Each of ``count`` attempts' training when the starts do not add up (``attempt_trainings`` says None): the TB
    folder of attempt i (``ended[i]``: the step of its end-of-train summary) whose summary is at a training's
    ``max_steps`` belongs to it; an attempt past the TB folders (from the newest state) to the newest state's
    training; any other to a training of its own, one whose checkpoints are not here (it owns none of theirs)."""
    ends = {training.key[0]: t for t, training in enumerate(found) if training.key and training.key[0] is not None}
    out: list[int | None] = []
    for i in range(count):
        end = ended[i] if i < len(ended) else None
        if i >= len(ended):
            out.append(next((t for t, training in enumerate(found) if training.key == newest_key), None))
        elif end is not None and end in ends:
            out.append(ends[end])
        else:
            out.append(len(found) + i)
    return out


def other_histories_note(found: Sequence[Training], drawn: StateDoc) -> str | None:
    """What of the output dir's trainings is not drawn: the curves are one training's history (the reader's primary
    state: the last training in ``trainings``' order)."""
    others = [t.newest for t in found if t.newest is not drawn and t.newest.rel_path != drawn.rel_path]
    if not others:
        return None

    def span(state: StateDoc) -> str:
        steps = sorted(s for row in state.history if (s := as_int(row.get("step"))) is not None)
        return f", steps {steps[0]}-{steps[-1]}" if steps else ""

    named = "; ".join(f"{st.rel_path}{span(st)}" for st in others[:4]) + (" ..." if len(others) > 4 else "")
    return (f"{len(found)} trainings wrote into this output dir: the curves are the log_history of one, "
            f"{drawn.rel_path} (the last in hf.new-training's order); the other "
            f"{'one' if len(others) == 1 else len(others)}'s ({named}) {'is' if len(others) == 1 else 'are'} not drawn.")

