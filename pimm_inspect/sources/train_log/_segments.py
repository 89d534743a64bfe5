"""Per-attempt state of the train.log reader: what each interesting record means (spec 3.4)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from ...model import ScalarSeries, make_series
from . import _patterns as P
from ...arrays import release_freed_memory
from ._chunks import SeriesChunks
from ._growable import join_tags
from ._types import LogSegment, ValTableRow

if TYPE_CHECKING:
    from .reader import _Reader

_COMPLETED_MARKS = ("Saving final checkpoint", "Wrote eval artifacts", "Training already complete",
                    "Skipping final evaluation", "Test result:")


class SegmentState(SeriesChunks):
    """Mutable facts about one attempt while its records are read."""

    def __init__(self, index: int, start_line: int, start_offset: int, header: bool, ts: str | None) -> None:
        super().__init__()
        self.index, self.start_line, self.start_offset = index, start_line, start_offset
        self.end_line, self.end_offset = start_line - 1, start_offset
        self.has_header = header
        self.started_at: str | None = ts
        self.ended_at: str | None = ts
        self.save_path: str | None = None
        self.first_step: int | None = None
        self.last_step: int | None = None
        self.train_lines = 0
        self.max_epoch: int | None = None
        self.ipe: int | None = None
        self.iterable_ipe: int | None = None
        self.last_g: int | None = None
        self.last_epoch: int | None = None
        self.last_ipe: int | None = None
        self.is_resume = False
        self.resume: dict[str, tuple[int, ...]] = {}
        self.weight_path: str | None = None
        self.ended: str | None = None
        self.end_detail: str | None = None
        self.saved: list[int] = []
        self.save_pending = False
        self.writer: str | None = None
        self.world_size: int | None = None
        self.parallel: str | None = None
        self.num_params: int | None = None
        self.warnings = 0
        self.template: P.Template | None = None
        self.template_tail: bytes | None = None
        """The Train: tail ``template`` was built from (an extension rebuilds the template from it)."""
        self.template_tries = 0
        self.pending: list[tuple[bytes, ...]] = []
        self.pending_places: list[tuple[np.ndarray, np.ndarray]] = []
        """(line numbers, file offsets) of the ``pending`` rows, one pair per range (their line index rows)."""

    def note_train(self, first: int, last: int, count: int, max_epoch: int, ipe: int) -> None:
        """Record a run of Train: lines (in file order)."""
        if self.first_step is None:
            self.first_step = first
        self.last_step, self.max_epoch, self.ipe = last, max_epoch, ipe
        self.train_lines += count

    def set_last(self, epoch: int, it: int, ipe: int) -> None:
        """The latest Train: line seen: events and evaluations get its global step."""
        self.last_epoch, self.last_ipe = epoch, ipe
        self.last_g = (epoch - 1) * ipe + it

    def mark_end(self, how: str, detail: str | None = None) -> None:
        """The latest end marker wins (a crash after the final save is still a crash)."""
        self.ended, self.end_detail = how, detail

    def eval_step(self) -> int | None:
        """Step of an evaluation: the last Train: step, else the restored step."""
        if self.last_g is not None:
            return self.last_g
        for key in ("trainer", "structured"):
            if key in self.resume:
                return self.resume[key][-1]
        return None

    # -- records ----------------------------------------------------------
    def interpret(self, text: str, raw: bytes, ts: str, line_no: int, reader: _Reader) -> str | None:
        """Apply one record's first line to the segment; returns its event kind or None."""
        if "world_size" in text:
            m = P.WORLD_SIZE.search(text)
            if m:
                self.world_size = int(m.group(2) or m.group(3))
        if text.startswith("Train result: "):
            reader.table = None
            if self.last_epoch is not None and self.last_ipe is not None:  # set together
                for key, value in P.parse_tail(raw[len("Train result: "):]):
                    self.add_point("train/" + key.decode("utf-8", "replace"), self.last_epoch * self.last_ipe,
                                   P.to_float(value), ts)
            return None
        if text.startswith("|") or text.startswith("Class_"):
            self._table_row(text, reader)
            return None
        if text.startswith(("Val result: ", "Test result: ")):
            return self._result(text, ts, line_no, reader)
        if text.startswith("Val Result: "):
            m = P.MAE_RESULT.match(text)
            if m:
                for tag, number in zip(("loss", "coord_loss", "feat_loss", "mask_ratio"), m.groups()):
                    self.add_point("val/" + tag, self.eval_step(), P.to_float(number), ts)
            return "eval"
        if text.startswith("["):
            m = P.DETECTION.match(text)
            if m:
                for tag, number in zip(("precision", "recall", "f1", "iou"), m.groups()[1:]):
                    self.add_point(f"val/{m.group(1)}/ins_det_{tag}", self.eval_step(), P.to_float(number), ts)
            return None
        if text.startswith((">", "<")):
            reader.table = None
            if "Start Final Evaluation" in text:
                self.mark_end("completed")
                return "final"
            return None
        return self._lifecycle(text, reader)

    def _lifecycle(self, text: str, reader: _Reader) -> str | None:
        """Startup, weight loading, resume, saving and end-of-training records."""
        if text.startswith("=> Loading config"):
            return "start"
        if text.startswith("Save path: "):
            self.save_path = text[len("Save path: "):].strip()
        elif text.startswith("Num params: "):
            m = P.NUM_PARAMS.match(text)
            if m and m.group(1).replace(",", ""):
                self.num_params = int(m.group(1).replace(",", ""))
        elif text.startswith("Parallel strategy: "):
            m = P.PARALLEL.match(text)
            if m:  # always: the pattern matches any text with this prefix
                self.parallel = m.group(1).strip()
        elif text.startswith("Iterable train loader: "):
            m = P.ITERABLE_IPE.search(text)
            self.iterable_ipe = int(m.group(1)) if m else None
        elif text.startswith("Tensorboard writer"):
            self.writer = "tensorboard"
        elif text.startswith("Weights & Biases writer"):
            self.writer = "wandb"
        elif text.startswith(("Loading weight at: ", "Resolving remote weight: ")):
            if self.weight_path is None or text.startswith("Loading"):
                self.weight_path = text.split(": ", 1)[1].strip()
            return "load"
        elif text.startswith(("Loaded ", "No weight found at: ")):
            return "load"
        elif text.startswith(("Resuming ", "Fast forwarding data iterator", "Starting a fresh W&B run")):
            self._resume_line(text)
            return "resume"
        elif text.startswith("Training already complete"):
            self.is_resume = True
            self.mark_end("completed")
            return "final"
        elif text.startswith("Saving "):
            self._save_line(text)
            return "save"
        elif text.startswith("Best validation "):
            m = P.BEST_UPDATED.match(text)
            if m:
                reader.best.append((m.group(1), P.to_float(m.group(2)), self.last_g))
            return "best"
        elif text.startswith("Currently Best "):
            return "best"
        elif text.startswith(("=> Testing on", "Wrote eval artifacts", "Skipping final evaluation")):
            if text.startswith(_COMPLETED_MARKS):
                self.mark_end("completed")
            return "final"
        elif text.startswith(("Checkpoint has no W&B rewind state", "Skipping dataloader-cursor restore",
                              "Checkpoint is mid-epoch", "Legacy checkpoint is mid-epoch")):
            self.is_resume = True  # these warnings are only printed on resume
        return None

    def _resume_line(self, text: str) -> None:
        """Collect the restored position; converted to a global step when the segment closes."""
        self.is_resume = True
        for key, pattern in (("trainer", P.RESUME_TRAINER), ("structured", P.RESUME_STRUCTURED),
                             ("legacy_saved", P.RESUME_LEGACY_SAVED), ("legacy_index", P.RESUME_LEGACY_INDEX),
                             ("e0_epoch", P.RESUME_E0_EPOCH), ("e0_iter", P.RESUME_E0_ITER)):
            m = pattern.match(text)
            if m:
                self.resume[key] = tuple(int(g) for g in m.groups())
                return

    def _save_line(self, text: str) -> None:
        """Saved global steps: printed by the iteration saver, else the last Train: step."""
        m = P.SAVE_GLOBAL.match(text)
        if m:
            self._saved(int(m.group(1)))
            self.save_pending = True
        elif text.startswith(("Saving final checkpoint", "Saving checkpoint at step ")):
            if text.startswith("Saving final"):
                self.mark_end("completed")
            self._saved(self.last_g)
            self.save_pending = True
        elif text.startswith(("Saving checkpoint to: ", "Saving model weights to: ")):
            if not self.save_pending:
                self._saved(self.last_g)
            self.save_pending = False

    def _saved(self, step: int | None) -> None:
        if step is not None and (not self.saved or self.saved[-1] != step):
            self.saved.append(step)

    def _result(self, text: str, ts: str, line_no: int, reader: _Reader) -> str:
        """``Val result:``/``Test result:`` summary: series (val only) and a new table."""
        final = text.startswith("Test")
        step = self.eval_step()
        metrics: list[tuple[str, float]] = []
        m = P.RESULT.match(text)
        if m:
            names, values = m.group(2).split("/"), m.group(3).split("/")
            if len(names) == len(values):
                for name, value in zip(names, values):
                    metrics.append((name, P.to_float(value)))
                    if not final:
                        self.add_point("val/" + P.RESULT_TAGS.get(name, name), step, P.to_float(value), ts)
        reader.table = {"step": step, "attempt": self.index, "line": line_no, "final": final,
                        "metrics": metrics, "rows": []}
        reader.tables.append(reader.table)
        if final:
            self.mark_end("completed")
            return "final"
        return "eval"

    def _table_row(self, text: str, reader: _Reader) -> None:
        if reader.table is None:
            return
        row = P.table_row(text)
        if row:
            nums = [P.to_float(v) for v in row[3:]]
            reader.table["rows"].append(ValTableRow(int(row[0]), row[1].strip(), bool(row[2]), *nums))
            return
        m = P.CLASSIC_ROW.match(text)
        if m:
            reader.table["rows"].append(ValTableRow(int(m.group(1)), m.group(2), False, P.to_float(m.group(3)),
                                                    P.to_float(m.group(4)), math.nan, math.nan, math.nan))


