"""The rows of a tree of runs in one cache entry: what a warm ``ls`` (and the runs table) of thousands of runs reads.

The row cache keeps one entry per run (``store.row_cache``); opening, checking and decoding 10,000 of them was most
of a warm ``ls`` of a 10,000-run tree. The index is one entry per tree (keyed by the folder searched) holding, for
every run with a stored row when the index was written, a copy of that entry:

    root, its read record (made_s and dependencies), its head (the row without its detail, a flat JSON list), its
    detail (the row cache's encoded text), and its ``ls --json`` object without the path (``report.json_doc``).

Each record is served only while ``read_record.unchanged`` holds for it, exactly as its per-run entry would be: the
index changes nothing about when a row is trusted, only how many files are read. A row served from it decodes
nothing until a field is asked for (``IndexedRow``); ``ls --json`` asks for none and prints the stored object.

The index is rewritten (whole, atomically, by ``DiskCache``) when a request served some row from elsewhere and the
stored rows differ from the index's: the per-run entries stay the source of truth, the index a copy of them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

import numpy as np

from ..evidence import RunRow
from ..load import read_record
from ..sources.confine import real_path
from .row_head import HEAD_FIELDS as _HEAD_FIELDS, exact_head_text, head_values
from .store import codec
from .store.disk_cache import DiskCache
from .store.row_cache import DETAIL, LazyRow, RowBuild, cached_rows, lazy_fields, stored_entry, worker_count

INDEX_KIND = "run_rows.index.1"
INDEX_CODE = ("analysis", "report", "session")
"""An index is made by the load, analysis, session and report code (its JSON objects): any other version is ignored."""
INDEX_MIN_RUNS = 32
"""Requests of fewer runs neither read nor write an index (their per-run entries are few)."""
_PARTS = 5
"""Strings per record: root, dependencies, head, detail, ``ls --json`` object."""
_ROOT, _DEPS, _HEAD, _DETAIL, _JSON = range(_PARTS)
_RUN_FIELDS = tuple(RunRow.__dataclass_fields__)
assert set(_RUN_FIELDS) == {"root", *_HEAD_FIELDS, *DETAIL}, "RunRow changed: update the index's head"
_SLOTS = {name: RunRow.__dict__[name] for name in _RUN_FIELDS}
_KINDS = frozenset(("f", "d", "r"))
from .fresh import FRESH_S as FRESH_S, Found as Found, Fresh as Fresh  # noqa: E402 (kept importable here)


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


class RowIndex:
    """A stored index, read: its records by root, each decoded only when asked for."""

    def __init__(self, made: list[float], offsets: list[int], blob: memoryview) -> None:
        self.made = made
        self.offsets = offsets
        self.blob = blob
        self.where = {self.part(i, _ROOT): i for i in range(len(made))}
        """Record number by root."""

    @classmethod
    def of_record(cls, made_s: float, parts: list[bytes]) -> RowIndex:
        """An index of one record (a row just built and stored, handed from a worker process)."""
        offsets = [0]
        for part in parts:
            offsets.append(offsets[-1] + len(part))
        return cls([made_s], offsets, memoryview(b"".join(parts)))

    def record(self, i: int) -> list[bytes]:
        """Record ``i``'s parts as stored."""
        return [bytes(self.blob[self.offsets[k]:self.offsets[k + 1]]) for k in range(i * _PARTS, (i + 1) * _PARTS)]

    def part(self, i: int, k: int) -> str:
        at = i * _PARTS + k
        return str(self.blob[self.offsets[at]:self.offsets[at + 1]], "utf-8", "surrogateescape")

    def deps(self, i: int, root: str) -> tuple[tuple[str, str, str], ...] | None:
        """Record ``i``'s dependencies (paths made absolute again); None when they do not parse."""
        text = self.part(i, _DEPS)
        parts = text.split("\0") if text else []
        kinds = parts[0::3]
        if len(parts) % 3 or not _KINDS.issuperset(kinds):
            return None
        prefix = root.rstrip(os.sep) + os.sep
        paths = [path if path.startswith(os.sep) else prefix + path if path else root for path in parts[1::3]]
        return tuple(zip(kinds, paths, parts[2::3]))


