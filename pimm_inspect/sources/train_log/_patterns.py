"""Compiled byte patterns and vectorised converters for the pimm ``train.log`` reader.

Every pattern that scans a whole block starts with a literal (``\\n[``, ``] ``,
``,ddd ``) so the regex engine can skip ahead instead of trying each byte; the
reader prepends ``\\n`` to every block so the first line is found the same way.
"""

from __future__ import annotations

import math
import re
from typing import Any, cast

import numpy as np

TS = rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
_LEVELS = rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_HEAD = rb"\n\[(" + TS + rb") " + _LEVELS + rb" \S+ line \d+(?: \d+)?\] "
_VALUE = rb"([-+\w.]+)"

PREFIX = re.compile(rb"\[(" + TS + rb") (DEBUG|INFO|WARNING|ERROR|CRITICAL) \S+ line \d+(?: (\d+))?\] ")
"""The record prefix of spec 3.2, matched at a line start (group 3 is the E0 PID)."""

RECORD_START = re.compile(rb"\n(?=\[" + TS + rb" " + _LEVELS + rb" \S+ line \d+(?: \d+)?\] )")
"""The newline before a prefixed line: where the previous (multi-line) record ends."""

PID_LINE = re.compile(rb"\n\[" + TS + rb" " + _LEVELS + rb" \S+ line \d+ (\d{1,10})\] ")
"""E0 prefixes; findall gives every line's PID in order."""

GENERIC_TRAIN = re.compile(
    _HEAD + rb"([^\n]*?)Train: \[(\d{1,9})/(\d{1,9})\]\[(\d{1,9})/(\d{1,9})\] ?([^\n]*)")
"""Any ``Train: [`` record, also with fragments before it (slow path, spec 3.4 D)."""

TAIL_TOKEN = re.compile(
    rb"Data " + _VALUE + rb" \([-+\w.]+\) Batch " + _VALUE + rb" \([-+\w.]+\) Remain [\d:]+ ?"
    rb"|(?<![^:\s])([^:\s]+): " + _VALUE + rb"(?: |$)")
"""One item of a Train: tail: the IterationTimer block or a ``key: value`` term.

A key starts only where a run of key bytes starts (the look-behind): the old form tried
every byte of a long run and scanned to its end each time (quadratic; 197 KB of such
lines cost 123 s). A key found from inside a run always ended at the same place as one
found from its start, so the matches are the same."""

_KEY_RUN = re.compile(rb"[^:\s]+")
_KEY_VALUE = re.compile(rb": " + _VALUE + rb"(?: |$)")
"""The key branch of ``TAIL_TOKEN`` in two steps (a key is a whole run of key bytes, its value a
whole run of value bytes), tried right after a timer block that ended without a space: the one
place a scan position falls inside a run."""

KEYWORDS = re.compile(
    # grouped by first byte so a line whose message starts otherwise (every Train: line) fails in one test
    rb"\] (?:=> (?:Loading config|Testing on )"
    rb"|S(?:ave path: |tarting a fresh W&B run|aving |kipping final evaluation)"
    rb"|N(?:um params: |o weight found at: )|P(?:arallel strategy: )|I(?:terable train loader: )"
    rb"|T(?:ensorboard writer|raining already complete|est result: |rain result: )|W(?:eights & Biases writer|rote eval artifacts)"
    rb"|Lo(?:ading weight at: |aded \d)|R(?:esolving remote weight: |esuming )|F(?:ast forwarding data iterator)"
    rb"|B(?:est validation )|C(?:urrently Best |lass_\d+-)|>+ Start |<+ End |V(?:al result: |al Result: )"
    rb"|\[[^\]\n]{1,200}\] Detection P=|\|\s{0,40}\d+ \| )")
"""Message starts of the INFO records the reader interprets (found from the ``] `` before them)."""

LEVEL_HIT = re.compile(rb",\d{3} (?:WARNING|ERROR|CRITICAL) ")
"""The millisecond part of a prefix followed by a level worth reporting."""

MAX_TAIL_BYTES = 65536
"""Train: tails longer than this are cut before parsing (hostile input, not pimm)."""


SpecItem = tuple[Any, ...]
"""One item of a template's layout: ``("timer",)`` or ``("key", key, spaced)``."""
Template = tuple[re.Pattern[bytes], tuple[bytes, ...], tuple[SpecItem, ...]]
"""A specialised Train: pattern, its keys and its layout (``build_template``)."""


