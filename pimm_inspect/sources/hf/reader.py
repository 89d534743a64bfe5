"""Reader for Hugging Face Trainer output directories (trainer_state.json, checkpoint-N/, runs/)."""

from __future__ import annotations

import errno
import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ...model import CheckpointInfo, ConfigDoc, Finding, Origin, ScalarSeries, SourceFile
from .._common import file_finding, rel
from .configs import Seen, attempt_training_args, read_hf_configs
from .notes import schedule_notes
from .checkpoints import (CHECKPOINT_RE, HfCheckpoint, is_weight_file, list_files, listing, read_checkpoint_dir,
                          weights_meta)
from .state import (STATE_NAME, StateDoc, as_float, as_int, hf_tag, history_conflicts, history_segments,
                       history_series, read_state)
from .trainings import (Training, attempt_trainings, checkpoint_owners, training_key, trainings, trainings_by_end,
                        trainings_finding, other_histories_note)

__all__ = ["HfAttempt", "HfCheckpoint", "HfTbDir", "HfTrainerResult", "hf_tag", "is_hf_trainer_dir",
           "read_hf_trainer_dir"]

_EVENT_TIME_RE = re.compile(r"tfevents\.(\d+)(?:\.[^.]*)?(?:\.(\d+))?(?:\.(\d+))?")


END_TAGS = frozenset({"train/train_runtime", "train_runtime"})
"""The tag of the summary ``Trainer.train()`` logs as it returns (``speed_metrics("train", ...)``)."""


@dataclass(frozen=True, slots=True)
class HfTbDir:
    """One TensorBoard folder under runs/ (HF opens one per process start)."""

    path: str
    event_files: tuple[str, ...]
    first_step: int | None = None
    last_step: int | None = None
    """Step range of its scalars; None when the event files were not read."""
    ended_at: int | None = None
    """The step of the summary ``Trainer.train()`` logs when it returns (``train_runtime``, written ``train/
    train_runtime`` by the TensorBoard callback): that training ran to its end; None when the folder has none."""


@dataclass(frozen=True, slots=True)
class HfAttempt:
    """One process start (one ``trainer.train()``), from a TB folder or a log_history segment."""

    index: int
    """1-based, in start order."""
    tb_dir: str | None
    first_step: int | None
    last_step: int | None
    resumed_from_checkpoint: int | None = None
    """N of the checkpoint-N the attempt resumed from, when inferable; None for a fresh start or unknown."""
    origin: Origin = "fresh"
    """fresh (the first), resume (from ``resumed_from_checkpoint``) or restart (a later one that restored nothing)."""
    saved_steps: tuple[int, ...] = ()
    """Steps of the complete checkpoint-N folders this attempt saved (``trainings.checkpoint_owners``)."""
    completed: bool = False
    """True when its training's state reached its max_steps and this is that training's last attempt."""
    state_path: str | None = None
    """Without a TB folder: the trainer_state.json whose log_history segment gave the span (its evidence)."""


