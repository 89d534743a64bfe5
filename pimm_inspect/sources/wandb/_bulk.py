"""Bulk decoding of W&B transaction logs: history rows and summary updates with numpy, the rest record by record.

A 100k-row log holds ~300k records, nearly all history rows and summary updates. Their layout is
recognised for all records of a batch at once (``_scan``); history rows are decoded by ``_rows``;
summary updates only matter for the final summary, so of each run of plain summary records only
the last value per key is kept (the order of first appearance decides the key order, as applying
them one by one would). Every other record, and any history or summary record off the plain layout,
is decoded with ``Record.FromString`` in file order, so the result equals decoding every record
(``BULK_DECODE = False`` does exactly that: the reference the tests compare with).
"""

from __future__ import annotations

from typing import Any, BinaryIO, Callable, NamedTuple

import numpy as np

from . import _scan
from ._batches import RecordBatch, frame_batches
from ._framing import FramingState
from ._history import History, RowBatch, row_entries
from ._rows import decode_rows, key_names

BULK_DECODE = True
"""False decodes every record with the protobuf parser (the per-record reference)."""
MAX_SUMMARY_GROUPS = 1 << 20
"""More (run of plain summary records x key) pairs than this in a batch: its summaries go one by one."""
_HISTORY_TAG, _SUMMARY_TAG = 0x12, 0x1A
_UPDATE_TAG = 0x0A


def decode_log(fh: BinaryIO, framing: FramingState, start: int, record_cls: Any, history: History,
               summary: dict[tuple[str, ...], str], take_record: Callable[[Any], None]) -> int:
    """Decode every record from ``start``: history rows and summary updates in bulk, the rest via
    ``take_record`` in file order. Returns how many records could not be decoded."""
    from google.protobuf import message_factory

    pool = record_cls.DESCRIPTOR.file.pool
    item_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("wandb_internal.HistoryItem"))
    undecodable = 0
    for batch in frame_batches(fh, framing, start):
        undecodable += _decode_batch(batch, record_cls, item_cls, history, summary, take_record)
    return undecodable


class _SummaryPlan:
    """Plain summary records of a batch, reduced to (run, key) -> last value, applied run by run."""

    def __init__(self) -> None:
        self.plain = np.zeros(0, dtype=np.int64)
        self.entries: list[tuple[int, tuple[str, ...], int, int]] = []
        """(run, path, value start, value end) in order of first appearance."""
        self.applied = 0

    def flush(self, buf: np.ndarray, summary: dict[tuple[str, ...], str], up_to_run: int) -> None:
        """Apply the entries of runs <= ``up_to_run``."""
        entries = self.entries
        i = self.applied
        while i < len(entries) and entries[i][0] <= up_to_run:
            _run, path, start, end = entries[i]
            summary[path] = buf[start:end].tobytes().decode("utf-8")
            i += 1
        self.applied = i


class _SummaryItems(NamedTuple):
    """The items of the plain summary records of a batch, in file order."""

    parent: np.ndarray
    """Index of the item's record in the summary records given."""
    value_start: np.ndarray
    value_end: np.ndarray
    code: np.ndarray
    """Index of the item's key path in ``paths``."""
    paths: list[tuple[str, ...]]


def _plain_summaries(buf: np.ndarray, words: np.ndarray, records: np.ndarray, body: np.ndarray, ends: np.ndarray,
                     item_cls: Any) -> tuple[np.ndarray, _SummaryItems]:
    """(plain mask per record, the items of the plain ones)."""
    n = len(records)
    fields = _scan.fields(buf, words, body, ends)
    ok = ~fields.bad
    ok[fields.parent[fields.tag != _UPDATE_TAG]] = False  # removals are applied by the parser, in order
    parent, i_start, i_end = fields.parent, fields.start, fields.end
    key_end, value_start, item_ok = _scan.items(words, i_start, i_end)
    ok[parent[~item_ok]] = False
    # A value with non-ASCII bytes must be UTF-8, as the parser requires.
    for j in np.flatnonzero(_scan.non_ascii(buf, words, value_start, np.maximum(value_start, i_end))).tolist():
        try:
            buf[value_start[j]:i_end[j]].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            ok[parent[j]] = False
    ids, first = _scan.span_ids(words, i_start, np.where(item_ok, key_end, i_start))
    paths = key_names(buf, i_start, key_end, first, item_cls, as_path=True)
    path_code: dict[tuple[str, ...], int] = {}
    code_of = np.array([path_code.setdefault(p, len(path_code)) if p is not None else -1 for p in paths],
                       dtype=np.int64)
    codes = code_of[ids] if len(ids) else ids
    ok[parent[codes < 0]] = False
    sel = ok[parent] if n else np.zeros(0, dtype=bool)
    return ok, _SummaryItems(parent[sel], value_start[sel], i_end[sel], codes[sel], list(path_code))