def read_index(disk: DiskCache, key: Path) -> RowIndex | None:
    """The index stored for ``key``, or None (missing, damaged, foreign)."""
    stored = disk.get_value(INDEX_KIND, key, "", INDEX_CODE)
    if not (isinstance(stored, tuple) and len(stored) == 4 and stored[0] == _PARTS):
        return None
    _n, made, offsets, blob = stored
    if not (isinstance(made, np.ndarray) and made.dtype == np.float64 and made.ndim == 1
            and isinstance(offsets, np.ndarray) and offsets.dtype == np.int64 and offsets.shape == (len(made) * _PARTS + 1,)
            and isinstance(blob, np.ndarray) and blob.dtype == np.uint64 and blob.ndim == 1):
        return None
    data = memoryview(blob.view(np.uint8))  # type: ignore[arg-type]  # numpy arrays are buffers
    bounds = offsets.tolist()
    if bounds[0] != 0 or not 0 <= len(data) - bounds[-1] < 8 or any(b < a for a, b in zip(bounds, bounds[1:])):
        return None
    try:
        return RowIndex(made.tolist(), bounds, data)
    except UnicodeDecodeError:
        return None


def _dep_text(root: str, flat: tuple[str, ...]) -> str:
    """``read_record.flat`` parts with the paths inside the run written relative to it (most of them)."""
    prefix = root.rstrip(os.sep) + os.sep
    parts = list(flat)
    for k in range(1, len(parts), 3):
        path = parts[k]
        parts[k] = "" if path == root else path[len(prefix):] if path.startswith(prefix) else path
    return "\0".join(parts)


def _record(root: str, made_s: float, flat: tuple[str, ...], row: RunRow, detail: bytes | None = None
            ) -> list[bytes] | None:
    """The index record (its parts) of a valid stored row (``detail``: its detail as stored, when known); None when
    its head does not survive the flat form exactly."""
    head = exact_head_text(row)
    if head is None:
        return None
    from ..report.json_doc import ls_run_fragment  # only writing an index needs it (not a UI's reads: ~18 ms)

    if detail is None:
        detail = object.__getattribute__(row, "_detail").tobytes() if _has_raw_detail(row) \
            else _bytes(codec.to_text(tuple(getattr(row, name) for name in DETAIL)))
    return [_bytes(root), _bytes(_dep_text(root, flat)), _bytes(head), detail, _bytes(ls_run_fragment(row))]


def _has_raw_detail(row: RunRow) -> bool:
    try:
        object.__getattribute__(row, "_detail")
    except AttributeError:
        return False
    return True


class IndexedRow(LazyRow):
    """A ``RunRow`` served from the index: its fields decoded on first use (the head at once, the detail at once).

    Equal to (and hashes as) the plain row of the same values; pickles as one (``LazyRow``).
    """

    __slots__ = ("_index", "_at")

    @classmethod
    def of(cls, index: RowIndex, at: int, root: Path) -> Self:
        row = object.__new__(cls)
        _SLOTS["root"].__set__(row, root)
        object.__setattr__(row, "_index", index)
        object.__setattr__(row, "_at", at)
        return row

    @property
    def ls_json_fragment(self) -> str:
        """The run's ``ls --json`` object without its path, as ``report.json_doc.ls_run_fragment`` wrote it."""
        index: RowIndex = object.__getattribute__(self, "_index")
        return index.part(object.__getattribute__(self, "_at"), _JSON)

    def _expand(self, detail: bool) -> None:
        index: RowIndex = object.__getattribute__(self, "_index")
        at: int = object.__getattribute__(self, "_at")
        if detail:
            self._set_detail(index.part(at, _DETAIL))
        else:
            for name, value in head_values(index.part(at, _HEAD)).items():
                _SLOTS[name].__set__(self, value)



