"""History records to rows in bulk: the plain layout wandb writes, decoded with numpy (``_scan``, ``_numbers``).

A plain HistoryRecord is a sequence of ``item`` fields (key fields, then ``value_json``) and at most
one ``step`` (``HistoryStep``: an empty message or one ``num`` varint). Keys are decoded by the
protobuf parser once per distinct encoding; numbers are parsed in bulk exactly as ``float`` /
``int`` would. An item whose value is not such a number (a string, ``null``, a list, a media dict)
is decoded in Python by ``_history.item_entries``, the function the per-record path uses too; a
special key (``_step``, ``_timestamp``, ``_runtime``) whose value is not such a number has its row's
special items read by ``_history.row_entries``. A record off this layout, or with text that is not
UTF-8, is left to the protobuf parser.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _numbers, _scan
from ._history import RowBatch, item_entries, row_entries

_ITEM, _STEP = 0x0A, 0x12


def key_names(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, first: np.ndarray, item_cls: Any,
              as_path: bool) -> list[Any]:
    """Key of each distinct key region (``first``: one item per region); None where it does not decode."""
    from google.protobuf.message import DecodeError

    names: list[Any] = []
    for j in first.tolist():
        try:
            item = item_cls.FromString(buf[starts[j]:ends[j]].tobytes())
        except (DecodeError, ValueError):
            names.append(None)
            continue
        if as_path:
            names.append((item.key,) if item.key else tuple(item.nested_key))
        else:
            names.append(item.key or ".".join(item.nested_key))
    return names


def decode_rows(buf: np.ndarray, words: np.ndarray, records: np.ndarray, body: np.ndarray, ends: np.ndarray,
                item_cls: Any, rows: RowBatch) -> np.ndarray:
    """Decode the history records ``records`` (body spans ``[body, ends)``) into ``rows``, numbered by
    record index; return the records decoded (the others are left to the protobuf parser)."""
    n = len(records)
    if not n:
        return records
    fields = _scan.fields(buf, words, body, ends)
    ok = ~fields.bad
    is_step = fields.tag == _STEP
    # The step: at most one HistoryStep field per record, empty or exactly one num varint.
    step = np.zeros(n, dtype=np.int64)
    if is_step.any():
        owner = fields.parent[is_step]
        s, e = fields.start[is_step], fields.end[is_step]
        size = _scan.varint_size(words[np.minimum(s + 1, len(words) - 1)], 8)
        plain = (e == s) | (((words[s] & np.uint64(0xFF)) == 0x08) & (size > 0) & (s + 1 + size == e))
        ok[owner[~plain]] = False
        ok[np.bincount(owner, minlength=n) > 1] = False  # several steps merge: the parser decides
        has_num = plain & (e > s)
        step[owner[has_num]] = _scan.varint_values(words, s[has_num] + 1, size[has_num])
    is_item = ~is_step
    parent = fields.parent[is_item]
    i_start, i_end = fields.start[is_item], fields.end[is_item]
    key_end, value_start, item_ok = _scan.items(words, i_start, i_end)
    ok[parent[~item_ok]] = False
    ids, first = _scan.span_ids(words, i_start, np.where(item_ok, key_end, i_start))
    names = key_names(buf, i_start, key_end, first, item_cls, as_path=False)
    code_of = np.array([rows.code(name) if name is not None else -1 for name in names], dtype=np.int64)
    codes = code_of[ids] if len(ids) else ids
    ok[parent[codes < 0]] = False
    values, number, ints, is_int = _numbers.parse(words, value_start, i_end)
    step_code, ts_code, rt_code = rows.code("_step"), rows.code("_timestamp"), rows.code("_runtime")
    is_step_key, is_ts, is_rt = codes == step_code, codes == ts_code, codes == rt_code
    good_item = ok[parent]
    recorded_step = step.copy()  # HistoryStep.num: where a row's _step items start from
    ts = np.full(n, np.nan)
    rt = np.full(n, np.nan)
    for mask, target, source in ((is_step_key, step, ints), (is_ts, ts, values), (is_rt, rt, values)):
        sel = _last_per_parent(parent, good_item & mask)
        target[parent[sel]] = source[sel]
    # A row with a special key whose value is not a plain number here (an int for _step): its
    # step, timestamp and runtime come from the per-record path's own function, given that row's
    # special items in order (they make no entries; the row's other items stay in bulk).
    special = is_step_key | is_ts | is_rt
    unread = good_item & ((is_step_key & ~is_int) | ((is_ts | is_rt) & ~number))
    if unread.any():
        ok[_special_rows(buf, np.array(_scan.distinct(parent[unread]), dtype=np.int64), parent, special, value_start, i_end, names, ids,
                         recorded_step, step, ts, rt)] = False
        good_item = ok[parent]
    keep = np.flatnonzero(ok)
    plain_entry = good_item & ~(is_step_key | is_ts | is_rt)
    index_in_record = np.arange(len(parent)) - np.searchsorted(parent, parent)
    entry = np.flatnonzero(plain_entry & number)
    rows.row_parts.append((records[keep], step[keep], ts[keep], rt[keep]))
    rows.entry_parts.append((records[parent[entry]], index_in_record[entry], np.zeros(len(entry), np.int64),
                             codes[entry], values[entry], np.ones(len(entry), bool)))
    decoded = ok.copy()  # local indices of the records whose rows are in ``rows``
    other = np.flatnonzero(plain_entry & ~number)
    if len(other):
        failed = _python_items(buf, other, parent, index_in_record, value_start, i_end, names, ids, records, rows)
        if len(failed):
            _drop_records(rows, records[np.array(_scan.distinct(failed), dtype=np.int64)])
            decoded[failed] = False
    kept: np.ndarray = records[decoded]
    return kept


def _special_rows(buf: np.ndarray, which: np.ndarray, parent: np.ndarray, special: np.ndarray,
                  value_start: np.ndarray, i_end: np.ndarray, names: Any, ids: np.ndarray, recorded_step: np.ndarray,
                  step: np.ndarray, ts: np.ndarray, rt: np.ndarray) -> np.ndarray:
    """Set ``step``/``ts``/``rt`` of the rows ``which`` from their special items with ``row_entries``;
    return the rows whose text is not UTF-8 (the parser decodes them)."""
    failed = []
    lows = np.searchsorted(parent, which)
    highs = np.searchsorted(parent, which, side="right")
    for r, lo, hi in zip(which.tolist(), lows.tolist(), highs.tolist()):
        try:
            items = [(names[int(ids[j])], buf[value_start[j]:i_end[j]].tobytes().decode("utf-8"))
                     for j in range(lo, hi) if special[j]]
        except UnicodeDecodeError:
            failed.append(r)
            continue
        step[r], ts[r], rt[r], _entries = row_entries(items, int(recorded_step[r]))
    return np.array(failed, dtype=np.int64)


def _python_items(buf: np.ndarray, other: np.ndarray, parent: np.ndarray, index_in_record: np.ndarray,
                  value_start: np.ndarray, i_end: np.ndarray, names: Any, ids: np.ndarray, records: np.ndarray,
                  rows: Any) -> np.ndarray:
    """Entries of items whose value is not a plain number, decoded one by one; the parents of
    items whose text is not UTF-8 are returned (their records go to the parser)."""
    entries: list[tuple[int, int, str, Any]] = []
    owners: list[int] = []
    failed: list[int] = []
    for j in other.tolist():
        try:
            text = buf[value_start[j]:i_end[j]].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            failed.append(int(parent[j]))
            continue
        before = len(entries)
        item_entries(int(index_in_record[j]), names[int(ids[j])], text, entries)
        owners += [int(records[parent[j]])] * (len(entries) - before)
    if entries:
        rows.entry_parts.append((
            np.array(owners, np.int64), np.array([e[0] for e in entries], np.int64),
            np.array([e[1] for e in entries], np.int64), np.array([rows.code(e[2]) for e in entries], np.int64),
            np.array([e[3] if type(e[3]) is float else np.nan for e in entries], np.float64),
            np.array([type(e[3]) is float for e in entries], bool)))
    return np.array(failed, dtype=np.int64)


def _drop_records(rows: RowBatch, gone: np.ndarray) -> None:
    """Take the rows and entries of the records ``gone`` out of ``rows`` (the parser decodes them)."""
    rows.row_parts = [(r[k], a[k], b[k], c[k]) for r, a, b, c in rows.row_parts for k in [~np.isin(r, gone)]]
    rows.entry_parts = [tuple(a[k] for a in part) for part in rows.entry_parts for k in [~np.isin(part[0], gone)]]


def _last_per_parent(parent: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Indices of the last selected item of each parent (``parent`` sorted ascending)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return idx
    owners = parent[idx]
    last: np.ndarray = idx[np.append(owners[1:] != owners[:-1], True)]
    return last
