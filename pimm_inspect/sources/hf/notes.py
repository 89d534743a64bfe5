"""Plain-words notes on an HF Trainer run's schedules (logging, eval, save), from the state and TensorBoard."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from ...model import ScalarSeries
from .state import StateDoc, as_int

if TYPE_CHECKING:
    from .reader import HfAttempt


def _plural(n: int, word: str) -> str:
    """'1 point' / '3 points'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def _said(declared: Mapping[str, int | None], declared_in: Mapping[str, str | None], key: str) -> str:
    """``logging_steps=5``, with the file when it is not the state, or that it is not recorded."""
    value = declared.get(key)
    if value is None:
        return f"{key} not recorded (an older trainer_state.json and no training_args.bin)"
    where = declared_in.get(key)
    return f"{key}={value}" + (f" in {where}" if where and where.endswith("training_args.bin") else "")


def schedule_notes(state: StateDoc | None, series: list[ScalarSeries], summary: Mapping[str, float],
                    intervals: Mapping[str, int | None], declared: Mapping[str, int | None],
                    checkpoint_steps: list[int], attempts: list[HfAttempt],
                    tb_series: list[ScalarSeries] | tuple[ScalarSeries, ...] = (),
                    declared_in: Mapping[str, str | None] | None = None) -> list[str]:
    """Plain-words explanations of why points appear only every N steps (facts from the state and TensorBoard)."""
    notes: list[str] = []
    declared_in = declared_in or {}
    total = declared.get("global_step")
    by_tag = {s.tag: s for s in series}
    loss = by_tag.get("train/loss")
    if loss is not None and len(loss):
        every, said = intervals.get("logging"), declared.get("logging_steps")
        said_text = _said(declared, declared_in, "logging_steps")
        span = f"{total} steps" if total is not None else f"steps {loss.first_step}-{loss.last_step}"
        if every is None:
            notes.append(f"loss was logged once (step {loss.first_step}); {said_text}.")
        elif said is None or every == said:
            notes.append(f"loss is logged every {every} steps ({said_text}), so {span} give "
                         f"{_plural(len(loss), 'point')}; learning_rate, grad_norm and epoch share these steps.")
        else:
            notes.append(f"loss points are {every} steps apart although {said_text}: logging_strategy "
                         f"may be 'epoch', or an attempt used another logging_steps.")
    evals = sorted(t for t in by_tag if t.startswith("eval/"))
    if evals:
        n_eval = len(by_tag[evals[0]])
        every, said = intervals.get("eval"), declared.get("eval_steps")
        how = f"every {every} steps" if every else "once"
        extra = "" if every is None or said is None or every == said else \
            f"; eval_steps={said} differs, so eval_strategy may be 'epoch'"
        notes.append(f"eval metrics ({', '.join(evals[:3])}{', ...' if len(evals) > 3 else ''}) are computed {how} "
                     f"({_said(declared, declared_in, 'eval_steps')}), giving {_plural(n_eval, 'point')}{extra}; "
                     f"they are independent of logging_steps.")
    elif state is not None:
        tb_evals = sorted({s.tag for s in tb_series if s.tag.startswith("eval/") and len(s)})
        if tb_evals:
            steps = sorted({int(x) for s in tb_series if s.tag in tb_evals for x in s.steps})
            where = sorted({s.source.rsplit("/", 1)[0] for s in tb_series if s.tag in tb_evals})
            notes.append(f"eval metrics ({', '.join(tb_evals[:3])}{', ...' if len(tb_evals) > 3 else ''}) at step(s) "
                         f"{', '.join(map(str, steps[:6]))}{', ...' if len(steps) > 6 else ''} are only in TensorBoard "
                         f"({', '.join(where)}): {state.rel_path} was written before them (a later checkpoint or the "
                         f"final save never happened).")
        else:
            notes.append("no eval_* metrics were logged: eval_strategy was 'no' or training stopped before the first "
                         "evaluation.")
    if checkpoint_steps:
        every, said = intervals.get("save"), declared.get("save_steps")
        names = ", ".join(f"checkpoint-{n}" for n in checkpoint_steps)
        text = f"checkpoints on disk: {names}"
        if every:
            text += f"; they are {every} steps apart ({_said(declared, declared_in, 'save_steps')})"
            if said and every > said and every % said == 0:
                text += ", so older ones were probably rotated away by save_total_limit"
        notes.append(text + ".")
    if summary:
        notes.append(f"the last log row (train_runtime, train_loss, ...) is an end-of-training summary logged at step "
                     f"{as_int(summary.get('step'))}, not a curve point.")
    notes.append("steps are optimizer updates (global_step), not batches: with gradient_accumulation_steps=k one "
                 "step covers k batches per device; epoch is fractional progress through the data.")
    if len(attempts) > 1:
        resumed = [a for a in attempts if a.resumed_from_checkpoint is not None]
        how = "; ".join([f"attempt {a.index} resumed from checkpoint-{a.resumed_from_checkpoint}" for a in resumed]
                        + [f"attempt {a.index} started from scratch" for a in attempts if a.origin == "restart"])
        # Which steps were trained again is decided once, in analysis (Run.replayed); the report says it.
        notes.append(f"{len(attempts)} process starts ({how or 'resume points unknown'}).")
    return [n.strip() for n in notes]