class _Built(IndexedRow):
    """A row a worker process built and stored, on its way back as its index record: nothing decoded, nothing
    encoded again (it arrives as an ``IndexedRow``)."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        index: RowIndex = object.__getattribute__(self, "_index")
        at: int = object.__getattribute__(self, "_at")
        return _from_record, (index.made[at], index.record(at), self.root)


def _from_record(made_s: float, parts: list[bytes], root: Path) -> IndexedRow:
    return IndexedRow.of(RowIndex.of_record(made_s, parts), 0, root)


def indexed(root: Path, made_s: float, flat: tuple[str, ...], row: RunRow, detail: bytes) -> RunRow:
    """A row just built and stored, as its index record (``row_cache.Keep``): what ``write_index`` copies and
    ``ls --json`` prints as it is; the row itself when its head does not survive the index's form."""
    try:
        parts = _record(str(root), made_s, flat, row, detail)
    except (codec.NotCacheable, codec.BadEntry, ValueError, TypeError, RecursionError):
        parts = None
    return row if parts is None else _Built.of(RowIndex.of_record(made_s, parts), 0, root)


lazy_fields(IndexedRow, (*_HEAD_FIELDS, *DETAIL))


def index_key(under: Path) -> Path:
    """The folder an index is stored for: the folder searched."""
    return Path(under).absolute()


SPLIT_MIN_RUNS = 2000
"""From this many stored rows to check, a forked process checks half of them while this one checks the others,
when another processor is idle (``row_cache.worker_count``) and this process runs one thread (a fork is then safe)."""


def served_from(index: RowIndex | None, disk: DiskCache, roots: list[Path], fresh: Fresh | None = None,
                jobs: int | None = None) -> dict[int, RunRow]:
    """The rows of ``roots`` (by position) the index holds and that are still valid.

    ``fresh``: what the session's discovery found a moment ago (``Fresh``), taken for ``roots`` whether used or not;
    else the check resolves and lists now. ``jobs``: the session's worker setting (``row_cache.worker_count``)."""
    texts = [str(root) for root in roots]
    known = fresh.take(texts) if fresh is not None else {}
    if index is None:
        return {}
    asked = [(i, at) for i, at in enumerate(map(index.where.get, texts)) if at is not None]

    def valid(item: tuple[int, int]) -> bool:
        i, at = item
        text = texts[i]
        real, entries = known.get(text, (None, None))
        if real is None:
            real = real_path(text)
        if not disk.usable_for(roots[i], real):
            return False
        deps = index.deps(at, text)
        return deps is not None and read_record.unchanged(read_record.ReadRecord(index.made[at], deps, True),
                                                          {text: real}, {text: entries} if entries is not None else None)

    split = len(asked) >= SPLIT_MIN_RUNS and threading.active_count() == 1 and hasattr(os, "fork") \
        and worker_count(jobs) > 1
    flags = _checked_in_two(asked, valid) if split else [valid(item) for item in asked]
    return {i: IndexedRow.of(index, at, roots[i]) for (i, at), ok in zip(asked, flags) if ok}


def _checked_in_two(items: list[tuple[int, int]], valid: Callable[[tuple[int, int]], bool]) -> list[bool]:
    """``valid`` of every item, the second half in a forked process (what it cannot answer is checked here)."""
    half = len(items) // 2
    rest = items[half:]
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return [valid(item) for item in items]
    if pid == 0:  # the child: check, answer, leave at once (no exit handler, no buffered output of the parent's)
        code = 1
        try:
            os.close(read_end)
            answer = bytes(valid(item) for item in rest)
            with os.fdopen(write_end, "wb") as out:
                out.write(answer)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        mine = [valid(item) for item in items[:half]]
        with os.fdopen(read_end, "rb") as answers:
            theirs = answers.read()
    finally:
        _pid, status = os.waitpid(pid, 0)
    if status != 0 or len(theirs) != len(rest):
        return mine + [valid(item) for item in rest]  # the child failed: checked here
    return mine + [flag == 1 for flag in theirs]


