"""Bulk decoding of W&B history and summary records; every other record goes to the protobuf parser.

A 100k-row log holds ~300k records, mostly history rows and summary updates. Decoding each with
``Record.FromString`` and walking its items in Python costs seconds. Here the records of a batch
are walked with numpy (``_wandb_wire``), history values are parsed as one numpy string-to-float
cast, and only distinct key encodings go through the protobuf parser. Anything that does not have
the plain layout wandb writes (other fields, non-numeric values, non-ASCII text) is decoded
record by record with the real parser, so the result is the same as decoding every record.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Callable

import numpy as np

from ._batches import RecordBatch, frame_batches
from ._framing import FramingState
from ._history import History, RowBatch, row_entries
from ._wire import PAD, count_per, gather, span_ids, spans_max, walk

MAX_NUMBER_TEXT = 32
"""Longer value texts go to the per-value path."""
_NUMBER_CHARS = np.zeros(256, dtype=bool)
_NUMBER_CHARS[list(b"0123456789+-.eE")] = True
_DIGITS = np.zeros(256, dtype=bool)
_DIGITS[list(b"0123456789")] = True
_SPECIAL = {b"NaN", b"Infinity", b"-Infinity"}
_HISTORY, _SUMMARY = 2, 3
_ITEM, _STEP, _VALUE = 1, 2, 16


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


def _decode_batch(batch: RecordBatch, record_cls, item_cls, history: History, summary, take_record) -> int:
    from google.protobuf.message import DecodeError

    padded = batch.data + bytes(PAD)
    buf = np.frombuffer(padded, dtype=np.uint8)
    n = len(batch.starts)
    top = walk(buf, batch.starts, batch.ends)
    is_num = (top.number == 1) & (top.wire == 0)
    is_hist = (top.number == _HISTORY) & (top.wire == 2)
    is_sum = (top.number == _SUMMARY) & (top.wire == 2)
    n_hist, n_sum = count_per(top.parent, is_hist, n), count_per(top.parent, is_sum, n)
    n_other = count_per(top.parent, ~(is_num | is_hist | is_sum), n)
    plain = ~top.bad & (n_other == 0) & (n_hist + n_sum == 1)
    span_start = np.zeros(n, dtype=np.int64)
    span_end = np.zeros(n, dtype=np.int64)
    sub = is_hist | is_sum
    span_start[top.parent[sub]] = top.start[sub]
    span_end[top.parent[sub]] = top.end[sub]
    hist_idx = np.flatnonzero(plain & (n_hist == 1))
    sum_idx = np.flatnonzero(plain & (n_sum == 1))
    # Summary updates are applied in bulk only when every summary record of the batch is plain.
    summary_in_order = top.bad.any() or bool(np.any((n_sum > 0) & ~plain))

    rows = RowBatch()
    fast_rows = _fast_history(buf, hist_idx, span_start[hist_idx], span_end[hist_idx], item_cls, rows)
    slow = np.ones(n, dtype=bool)
    slow[fast_rows] = False
    sum_plain = None if summary_in_order else _fast_summary(buf, sum_idx, span_start[sum_idx],
                                                              span_end[sum_idx], item_cls)
    if sum_plain is not None:
        slow[sum_idx] = False

    undecodable = 0
    sequential_summary = sum_plain is None
    history_records = set(fast_rows.tolist())
    slow_history: list[tuple[int, Any]] = []
    data = batch.data
    for i, (s, e) in enumerate(zip(batch.starts.tolist(), batch.ends.tolist())):
        if not slow[i]:
            continue
        try:
            rec = record_cls.FromString(data[s:e])
        except (DecodeError, ValueError, TypeError, OverflowError, RecursionError):
            undecodable += 1
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            slow_history.append((i, rec.history))
            history_records.add(i)
        elif kind == "summary" and sequential_summary:
            _apply_items(summary, rec.summary)
        elif kind == "summary":  # cannot happen (plain summaries only when all are): keep file order anyway
            raise AssertionError("summary record outside the bulk path")
        else:
            take_record(rec)
    if history_records:
        rank = np.full(n, -1, dtype=np.int64)
        rank[np.array(sorted(history_records), dtype=np.int64)] = np.arange(len(history_records))
        rows.renumber(rank)
        for i, hist in slow_history:
            step, ts, rt, entries = row_entries(((item.key or ".".join(item.nested_key), item.value_json)
                                                 for item in hist.item), hist.step.num)
            rows.add_python_row(int(rank[i]), step, ts, rt, entries)
        history.extend(rows)
    if sum_plain is not None:
        for path, text in sum_plain:
            summary[path] = text
    return undecodable


def _apply_items(target: dict[tuple[str, ...], str], record: Any) -> None:
    """Apply a SummaryRecord's updates and removals to path -> value_json."""
    for item in record.update:
        target[(item.key,) if item.key else tuple(item.nested_key)] = item.value_json
    for item in record.remove:
        target.pop((item.key,) if item.key else tuple(item.nested_key), None)