def build_template(tail: bytes) -> Template | None:
    """A specialised Train: pattern for lines shaped like ``tail`` (same keys in the same order).

    Also returns the keys and the layout (``("timer",)`` or ``("key", key, spaced)`` items)
    that ``_train_log_fast`` checks lines against without the regex.

    Capturing only the values of one known layout keeps the per-line cost of the
    common case to one regex step; lines of other shapes go to the slow path.
    """
    if len(tail) > 4096:
        return None
    parts = [_HEAD, rb"Train: \[(\d{1,9})/(\d{1,9})\]\[(\d{1,9})/(\d{1,9})\] "]
    keys: list[bytes] = []
    spec: list[SpecItem] = []
    pos = 0
    while pos < len(tail):
        m = TAIL_TOKEN.match(tail, pos)
        if m is None or m.end() == pos:
            return None
        if m.group(1) is not None:
            parts.append(rb"Data " + _VALUE + rb" \([-+\w.]+\) Batch " + _VALUE + rb" \([-+\w.]+\) Remain [\d:]+ ")
            keys += [b"Data", b"Batch"]
            spec.append(("timer",))
            if not tail[m.start():m.end()].endswith(b" "):
                return None
        else:
            key = m.group(3)
            spaced = tail[m.start():m.end()].endswith(b" ")
            parts.append(re.escape(key) + rb": " + _VALUE + (rb" " if spaced else rb""))
            keys.append(key)
            spec.append(("key", key, spaced))
        pos = m.end()
    if not keys:
        return None
    parts.append(rb"(?=\n)")
    return re.compile(b"".join(parts)), tuple(keys), tuple(spec)


def parse_tail(tail: bytes) -> list[tuple[bytes, bytes]]:
    """``(key, value)`` pairs of one Train: tail; ``Data``/``Batch`` come out as keys too."""
    pairs: list[tuple[bytes, bytes]] = []
    tail = tail[:MAX_TAIL_BYTES]
    pos, glued = 0, False
    while True:
        key = _KEY_RUN.match(tail, pos) if glued else None
        value = _KEY_VALUE.match(tail, key.end()) if key is not None else None
        if key is not None and value is not None:  # value is only matched after a key
            pairs.append((key.group(), value.group(1)))
            glued, pos = False, value.end()
            continue
        m = TAIL_TOKEN.search(tail, pos)
        if m is None:
            return pairs
        if m.group(1) is not None:
            pairs.append((b"Data", m.group(1)))
            pairs.append((b"Batch", m.group(2)))
            glued = tail[m.end() - 1:m.end()] != b" "
        else:
            pairs.append((m.group(3), m.group(4)))
            glued = False
        pos = m.end()


def to_float(text: bytes | str) -> float:
    """A float from log text; NaN when the text is not a number."""
    try:
        return float(text)
    except (ValueError, OverflowError):
        return math.nan


def _memo_worthwhile(column: tuple[bytes, ...]) -> bool:
    """True when a column repeats values (epochs, iters, Data/Batch times, Lr): convert each text once."""
    sample = column[:512]
    return len(column) > 64 and len(set(sample)) * 2 < len(sample)


def floats(column: tuple[bytes, ...]) -> np.ndarray:
    """float64 array from number texts (``nan``/``inf`` kept, garbage -> NaN).

    (A column-wise numpy decimal parser was measured: no faster than ``float`` here.)
    """
    if _memo_worthwhile(column):
        table = {text: to_float(text) for text in set(column)}
        return np.fromiter(map(table.__getitem__, column), dtype=np.float64, count=len(column))
    try:
        return np.fromiter(map(float, column), dtype=np.float64, count=len(column))
    except (ValueError, OverflowError):
        return np.fromiter(map(to_float, column), dtype=np.float64, count=len(column))


def ints(column: tuple[bytes, ...]) -> np.ndarray:
    """int64 array from digit texts (the patterns allow at most 9 digits)."""
    if _memo_worthwhile(column):
        table = {text: int(text) for text in set(column)}
        return np.fromiter(map(table.__getitem__, column), dtype=np.int64, count=len(column))
    return np.fromiter(map(int, column), dtype=np.int64, count=len(column))


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (garbage in, garbage out, never raises)."""
    y = y - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: np.ndarray = era * 146097 + doe - 719468
    return days


_FEW_STAMPS = 24
"""Up to this many texts are converted one by one (``timestamps``): the matrix's ~50 numpy steps cost more."""