@dataclass(frozen=True, slots=True, eq=False)
class HfTrainerResult:
    """Everything read from one HF Trainer output directory."""

    state_path: str | None
    """The trainer_state.json the series and fields come from (top level, else the newest checkpoint)."""
    series: tuple[ScalarSeries, ...]
    summary: Mapping[str, float]
    """The final train_* summary row (train_runtime, train_loss, total_flos, step, ...); empty if none."""
    best_metric: float | None
    best_metric_name: str | None
    """The metric ``best_metric`` is of: ``metric_for_best_model`` from trainer_state.json, else training_args.bin,
    with the ``eval_`` prefix the Trainer adds when comparing (``accuracy`` is ``eval_accuracy``); None when unset."""
    best_global_step: int | None
    best_model_checkpoint: str | None
    """Run-relative path of the best checkpoint as recorded (made relative), or None."""
    logging_steps: int | None
    eval_steps: int | None
    save_steps: int | None
    global_step: int | None
    max_steps: int | None
    num_train_epochs: float | None
    train_batch_size: int | None
    checkpoints: tuple[HfCheckpoint, ...]
    final_model: CheckpointInfo | None
    """The weights saved at the top level by ``trainer.save_model()``, if any."""
    tb_dirs: tuple[HfTbDir, ...]
    tb_series: tuple[ScalarSeries, ...]
    """Series read from runs/*/ event files (attempt set to the folder's index); empty without a TB reader."""
    attempts: tuple[HfAttempt, ...]
    history_conflicts: tuple[tuple[int, int], ...]
    """Inclusive step ranges where a checkpoint's log_history holds other values than the newest state's (rows
    another attempt wrote), as read; which steps were replayed is decided once, in ``analysis.replays``."""
    inferred_intervals: Mapping[str, int | None]
    """logging/eval/save intervals measured from the data (None when too few points)."""
    schedule_notes: tuple[str, ...]
    findings: tuple[Finding, ...]
    sources: tuple[SourceFile, ...]
    configs: tuple[ConfigDoc, ...] = ()
    """config.json (``model_config``) and training_args.bin (``hf_training_args``), top level else newest checkpoint."""


def is_hf_trainer_dir(path: Path) -> bool:
    """True when trainer_state.json sits at the top level or in any checkpoint-N/."""
    try:
        if (path / STATE_NAME).is_file():
            return True
        return any(CHECKPOINT_RE.match(c.name) and (c / STATE_NAME).is_file() for c in path.iterdir())
    except OSError:
        return False


def _event_order(name: str) -> tuple[int, int, int]:
    """Sort key from an event file name: creation second, then pid/counter (torch adds both)."""
    match = _EVENT_TIME_RE.search(name)
    if not match:
        return (1 << 62, 0, 0)
    return tuple(int(g) if g else 0 for g in match.groups())  # type: ignore[return-value]


def _default_tb_reader() -> Callable[[Path, str], Any] | None:
    """The shared event-file reader, or None while it does not exist yet."""
    try:
        from ..tensorboard.reader import read_event_file  # lazy: protobuf decoding only when runs/ exists
    except ImportError:
        return None
    return read_event_file


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """``Path.is_dir()`` of the entry: links followed, False where the path leads nowhere, other errors raised."""
    try:
        return entry.is_dir()
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise


def _below(folder: Path, run_root: Path) -> str | None:
    """``rel(folder, run_root)`` when ``folder`` is below the run (its files' paths then extend it), else None."""
    try:
        inside = folder.relative_to(run_root).as_posix()
    except ValueError:
        return None
    return inside if inside != "." else None


def _tb_dirs(run_dir: Path, run_root: Path, tb_reader: Callable[[Path, str], Any] | None
             ) -> tuple[list[HfTbDir], list[ScalarSeries], list[Finding], list[SourceFile]]:
    """List runs/*/ folders in start order and read their event files when a reader is available."""
    folders = []
    try:
        with os.scandir(run_dir / "runs") as entries:
            folders = [run_dir / "runs" / entry.name for entry in entries if _is_dir(entry)]
    except OSError:
        pass
    listed = []
    for folder in folders:
        files = listing(folder)
        events = sorted((n for n in files.names if "tfevents" in n), key=_event_order)
        if events:
            listed.append((min(_event_order(n) for n in events), folder.name, folder, events, files.stats))
    dirs, all_series, findings, sources = [], [], [], []
    for index, (_, _, folder, events, stats) in enumerate(sorted(listed, key=lambda item: item[:2]), start=1):
        first = last = ended = None
        below = _below(folder, run_root)
        names = [f"{below}/{n}" if below is not None else rel(folder / n, run_root) for n in events]
        for name, rel_path in zip(events, names):
            path = folder / name
            try:
                st = stats.get(name) or path.stat()  # a regular file's stat from the listing (links followed)
                sources.append(SourceFile(rel_path, "tb_events", st.st_size, st.st_mtime))
            except OSError:
                pass
            if tb_reader is None:
                continue
            try:
                result = tb_reader(path, rel_path)
            except Exception as exc:  # the reader is another module: never let it take this one down
                findings.append(file_finding("file.unreadable", rel_path, f"{rel_path}: event reader failed ({exc})"))
                continue
            findings += list(getattr(result, "findings", ()))
            found = getattr(result, "series", result if isinstance(result, (list, tuple)) else ())
            for series in found.values() if isinstance(found, Mapping) else found:
                if isinstance(series, ScalarSeries) and len(series):
                    all_series.append(replace(series, attempt=index))
                    if series.tag in END_TAGS:
                        ended = series.last_step
                    series_first, series_last = series.first_step, series.last_step
                    if series_first is not None and series_last is not None:  # always, as the series is not empty
                        first = series_first if first is None else min(first, series_first)
                        last = series_last if last is None else max(last, series_last)
        dirs.append(HfTbDir(rel(folder, run_root), tuple(names), first, last, ended))
    return dirs, all_series, findings, sources