def _items(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, allowed: tuple[int, ...]):
    """Items of HistoryRecord/SummaryRecord spans: (parent, item start, end, key-region end, value start, ok per parent).

    A parent is not ok when it has a field outside ``allowed`` or an item whose value_json is missing,
    repeated or not its last field.
    """
    n = len(starts)
    fields = walk(buf, starts, ends)
    item_mask = (fields.number == _ITEM) & (fields.wire == 2)
    known = item_mask.copy()
    for number in allowed:
        known |= (fields.number == number) & (fields.wire == 2)
    ok = ~fields.bad & (count_per(fields.parent, ~known, n) == 0)
    parent = fields.parent[item_mask]
    i_start, i_end = fields.start[item_mask], fields.end[item_mask]
    inner = walk(buf, i_start, i_end)
    is_value = (inner.number == _VALUE) & (inner.wire == 2)
    m = len(i_start)
    n_values = count_per(inner.parent, is_value, m)
    value_start = np.zeros(m, dtype=np.int64)
    key_end = np.zeros(m, dtype=np.int64)
    value_start[inner.parent[is_value]] = inner.start[is_value]
    key_end[inner.parent[is_value]] = inner.tag_start[is_value]
    last = np.zeros(m, dtype=bool)
    last[inner.parent[is_value]] = inner.end[is_value] == i_end[inner.parent[is_value]]
    item_ok = ~inner.bad & (n_values == 1) & last
    ok &= np.bincount(parent[~item_ok], minlength=n) == 0
    return fields, parent, i_start, i_end, key_end, value_start, ok


def _keys(buf, i_start, key_end, item_cls, as_path: bool):
    """Key per item (decoded once per distinct encoding); None where an encoding does not decode."""
    from google.protobuf.message import DecodeError

    ids, first = span_ids(buf, i_start, key_end)
    names: list[Any] = []
    for j in first.tolist():
        region = buf[i_start[j]:key_end[j]].tobytes()
        try:
            item = item_cls.FromString(region)
        except (DecodeError, ValueError):
            names.append(None)
            continue
        if as_path:
            names.append((item.key,) if item.key else tuple(item.nested_key))
        else:
            names.append(item.key or ".".join(item.nested_key))
    return ids, names