def timestamps(column: tuple[bytes, ...]) -> np.ndarray:
    """Seconds from ``YYYY-MM-DD HH:MM:SS,mmm`` texts (digits where the pattern ``TS`` has them), read as UTC (the log
    has no zone)."""
    if len(column) <= _FEW_STAMPS:
        try:
            return np.array([_seconds(text) for text in column], dtype=np.float64)
        except ValueError:  # not digits where TS has them (no pattern gives such a text): the matrix never raises
            pass
    return timestamps_matrix(np.array(column, dtype="S23").view(np.uint8).reshape(-1, 23))


def _seconds(text: bytes) -> float:
    """``timestamps_matrix``'s arithmetic for one text, step for step (the same integers, the same two float steps)."""
    y, mo, d = int(text[0:4]), int(text[5:7]), int(text[8:10])
    y -= mo <= 2
    era = y // 400
    yoe = y - era * 400
    doe = yoe * 365 + yoe // 4 - yoe // 100 + (153 * ((mo + 9) % 12) + 2) // 5 + d - 1
    secs = (era * 146097 + doe - 719468) * 86400 + int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])
    return float(secs) + int(text[20:23]) / 1000.0


def timestamps_matrix(chars: np.ndarray) -> np.ndarray:
    """Seconds from an (n, 23) uint8 matrix of timestamp texts (see ``timestamps``)."""
    raw = chars.astype(np.int64) - 48

    def num(a: int, b: int) -> np.ndarray:
        out = raw[:, a]
        for i in range(a + 1, b):
            out = out * 10 + raw[:, i]
        return out

    days = _days_from_civil(num(0, 4), num(5, 7), num(8, 10))
    secs = days * 86400 + num(11, 13) * 3600 + num(14, 16) * 60 + num(17, 19)
    seconds: np.ndarray = secs.astype(np.float64) + num(20, 23) / 1000.0
    return seconds


def timestamp(text: str) -> float:
    """Seconds of one timestamp text (the same arithmetic as ``timestamps``); NaN if malformed."""
    if _TS_ONLY.fullmatch(text) is None:
        return math.nan
    y, mo, d = int(text[0:4]), int(text[5:7]), int(text[8:10])
    y -= mo <= 2
    era = y // 400
    yoe = y - era * 400
    doe = yoe * 365 + yoe // 4 - yoe // 100 + (153 * ((mo + 9) % 12) + 2) // 5 + d - 1
    days = era * 146097 + doe - 719468
    secs = days * 86400 + int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])
    return float(secs) + int(text[20:23]) / 1000.0


_TS_ONLY = re.compile(TS.decode(), re.ASCII)


# Message-level patterns (str), applied only to the few records the keyword scan found.
RESUME_TRAINER = re.compile(r"Resuming from iteration (\d{1,18})")
RESUME_STRUCTURED = re.compile(r"Resuming train from structured state: epoch=(\d{1,9}), iter=(\d{1,9}), global_step=(\d{1,18})")
RESUME_LEGACY_SAVED = re.compile(r"Resuming train at saved epoch: (\d{1,9}), saved iteration: (\d{1,9})")
RESUME_LEGACY_INDEX = re.compile(r"Resuming train at epoch index: (\d{1,9}), iteration: (\d{1,9})")
RESUME_E0_EPOCH = re.compile(r"Resuming train at eval epoch: (\d{1,9})")
RESUME_E0_ITER = re.compile(r"Resuming train at iteration: (\d{1,9})")
SAVE_GLOBAL = re.compile(r"Saving checkpoint at global step (\d{1,18})")
NUM_PARAMS = re.compile(r"Num params: ([\d,]{1,40})")
PARALLEL = re.compile(r"Parallel strategy: ([^,]*)")
ITERABLE_IPE = re.compile(r"iters_per_epoch=(\d{1,9})")
WORLD_SIZE = re.compile(r"world_size[ =](\d{1,9}) ?-> ?(\d{1,9})|current world_size=(\d{1,9})")
RESULT = re.compile(r"(Val|Test) result: ([\w/]+) (\S+?)\.?\s*$")
MAE_RESULT = re.compile(r"Val Result: Loss: (\S+) Coord: (\S+) Feat: (\S+) MaskRatio: (\S+)")
DETECTION = re.compile(r"\[([^\]]{1,200})\] Detection P=(\S+) R=(\S+) F1=(\S+) IoU=(\S+)")
BEST_UPDATED = re.compile(r"Best validation (.+?) updated to: (\S+)")
TABLE_HEAD = re.compile(r"\|\s*(\d{1,9}) \| ")
TABLE_TAIL = re.compile(r" \| ([\w.+-]+) \| ([\w.+-]+) \| ([\w.+-]+) \| ([\w.+-]+) \| ([\w.+-]+) \|\s*$")