def _resume_step(seg: SegmentState, ipe: int | None) -> int | None:
    """The restored global step from whichever resume line the era printed."""
    r = seg.resume
    if "trainer" in r:
        return r["trainer"][0]
    if "structured" in r:
        return r["structured"][2]
    if ipe is None:
        return None
    if "legacy_index" in r:
        return r["legacy_index"][0] * ipe + r["legacy_index"][1]
    if "legacy_saved" in r:
        return (r["legacy_saved"][0] - 1) * ipe + r["legacy_saved"][1]
    if "e0_epoch" in r:
        # E0 saves epoch_index+1 and iter_index+1: a mid-epoch save has both, an epoch-end save only the epoch
        if "e0_iter" in r:
            return (r["e0_epoch"][0] - 1) * ipe + r["e0_iter"][0]
        return r["e0_epoch"][0] * ipe
    return None


_TRIM_POINTS = 2_000_000
"""Above this many points a segment's chunks are worth returning to the OS as they are joined."""
def finalize_segment(seg: SegmentState, rel_path: str, prev_ipe: int | None,
                     on_steps: Callable[[list[np.ndarray], np.ndarray], None] | None = None
                     ) -> tuple[LogSegment, list[ScalarSeries]]:
    """Freeze a segment and build its series (one per tag, in order of first appearance); ``on_steps`` is told each
    joined steps column and the chunks it was joined from (``join_tags``)."""
    ipe = seg.ipe or seg.iterable_ipe
    resume_step = _resume_step(seg, ipe or prev_ipe)
    if seg.is_resume:
        origin = "resume"
    elif not seg.has_header:
        origin = "unknown"
    else:
        origin = "warm-start" if seg.weight_path else "fresh"
    series: list[ScalarSeries] = []
    chunks, seg.chunks = seg.sync_chunks(), {}
    seg.clear_spans()
    big = sum(p[1].size for parts in chunks.values() for p in parts) > _TRIM_POINTS
    # one column at a time, its chunks dropped once joined: peak memory stays near the result
    slice_of = seg.arenas.slice_of if seg.arenas is not None else None
    for tag, columns in join_tags(chunks, seg.seeded, on_steps, release_freed_memory if big else None,
                                  slice_of).items():
        series.append(make_series(tag, *columns, rel_path, seg.index))
    for tag, (steps, values, walls) in seg.points.items():
        series.append(make_series(tag, steps, values, walls, rel_path, seg.index))
    frozen = LogSegment(
        index=seg.index, start_line=seg.start_line, end_line=max(seg.end_line, seg.start_line),
        start_offset=seg.start_offset, end_offset=seg.end_offset, has_header=seg.has_header,
        started_at=seg.started_at, ended_at=seg.ended_at, save_path=seg.save_path,
        first_step=seg.first_step, last_step=seg.last_step, train_lines=seg.train_lines,
        resume_step=resume_step, resumed_from=seg.weight_path if seg.is_resume else None,
        weight=None if seg.is_resume else seg.weight_path, is_resume=seg.is_resume, origin=origin,
        max_epoch=seg.max_epoch, iters_per_epoch=ipe, ended=seg.ended, end_detail=seg.end_detail,
        saved_steps=tuple(seg.saved), writer=seg.writer, world_size=seg.world_size, parallel=seg.parallel,
        num_params=seg.num_params, warnings=seg.warnings)
    return frozen, series