def _fast_history(buf, records, starts, ends, item_cls, rows: RowBatch) -> np.ndarray:
    """Decode the plain history records into ``rows`` (row numbers = record indices for now); return them."""
    if not len(records):
        return records
    n = len(records)
    fields, parent, i_start, i_end, key_end, value_start, ok = _items(buf, starts, ends, (_STEP,))
    # HistoryStep: only its num field.
    is_step = (fields.number == _STEP) & (fields.wire == 2)
    step = np.zeros(n, dtype=np.int64)
    if is_step.any():
        st = walk(buf, fields.start[is_step], fields.end[is_step])
        step_parent = fields.parent[is_step]
        good_num = (st.number == 1) & (st.wire == 0)
        ok[step_parent[st.bad | (count_per(st.parent, ~good_num, len(step_parent)) > 0)]] = False
        owner = step_parent[st.parent]
        sel = _last_per_parent(owner, good_num)  # the last num wins (sub-messages merge)
        step[owner[sel]] = st.start[sel]
    ids, names = _keys(buf, i_start, key_end, item_cls, as_path=False)
    bad_key = np.array([name is None for name in names], dtype=bool)
    if bad_key.any():
        ok[parent[bad_key[ids]]] = False
    v_len = i_end - value_start
    head = buf[value_start]
    plain_number = (v_len > 0) & (v_len <= MAX_NUMBER_TEXT)
    n_words = -(-int(v_len[plain_number].max()) // 8) if plain_number.any() else 1
    width = 8 * n_words
    mat = gather(buf, value_start, np.where(plain_number, i_end, value_start), width)
    chars_ok = np.where(np.arange(width) < v_len[:, None], _NUMBER_CHARS[mat], True).all(axis=1)
    texts = mat.view(f"S{width}").ravel()
    special = np.zeros(len(texts), dtype=bool)
    maybe = np.flatnonzero((head == ord("N")) | (head == ord("I")) | ((head == ord("-")) & (v_len == 9)))
    special[maybe] = np.isin(texts[maybe], list(_SPECIAL))
    plain_number &= chars_ok | special
    ok[parent[~plain_number]] = False
    code_of = np.array([rows.code(name) if name is not None else -1 for name in names], dtype=np.int64)
    codes = code_of[ids]
    step_code = rows.code("_step")
    ts_code, rt_code = rows.code("_timestamp"), rows.code("_runtime")
    is_step_key = codes == step_code
    # _step must be an int literal (``int(text)``): plain digits, at most 18 of them.
    digits = np.where(np.arange(width) < v_len[:, None], _DIGITS[mat] | ((np.arange(width) == 0) & (mat == ord("-"))),
                      True).all(axis=1) & (v_len <= 18) & ~((v_len == 1) & (head == ord("-")))
    ok[parent[is_step_key & ~digits]] = False
    good_item = ok[parent]
    if not good_item.any():
        return records[:0]
    values = np.full(len(parent), np.nan)
    try:
        values[good_item] = texts[good_item].astype(np.float64)
    except ValueError:  # a text float() would refuse: those records go to the parser
        for j in np.flatnonzero(good_item).tolist():
            try:
                values[j] = float(texts[j])
            except ValueError:
                ok[parent[j]] = False
        good_item = ok[parent]
    keep = np.flatnonzero(ok)
    # Row fields: the last _step / _timestamp / _runtime item of a row wins.
    ts = np.full(n, np.nan)
    rt = np.full(n, np.nan)
    sel = _last_per_parent(parent, good_item & is_step_key)
    step[parent[sel]] = texts[sel].astype(np.int64)
    sel = _last_per_parent(parent, good_item & (codes == ts_code))
    ts[parent[sel]] = values[sel]
    sel = _last_per_parent(parent, good_item & (codes == rt_code))
    rt[parent[sel]] = values[sel]
    rows.row_parts.append((records[keep], step[keep], ts[keep], rt[keep]))
    entry = good_item & ~is_step_key & (codes != ts_code) & (codes != rt_code)
    order_in_record = np.arange(len(parent)) - np.searchsorted(parent, parent)
    rows.entry_parts.append((records[parent[entry]], order_in_record[entry], np.zeros(int(entry.sum()), np.int64),
                             codes[entry], values[entry], np.ones(int(entry.sum()), bool)))
    return records[keep]


def _last_per_parent(parent: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Indices of the last selected field of each parent (``parent`` sorted ascending)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return idx
    owners = parent[idx]
    return idx[np.append(owners[1:] != owners[:-1], True)]


def _fast_summary(buf, records, starts, ends, item_cls) -> list[tuple[tuple[str, ...], str]] | None:
    """(path, value_json) in first-appearance order with the last value, or None when a record is not plain."""
    if not len(records):
        return []
    _fields, parent, i_start, i_end, key_end, value_start, ok = _items(buf, starts, ends, ())
    if not ok.all():
        return None
    ids, paths = _keys(buf, i_start, key_end, item_cls, as_path=True)
    if any(p is None for p in paths):
        return None
    if spans_max(buf, value_start, i_end) >= 0x80:
        return None  # non-ASCII text: let the parser check its UTF-8
    path_code: dict[tuple[str, ...], int] = {}
    code_of = np.array([path_code.setdefault(p, len(path_code)) for p in paths], dtype=np.int64)
    codes = code_of[ids]
    uniq, first = np.unique(codes, return_index=True)
    _, last_rev = np.unique(codes[::-1], return_index=True)
    last = len(codes) - 1 - last_rev
    names = list(path_code)
    out = []
    for k in np.argsort(first, kind="stable").tolist():
        j = int(last[k])
        out.append((names[int(uniq[k])], buf[value_start[j]:i_end[j]].tobytes().decode("ascii")))
    return out