def _mode_gap(steps: list[int]) -> int | None:
    """The most common positive difference between sorted unique steps (ties: the smallest)."""
    unique = sorted(set(steps))
    gaps = Counter(b - a for a, b in zip(unique, unique[1:]) if b > a)
    if not gaps:
        return None
    best = max(gaps.values())
    return min(g for g, n in gaps.items() if n == best)


def _resume_point(first_step: int | None, log_every: int | None, save_every: int | None,
                  checkpoint_steps: list[int]) -> int | None:
    """The checkpoint an attempt whose first logged step is ``first_step`` most likely resumed from."""
    if first_step is None or not log_every or first_step <= log_every:
        return None  # a fresh start logs first at step 1 or logging_steps
    lowest = first_step - log_every
    on_disk = [n for n in checkpoint_steps if lowest <= n < first_step]
    if on_disk:
        return max(on_disk)
    if save_every:
        # The checkpoint may since have been rotated away (save_total_limit): use the save grid.
        grid = (first_step - 1) // save_every * save_every
        return grid if grid >= lowest and grid > 0 else None
    return None


def _merge(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Merge overlapping or touching inclusive ranges."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _reached_max_steps(state: StateDoc | None) -> bool:
    """True when a state's global_step reached its max_steps (that training ran to its end)."""
    fields = state.fields if state is not None else {}
    step, limit = as_int(fields.get("global_step")), as_int(fields.get("max_steps"))
    return step is not None and limit is not None and step >= limit


def _spans(tb_dirs: list[HfTbDir], primary: StateDoc | None, found: list[Training]
           ) -> list[tuple[str | None, int | None, int | None, int | None]]:
    """(TB folder or state file, first step, last step, training) of each attempt: one per TB folder, else per
    log_history segment of each training's newest state (training None: not known from the files). With TB folders,
    the newest state's segments that end past every folder's last step are attempts too: a process whose TB folder is
    not here (deleted, or ``report_to`` without tensorboard) trained them, as its checkpoints' states say."""
    if tb_dirs:
        spans: list[tuple[str | None, int | None, int | None, int | None]] = [
            (d.path, d.first_step, d.last_step, None) for d in tb_dirs]
        covered = max((d.last_step for d in tb_dirs if d.last_step is not None), default=None)
        if primary is not None and covered is not None:
            spans += [(primary.rel_path, lo, hi, None) for lo, hi in history_segments(primary) if hi > covered]
        return spans
    if len(found) < 2:
        return [(primary.rel_path if primary else None, lo, hi, None) for lo, hi in history_segments(primary)]
    key = training_key(primary)
    states = [primary if training.key == key and primary is not None else training.newest for training in found]
    # A training that saved before its first log row (a smoke test) is an attempt that logged nothing.
    nothing: list[tuple[int | None, int | None]] = [(None, None)]
    return [(state.rel_path, lo, hi, t) for t, state in enumerate(states)
            for lo, hi in (list(history_segments(state)) or nothing)]


def _attempts(tb_dirs: list[HfTbDir], primary: StateDoc | None, found: list[Training], log_every: int | None,
              save_every: int | None, checkpoints: list[HfCheckpoint]) -> list[HfAttempt]:
    """One attempt per TB folder (else per log_history segment) and what each saved."""
    checkpoint_steps = [c.dir_step for c in checkpoints if c.info.role == "checkpoint"]
    spans = _spans(tb_dirs, primary, found)
    resumed = [_resume_point(lo, log_every, save_every, checkpoint_steps) for _p, lo, _hi, _t in spans]
    of_training = ([t for *_rest, t in spans] if not tb_dirs or len(found) < 2
                   else attempt_trainings(resumed, len(found)))
    if tb_dirs and len(found) > 1 and all(t is None for t in of_training):
        of_training = trainings_by_end(len(spans), [d.ended_at for d in tb_dirs], training_key(primary), found)
    training_of_step = {s: t for t, training in enumerate(found) for s in training.checkpoint_steps} if len(found) > 1 else {}
    owners = checkpoint_owners([(r, hi, t) for r, (_p, _lo, hi, _t), t in zip(resumed, spans, of_training)],
                               # a checkpoint this user may not read kept its steps as far as anyone can tell; one
                               # whose trainer_state.json (written last) is there was saved, whatever was deleted since
                               sorted({(c.info.global_step, training_of_step.get(c.dir_step)) for c in checkpoints
                                       if (c.info.complete or c.denied or c.save_finished)
                                       and c.info.role == "checkpoint"
                                       and c.info.global_step is not None}))
    finished = {t for t, training in enumerate(found) if _reached_max_steps(training.newest)}
    attempts = []
    for i, ((path, lo, hi, _t), restored, training) in enumerate(zip(spans, resumed, of_training)):
        if training is None:  # one training (or not known which): the last attempt ends it
            done = i == len(spans) - 1 and _reached_max_steps(primary)
        else:
            done = training in finished and all(t != training for t in of_training[i + 1:])
        # Its TB folder holds the summary train() logs when it returns: this attempt's training ran to its end.
        folder = tb_dirs[i] if i < len(tb_dirs) else None
        done = done or (folder is not None and folder.ended_at is not None)
        attempts.append(HfAttempt(i + 1, path if folder is not None else None, lo, hi, restored,
                                  origin="fresh" if i == 0 else "resume" if restored is not None else "restart",
                                  saved_steps=tuple(sorted(s for s, owner in owners.items() if owner == i)),
                                  completed=done, state_path=None if folder is not None else path))
    return attempts


def best_metric_name(state_fields: Mapping[str, Any], training_args: Mapping[str, Any]) -> str | None:
    """``metric_for_best_model`` (trainer_state.json, else training_args.bin) as the Trainer compares it: with the
    ``eval_`` prefix it adds to a name without one; None when neither file sets it."""
    for doc in (state_fields, training_args):
        name = doc.get("metric_for_best_model")
        if isinstance(name, str) and name.strip():
            name = name.strip()[:200]
            return name if name.startswith("eval_") else f"eval_{name}"
    return None


def _relative_checkpoint(recorded: Any, run_dir: Path, run_root: Path) -> str | None:
    """best_model_checkpoint as a run-relative path (HF stores it relative to the training cwd, or absolute)."""
    if not isinstance(recorded, str) or not recorded:
        return None
    name = recorded.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return rel(run_dir / name, run_root)


def read_hf_trainer_dir(run_dir: Path, run_root: Path,
                        tb_reader: Callable[[Path, str], Any] | None | bool = True) -> HfTrainerResult:
    """Read an HF Trainer output directory; damage becomes findings, never exceptions.

    ``tb_reader`` is ``True`` for the shared event reader when present, ``None``/``False`` to skip
    TensorBoard, or a callable ``(path, rel_path)`` returning an object with ``series``/``findings``.
    """
    findings: list[Finding] = []
    sources: list[SourceFile] = []
    top: StateDoc | None
    more: list[Finding]
    top, more = (None, [])
    if (run_dir / STATE_NAME).exists():
        top, more = read_state(run_dir / STATE_NAME, rel(run_dir / STATE_NAME, run_root))
    findings += more
    checkpoints: list[HfCheckpoint] = []
    states: list[StateDoc] = []
    found = []
    try:
        found = [(int(m.group(2)), bool(m.group(1)), d) for d in run_dir.iterdir()
                 if d.is_dir() and (m := CHECKPOINT_RE.match(d.name))]
    except OSError as exc:
        findings.append(file_finding("file.unreadable", rel(run_dir, run_root), f"cannot list {run_dir.name} ({exc})"))
    checkpoint_states: list[tuple[int, float, StateDoc]] = []
    for step, tmp, folder in sorted(found, key=lambda t: (t[0], t[1])):
        checkpoint, state, more = read_checkpoint_dir(folder, step, tmp, run_root)
        checkpoints.append(checkpoint)
        findings += more
        if state is not None and not tmp:
            states.append(state)
            checkpoint_states.append((step, checkpoint.info.mtime_s, state))
    found_trainings = trainings(checkpoint_states, top)
    new_training = trainings_finding(found_trainings, rel(run_dir, run_root))
    findings += [new_training] if new_training else []
    for path in [run_dir / STATE_NAME] + [run_dir / c.info.path.rsplit("/", 1)[-1] / STATE_NAME for c in checkpoints]:
        try:
            st = path.stat()
            sources.append(SourceFile(rel(path, run_root), "hf_trainer", st.st_size, st.st_mtime, st.st_size))
        except OSError:
            pass
    # The newest history wins: normally the top level, unless a later attempt died before writing it.
    candidates = ([top] if top else []) + states[::-1]
    primary = max(candidates, key=lambda s: (as_int(s.fields.get("global_step")) or -1, not s.damaged), default=None)
    if len(found_trainings) > 1:  # the newest training's history, whatever the older one reached
        primary = found_trainings[-1].newest
    series, summary = history_series(primary) if primary else ([], {})
    fields = primary.fields if primary else {}
    declared = {k: as_int(fields.get(k)) for k in ("logging_steps", "eval_steps", "save_steps", "global_step")}
    seen_args: Seen = {}  # training_args.bin read in this run (copies are not unpickled or converted again)
    configs, more = read_hf_configs(run_dir, run_root, [folder for _step, tmp, folder in sorted(found, key=lambda t: t[0])
                                                        if not tmp], seen_args)
    findings += more
    training_args = next((c.data for c in configs if c.kind == "hf_training_args"), None) or {}
    declared_in: dict[str, str | None] = {}
    for key in ("logging_steps", "eval_steps", "save_steps"):
        # Older transformers did not write these into trainer_state.json; training_args.bin has them.
        declared_in[key] = primary.rel_path if primary and declared[key] is not None else None
        if declared[key] is None and as_int(training_args.get(key)) is not None:
            declared[key] = as_int(training_args.get(key))
            declared_in[key] = next(c.path for c in configs if c.kind == "hf_training_args")
    train_steps = [int(s) for t in ("train/loss",) for x in series if x.tag == t for s in x.steps]
    eval_steps = [int(s) for x in series if x.tag.startswith("eval/") for s in x.steps]
    checkpoint_steps = [c.dir_step for c in checkpoints if c.info.role == "checkpoint"]
    # The save grid of the newest training (another training's checkpoints lie on its own grid).
    grid = list(found_trainings[-1].checkpoint_steps) if len(found_trainings) > 1 else checkpoint_steps
    intervals = {"logging": _mode_gap(train_steps), "eval": _mode_gap(eval_steps), "save": _mode_gap(grid)}
    if tb_reader is True:
        tb_reader = _default_tb_reader()
    dirs, tb_series, more, tb_sources = _tb_dirs(run_dir, run_root, tb_reader or None)
    findings += more
    sources += tb_sources
    log_every = declared["logging_steps"] or intervals["logging"]
    save_every = declared["save_steps"] or intervals["save"]
    attempts = _attempts(dirs, primary, found_trainings, log_every, save_every, checkpoints)
    conflicts = _merge(history_conflicts(primary, [s for s in ([top] if top else []) + states if s is not primary
                                                   and training_key(s) in (None, training_key(primary))])
                       if primary else [])
    configs, more = attempt_training_args(run_dir, run_root, attempts, checkpoint_steps, configs, seen_args)
    findings += more
    notes = schedule_notes(primary, series, summary, intervals, declared, checkpoint_steps, attempts, tb_series,
                           declared_in) + [n for n in [other_histories_note(found_trainings, primary) if primary and
                                                        len(found_trainings) > 1 else None] if n]
    final_model = None
    top_names = list_files(run_dir)[0]
    top_weights = [n for n in top_names if is_weight_file(n)]
    if top_weights:
        count, total, _, more = weights_meta(run_dir, top_weights, run_root)
        findings += more
        sizes = {}
        for name in top_weights:
            try:
                sizes[name] = (run_dir / name).lstat()
            except OSError:  # vanished since the listing
                pass
        final_model = CheckpointInfo(path=rel(run_dir / top_weights[0], run_root), format="hf", role="other",
                                     complete=not more,
                                     global_step=as_int(top.fields.get("global_step")) if top else None,
                                     tensor_count=count, tensor_bytes=total,
                                     size_bytes=sum(st.st_size for st in sizes.values()),
                                     mtime_s=max((st.st_mtime for st in sizes.values()), default=0.0))
    if checkpoints:
        last = max((c for c in checkpoints if c.info.role == "checkpoint"), key=lambda c: c.dir_step, default=None)
        if last is not None:
            # HF's get_last_checkpoint picks the highest N whether or not the folder is complete.
            checkpoints = [replace(c, info=replace(c.info, resume_candidate=True)) if c is last else c
                           for c in checkpoints]
    epochs = as_float(fields.get("num_train_epochs"))
    best_name = best_metric_name(fields, training_args)
    if best_name is not None:  # every checkpoint's best_metric is of the one metric the Trainer compares
        checkpoints = [replace(c, info=replace(c.info, best_metric_name=best_name))
                       if c.info.best_metric_value is not None else c for c in checkpoints]
    return HfTrainerResult(
        state_path=primary.rel_path if primary else None, series=tuple(series), summary=summary,
        best_metric=as_float(fields.get("best_metric")), best_metric_name=best_name, best_global_step=as_int(fields.get("best_global_step")),
        best_model_checkpoint=_relative_checkpoint(fields.get("best_model_checkpoint"), run_dir, run_root),
        logging_steps=declared["logging_steps"], eval_steps=declared["eval_steps"],
        save_steps=declared["save_steps"], global_step=declared["global_step"],
        max_steps=as_int(fields.get("max_steps")),
        num_train_epochs=epochs, train_batch_size=as_int(fields.get("train_batch_size")),
        checkpoints=tuple(checkpoints), final_model=final_model, tb_dirs=tuple(dirs), tb_series=tuple(tb_series),
        attempts=tuple(attempts), history_conflicts=conflicts, inferred_intervals=intervals, schedule_notes=tuple(notes),
        findings=tuple(findings), sources=tuple(sources),
        configs=tuple(configs))