def table_row(text: str) -> tuple[str, str, str | None, str, str, str, str, str] | None:
    """The groups of ``\\|\\s*(\\d{1,9}) \\| (.*?)(\\*)?\\s* \\| V \\| V \\| V \\| V \\| V \\|\\s*$`` matched at the start.

    Done in three linear steps (head, the five columns anchored at the end, then the name
    between them) because that single pattern backtracks quadratically on long runs of
    whitespace. The five columns are fixed from the end (values hold no space or ``|``);
    the lazy name is what remains once trailing whitespace and one ``*`` before it are
    taken off, exactly as the pattern would split it.
    """
    head = TABLE_HEAD.match(text)
    if head is None:
        return None
    tail = TABLE_TAIL.search(text, head.end())
    if tail is None:
        return None
    name = text[head.end():tail.start()].rstrip()  # str.rstrip strips exactly what \s matches
    star = name.endswith("*")
    columns = cast("tuple[str, str, str, str, str]", tail.groups())  # five non-optional groups
    return (head.group(1), name[:-1] if star else name, "*" if star else None) + columns


CLASSIC_ROW = re.compile(r"Class_(\d{1,9})-(.+?) Result: iou/accuracy ([\w.+-]+)/([\w.+-]+)")
RESULT_TAGS = {"mIoU": "mIoU", "mAcc": "mAcc", "allAcc": "allAcc", "mPrec": "mPrecision",
               "mRec": "mRecall", "mF1": "mF1"}
"""Console metric names of ``Val result:`` -> the SemSegEvaluator's writer tag suffixes."""


def _gaps(size: int, quiet: tuple[np.ndarray, np.ndarray] | None) -> list[tuple[int, int]]:
    """The parts of a block outside the quiet lines (sorted starts, newline positions), as ``[lo, hi)``."""
    if quiet is None or not quiet[0].size:
        return [(0, size)]
    starts, ends = quiet
    los = np.concatenate(([0], ends))
    his = np.concatenate((starts, [size]))
    keep = his > los + 1  # a quiet line right after another leaves only the newline between them
    keep[0] = his[0] > 0
    return list(zip(los[keep].tolist(), his[keep].tolist()))


def find_markers(block: bytes, quiet: tuple[np.ndarray, np.ndarray] | None = None) -> dict[int, re.Match[bytes] | int]:
    """Line starts of interesting records mapped to their prefix match (the reader adds PID changes as ints).

    ``quiet``: (starts, newline positions) of lines known to hold no marker (INFO Train: lines of the
    attempt's template), skipped by the scan. No match of either pattern can run into such a line (it
    starts with ``[``, where ``\s*\d`` and the level pattern fail), so the markers are the same.
    """
    markers: dict[int, re.Match[bytes] | int] = {}
    gaps = _gaps(len(block), quiet)
    for pattern, offset in ((KEYWORDS, None), (LEVEL_HIT, 20)):
        line_end = -1
        for m in (m for lo, hi in gaps for m in pattern.finditer(block, lo, hi)):
            hit = m.start()
            if hit < line_end:
                continue  # another hit on a line already looked at (keeps huge lines linear)
            ls = block.rfind(b"\n", 0, hit) + 1
            line_end = block.find(b"\n", hit)
            if ls in markers or ls == 0:
                continue
            pm = PREFIX.match(block, ls)
            if pm is None:
                continue
            if (offset is None and pm.end() == hit + 2) or (offset is not None and hit - ls == offset):
                markers[ls] = pm
    return markers


def last_record_ts(block: bytes, lo: int, hi: int) -> str | None:
    """Timestamp of the last prefixed line in ``block[lo:hi]`` (each candidate tried once)."""
    pos = hi
    while True:
        pos = block.rfind(b"\n[", lo, pos)
        if pos < 0:
            return None
        pm = PREFIX.match(block, pos + 1)
        if pm is not None:
            return pm.group(1).decode()