def indexed_rows(roots: list[Path], build: RowBuild, disk: DiskCache | None, jobs: int | None = None,
                 under: Path | None = None, fresh: Fresh | None = None) -> Iterator[RunRow]:
    """``row_cache.cached_rows`` (the row of every run, in order); with ``under`` (the folder the runs were found
    in), reading that folder's index first and writing it again afterwards when it no longer held every stored row."""
    roots = [r if isinstance(r, Path) and r.is_absolute() else Path(r).absolute() for r in roots]
    if disk is None or under is None or len(roots) < INDEX_MIN_RUNS:
        if fresh is not None:
            fresh.take([str(root) for root in roots])  # found for these rows: never for a later check
        yield from cached_rows(roots, build, disk, jobs)
        return
    key = index_key(under)
    index = read_index(disk, key)
    served = served_from(index, disk, roots, fresh, jobs)
    rest = [root for i, root in enumerate(roots) if i not in served]
    others = cached_rows(rest, build, disk, jobs, indexed) if rest else iter(())
    last = len(roots) - 1
    for i in range(len(roots)):
        if i in served:
            row = served[i]
        else:
            row = next(others)  # a row just stored comes as its record (``indexed``)
            if type(row) is _Built:  # built here, not in a worker
                row = IndexedRow.of(object.__getattribute__(row, "_index"), 0, row.root)
            served[i] = row
        if i == last and rest:  # before the last row is handed on: a caller stops asking once it has them all
            write_index(disk, key, index, roots, served)
        yield row


def write_index(disk: DiskCache, key: Path, old: RowIndex | None, roots: list[Path], served: dict[int, RunRow]) -> None:
    """Store the index of ``roots`` unless it would hold what ``old`` holds: the records of the rows ``served`` as
    index records (from ``old``, or just built and stored) as they were, the stored rows of the others (with their
    records: a row whose run changed since is refused when asked for, as its own entry would be), and ``old``'s
    records of runs not asked for whose folder is still there."""
    parts: list[bytes] = []
    made: list[float] = []
    roots_made: list[tuple[str, float]] = []
    asked = set()

    def keep(text: str, index: RowIndex, at: int) -> None:
        parts.extend(index.record(at))
        made.append(index.made[at])
        roots_made.append((text, index.made[at]))

    for i, root in enumerate(roots):
        text = str(root)
        asked.add(text)
        row = served.get(i)
        if isinstance(row, IndexedRow):
            keep(text, object.__getattribute__(row, "_index"), object.__getattribute__(row, "_at"))
            continue
        entry = stored_entry(disk, root)
        if entry is None or entry[2].root != root:
            continue  # (a stale record is written as stored: it is checked, and refused, when asked for)
        try:
            record = _record(text, entry[0], entry[1], entry[2])
        except (codec.NotCacheable, codec.BadEntry, ValueError, TypeError, RecursionError):
            record = None
        if record is not None:
            parts.extend(record)
            made.append(entry[0])
            roots_made.append((text, entry[0]))
    if old is not None:
        for text, at in old.where.items():
            if text not in asked and os.path.isdir(text):
                keep(text, old, at)
        if sorted(roots_made) == sorted(zip(old.where, old.made)):
            return  # the same records: nothing to write
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    data = b"".join(parts)
    # As 64-bit words (padded): the codec stores a uint64 column as it is, one CRC-checked copy per chunk to read.
    blob = np.frombuffer(data + bytes(-len(data) % 8), dtype=np.uint64)
    disk.put_value(INDEX_KIND, key, "", (_PARTS, np.array(made, dtype=np.float64), offsets, blob), INDEX_CODE)


def stored_detail(row: RunRow) -> str | None:
    """The detail of a row read from the cache (from the index, or from its own entry) as the text stored, not
    decoded (``codec.from_text`` reads it: the UI's prefetch hands rows on so); None for a row made now."""
    if isinstance(row, IndexedRow):
        index: RowIndex = object.__getattribute__(row, "_index")
        return index.part(object.__getattribute__(row, "_at"), _DETAIL)
    if _has_raw_detail(row):
        return str(object.__getattribute__(row, "_detail").tobytes(), "utf-8")
    return None


def stored_head(row: RunRow) -> str | None:
    """The head of a row read from the cache as ``row_head.head_text`` writes it (from the index: the text stored, not
    decoded; from its own entry: written now), or None when its head does not survive that form exactly."""
    if isinstance(row, IndexedRow):
        index: RowIndex = object.__getattribute__(row, "_index")
        return index.part(object.__getattribute__(row, "_at"), _HEAD)
    try:
        return exact_head_text(row)
    except (codec.BadEntry, ValueError, TypeError, RecursionError):
        return None