def _summary_plan(plan: _SummaryPlan, records: np.ndarray, items: _SummaryItems, barriers: np.ndarray) -> bool:
    """Fill ``plan`` with the last value per (run, key); False when there are too many groups."""
    paths, codes, value_start, value_end = items.paths, items.code, items.value_start, items.value_end
    item_record = records[items.parent]
    run = np.searchsorted(barriers, item_record)
    n_codes = max(len(paths), 1)
    groups = (len(barriers) + 1) * n_codes
    if groups > MAX_SUMMARY_GROUPS:
        return False
    key = run * n_codes + codes
    position = np.arange(len(key))
    first = np.full(groups, len(key), dtype=np.int64)
    last = np.full(groups, -1, dtype=np.int64)
    np.minimum.at(first, key, position)
    np.maximum.at(last, key, position)
    used = np.flatnonzero(last >= 0)
    used = used[np.argsort(first[used], kind="stable")]
    ends = last[used]
    plan.entries = [(r, paths[c], s, e) for r, c, s, e in zip((used // n_codes).tolist(), (used % n_codes).tolist(),
                                                               value_start[ends].tolist(), value_end[ends].tolist())]
    return True


def _decode_batch(batch: RecordBatch, record_cls: Any, item_cls: Any, history: History,
                  summary: dict[tuple[str, ...], str], take_record: Callable[[Any], None]) -> int:
    from google.protobuf.message import DecodeError

    buf, words = _scan.word_view(batch.buf)
    starts, ends = batch.starts, batch.ends
    n = len(starts)
    rows = RowBatch()
    slow = np.ones(n, dtype=bool)
    plan = _SummaryPlan()
    barriers = np.zeros(0, dtype=np.int64)
    if BULK_DECODE and n:
        tag, body = _scan.record_bodies(words, starts, ends)
        hist = np.flatnonzero(tag == _HISTORY_TAG)
        slow[decode_rows(buf, words, hist, body[hist], ends[hist], item_cls, rows)] = False
        summ = np.flatnonzero(tag == _SUMMARY_TAG)
        if len(summ):
            ok, items = _plain_summaries(buf, words, summ, body[summ], ends[summ], item_cls)
            slow[summ[ok]] = False
            # A record the parser decodes may be a summary (a plain one is not): runs of plain summary
            # records between such records are reduced separately and applied in order.
            barriers = np.flatnonzero(slow & ((tag == _SUMMARY_TAG) | (tag == 0)))
            if not _summary_plan(plan, summ, items, barriers):
                slow[summ] = True
                plan = _SummaryPlan()
    undecodable = 0
    slow_history: list[tuple[int, Any]] = []
    data = buf.data
    barrier_rank = {int(b): k for k, b in enumerate(barriers.tolist())}
    slow_records = np.flatnonzero(slow)
    for i, s, e in zip(slow_records.tolist(), starts[slow_records].tolist(), ends[slow_records].tolist()):
        if i in barrier_rank:
            plan.flush(buf, summary, barrier_rank[i])
        try:
            rec = record_cls.FromString(data[s:e])
        except (DecodeError, ValueError, TypeError, OverflowError, RecursionError):
            undecodable += 1
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            slow_history.append((i, rec.history))
        elif kind == "summary":
            _apply_items(summary, rec.summary)
        else:
            take_record(rec)
    plan.flush(buf, summary, len(barriers))
    # Rows in file order: the bulk-decoded records and the parser's history records, numbered together.
    history_records = _row_records(rows)
    if slow_history:
        history_records = np.union1d(history_records, np.array([i for i, _h in slow_history], dtype=np.int64))
    if len(history_records):
        rank = np.full(n, -1, dtype=np.int64)
        rank[history_records] = np.arange(len(history_records))
        rows.renumber(rank)
        for i, hist in slow_history:
            step, ts, rt, entries = row_entries(((item.key or ".".join(item.nested_key), item.value_json)
                                                 for item in hist.item), hist.step.num)
            rows.add_python_row(int(rank[i]), step, ts, rt, entries)
        history.extend(rows)
    return undecodable


def _row_records(rows: RowBatch) -> np.ndarray:
    """Record indices of the rows the bulk decoder produced, ascending."""
    parts = [part[0] for part in rows.row_parts]
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def _apply_items(target: dict[tuple[str, ...], str], record: Any) -> None:
    """Apply a SummaryRecord's updates and removals to path -> value_json."""
    for item in record.update:
        target[(item.key,) if item.key else tuple(item.nested_key)] = item.value_json
    for item in record.remove:
        target.pop((item.key,) if item.key else tuple(item.nested_key), None)
