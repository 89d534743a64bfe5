"""The Parquet dataset on disk: partition names, atomic partition writes, the manifest, the lock.

Layout: ``DIR/<table>/run=<value>/part-0.parquet`` for each of the five tables and each run, plus
``DIR/_pimm_inspect_manifest.json`` (what each run was written from), ``DIR/.pimm-inspect.lock`` and, after a
sharded export (``--shard K/N``), one manifest part per shard, ``DIR/_pimm_inspect_manifest-K-of-N.json``, which the
next unsharded export merges into the manifest. Names that
start with ``_`` or ``.`` are skipped by Hive-style readers (Spark, DuckDB's ``*/*.parquet`` glob never sees them).

Partition values (``encode_partition``): the run id's UTF-8 bytes with every byte outside ``A-Z a-z 0-9 - _ .``
written as ``%XX`` (upper-case hex), which is how Hive, Spark and DuckDB escape partition values, so they decode
``run`` back to the run id; a byte of the folder name that is not UTF-8 is written ``~XX`` (a ``%XX`` of it would
not decode to text, and DuckDB refuses the whole table then). The result is always one safe path component of
ASCII letters, digits, ``-_.%~``: no ``/``, ``=``, control character or non-ASCII byte, never ``.`` or ``..``
alone (it follows ``run=``). A value over 200 characters keeps its first part and ends in ``~~`` and 32 hex digits
of the id's SHA-256, so it cannot be decoded; the ``run_id`` column always holds the id itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .. import __version__
from ..load.read_record import ReadRecord, flat, from_flat
from .dataset import DATASET_VERSION, TABLES
from .dataset_fs import DatasetProblem as DatasetProblem  # raised by every function here; the CLI catches it
from .dataset_fs import (entries, is_regular, open_lock, opened_dir, read_regular, rmdir, subdir,
                         unlink, write_atomically)

if TYPE_CHECKING:
    import pyarrow as pa

PARTITION_KEY = "run"
PART_FILE = "part-0.parquet"
MANIFEST = "_pimm_inspect_manifest.json"
LOCK = ".pimm-inspect.lock"
MANIFEST_FORMAT = "pimm-inspect parquet dataset"
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
MAX_VALUE_CHARS = 200
"""Longest partition value kept whole (a path component holds 255 bytes, ``run=`` included)."""
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The value Hive and Spark read as NULL: a run folder of that name gets its first ``_`` escaped."""


def encode_partition(run_id: str) -> str:
    """The ``run=`` value of a run id: a reversible, filesystem-safe percent-encoding (see the module docstring)."""
    raw = os.fsencode(run_id)
    parts = []  # one string per character, so a shortened value never splits one
    for char in raw.decode("utf-8", "surrogateescape"):
        if "\udc80" <= char <= "\udcff":  # a byte that is not UTF-8 (os.fsdecode's surrogate escape)
            parts.append(f"~{ord(char) - 0xDC00:02X}")
        else:
            parts.append("".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in char.encode("utf-8")))
    value = "".join(parts)
    if value == _HIVE_NULL:
        value = "%5F" + value[1:]
    if len(value) <= MAX_VALUE_CHARS:
        return value
    kept, length = [], 0
    for part in parts:
        if length + len(part) > 160:
            break
        kept.append(part)
        length += len(part)
    return "".join(kept) + "~~" + hashlib.sha256(raw).hexdigest()[:32]


def decode_partition(value: str) -> str:
    """The run id a ``run=`` value encodes (undecodable bytes as surrogate escapes, as ``os.fsdecode``);
    ValueError for a shortened value (``~~`` and a digest) or one this encoding never makes."""
    if "~~" in value:
        raise ValueError(f"{value!r} is a shortened partition value: read the run_id column")
    out = bytearray()
    i = 0
    while i < len(value):
        char = value[i]
        if char in "%~":
            out.append(int(value[i + 1:i + 3], 16))
            i += 3
        elif ord(char) < 128 and ord(char) in _SAFE:
            out.append(ord(char))
            i += 1
        else:
            raise ValueError(f"{value!r} is not a partition value of this dataset")
    return os.fsdecode(bytes(out))


def partition_dir(out: Path, table: str, value: str) -> Path:
    """``DIR/<table>/run=<value>``."""
    return out / table / f"{PARTITION_KEY}={value}"


_VALUE = re.compile(r"[A-Za-z0-9._%~-]{1,255}\Z")
"""Every partition value ``encode_partition`` makes is one name of these characters (no ``/``: never a path)."""


def valid_value(value: str) -> bool:
    """True for a partition value this export could have written (one path component, never ``/`` or empty)."""
    return bool(_VALUE.match(value))


def _remove_leftovers(folder_fd: int) -> None:
    """Delete temporary files a killed export left in a partition folder (only ours: ``.part-0.parquet.tmp-*``)."""
    try:
        names = entries(folder_fd)
    except OSError:
        return
    for name in names:
        if name.startswith(f".{PART_FILE}.tmp-"):
            try:
                unlink(folder_fd, name)
            except OSError:
                pass


def _folder_name(value: str) -> str:
    if not valid_value(value):
        raise DatasetProblem(f"{value!r} is not a partition name this export writes: refused")
    return f"{PARTITION_KEY}={value}"


def write_partition(table: pa.Table, out: Path, table_name: str, value: str) -> Path:
    """Write one partition atomically: a temporary file in the same folder, then a rename over ``part-0.parquet``
    (a reader sees the old file or the new one, never half of one). Every folder is entered without following a
    link (``dataset_fs``): a partition folder that is a link is refused, never written through."""
    import pyarrow.parquet as pq  # the Parquet writer: only `export --format parquet` needs it

    folder = partition_dir(out, table_name, value)
    name = _folder_name(value)
    with opened_dir(out, create=True) as out_fd, \
            subdir(out_fd, table_name, str(out / table_name), create=True) as table_fd, \
            subdir(_fd(table_fd), name, str(folder), create=True) as folder_fd:
        _remove_leftovers(_fd(folder_fd))
        write_atomically(_fd(folder_fd), PART_FILE, lambda handle: pq.write_table(table, handle, compression="zstd"),
                         str(folder / PART_FILE))
    return folder / PART_FILE


def _fd(fd: int | None) -> int:
    assert fd is not None  # made with create=True
    return fd


def remove_partitions(out: Path, value: str) -> list[Path]:
    """Delete one run's partition files and folders (only the files this export writes); the folders that still
    hold something else are returned and left alone. Nothing is reached through a link: a partition folder that is
    a link is refused (``DatasetProblem``), and a ``part-0.parquet`` that is one is removed itself, not its target."""
    kept = []
    name = _folder_name(value)
    with opened_dir(out) as out_fd:
        for table_name in TABLES:
            folder = partition_dir(out, table_name, value)
            with subdir(out_fd, table_name, str(out / table_name)) as table_fd:
                if table_fd is None:
                    continue
                with subdir(table_fd, name, str(folder)) as folder_fd:
                    if folder_fd is None:
                        continue
                    _remove_leftovers(folder_fd)
                    unlink(folder_fd, PART_FILE)
                if not rmdir(table_fd, name):
                    kept.append(folder)
    return kept


def has_partitions(out: Path, value: str) -> bool:
    """True when every table has its file for this run (a regular file in a real folder, not a link)."""
    if not valid_value(value):
        return False
    try:
        with opened_dir(out) as out_fd:
            for table_name in TABLES:
                with subdir(out_fd, table_name, table_name) as table_fd:
                    if table_fd is None:
                        return False
                    with subdir(table_fd, _folder_name(value), value) as folder_fd:
                        if folder_fd is None or not is_regular(folder_fd, PART_FILE):
                            return False
    except DatasetProblem:
        return False  # a link where a folder should be: rewriting the run refuses it with the full message
    return True


@dataclass
class RunEntry:
    """What one run's partitions were written from."""

    run_id: str
    read: ReadRecord | None
    """What the run's last read used (``load.read_record``); None: always rewrite (a live run, a failed load or
    export, a file modified just before the read, or a manifest of an older pimm-inspect)."""
    written_at: str = ""
    seen_at: str = ""
    """When an export last found the run under ROOT."""


@dataclass
class Manifest:
    """``DIR/_pimm_inspect_manifest.json``: the dataset's root, options, writer and per-run fingerprints."""

    root: str
    options: dict[str, Any]
    runs: dict[str, RunEntry] = field(default_factory=dict)
    """By partition value."""
    dataset_version: int = DATASET_VERSION
    pimm_inspect_version: str = __version__
    shard: tuple[int, int] | None = None
    """(K, N) for shard K of N's manifest part; None for the merged manifest."""

    def to_json(self) -> str:
        """The manifest as JSON text (ASCII: file names with undecodable bytes round-trip as escapes)."""
        return json.dumps({
            "format": MANIFEST_FORMAT, "dataset_version": self.dataset_version,
            "pimm_inspect_version": self.pimm_inspect_version, "root": self.root, "options": self.options,
            **({"shard": list(self.shard)} if self.shard is not None else {}),
            "runs": {value: {"run_id": e.run_id, "read": _read_json(e.read), "written_at": e.written_at,
                             "seen_at": e.seen_at} for value, e in sorted(self.runs.items())},
        }, indent=1, ensure_ascii=True)


_SEP = "\0"
"""Between the parts of a stored read record's dependencies (the one character no path or fingerprint holds)."""


def _read_json(record: ReadRecord | None) -> dict[str, Any] | None:
    """A read record as JSON: its start time and its dependencies as one string (kind, path, fingerprint, kind, ...
    joined by NUL), quick to write and parse for thousands of runs."""
    if record is None:
        return None
    return {"started_s": record.started_s, "deps": _SEP.join(flat(record))}


def _read_of(data: Any) -> ReadRecord | None:
    """A run's stored read record; None when there is none (a manifest without one: the run is rewritten)."""
    if data is None:
        return None
    deps = data.get("deps") if isinstance(data, dict) else None
    if not isinstance(deps, str):
        raise ValueError("a run's read record has no dependency string")
    record = from_flat(data.get("started_s"), tuple(deps.split(_SEP)) if deps else ())
    if record is None:
        raise ValueError("a run's read record is damaged")
    return record


def _entry(data: Any) -> RunEntry:
    if not isinstance(data, dict) or not isinstance(data.get("run_id"), str):
        raise ValueError("a run entry is not an object with a run_id")
    return RunEntry(run_id=data["run_id"], read=_read_of(data.get("read")), written_at=str(data.get("written_at", "")),
                    seen_at=str(data.get("seen_at", "")))


def _parse_manifest(data_bytes: bytes, path: Path) -> Manifest:
    """A manifest (or manifest part) from its bytes; DatasetProblem when damaged or naming a partition this export
    could not have written (a key with ``/``, ``..``, an absolute path): nothing is overwritten or deleted then."""
    try:
        data = json.loads(data_bytes.decode("utf-8"))
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
            raise ValueError("not a pimm-inspect manifest")
        runs = data.get("runs")
        if not isinstance(runs, dict) or not isinstance(data.get("root"), str):
            raise ValueError("no root or runs")
        for value in runs:
            if not valid_value(str(value)):
                raise ValueError(f"its run entry {str(value)[:80]!r} is not a partition name this export writes "
                                 "(refused: nothing is written or deleted by it)")
        options = data.get("options")
        shard = data.get("shard")
        return Manifest(root=data["root"], options=options if isinstance(options, dict) else {},
                        runs={str(value): _entry(entry) for value, entry in runs.items()},
                        dataset_version=int(data.get("dataset_version", 0)),
                        pimm_inspect_version=str(data.get("pimm_inspect_version", "")),
                        shard=(int(shard[0]), int(shard[1])) if isinstance(shard, list) and len(shard) == 2 else None)
    except (ValueError, TypeError, RecursionError) as exc:
        raise DatasetProblem(f"{path} cannot be read ({exc}): remove the directory to export afresh") from exc


_PART = re.compile(r"_pimm_inspect_manifest-([0-9]{1,6})-of-([0-9]{1,6})\.json\Z")
"""A shard's manifest part (``export --shard K/N``): ``_pimm_inspect_manifest-K-of-N.json``."""
_OURS_BEFORE_A_MANIFEST = (LOCK, f".{MANIFEST[:-5]}")
"""Names an export may make in DIR before any manifest exists: the lock, temporary files of a manifest (part)."""


def part_name(shard: tuple[int, int]) -> str:
    """The file name of shard K of N's manifest part."""
    return f"{MANIFEST[:-5]}-{shard[0]}-of-{shard[1]}.json"


@dataclass
class ManifestPart:
    """One shard's manifest part as read: its file name, its bytes (to delete it only while unchanged), its data."""

    name: str
    data: bytes
    manifest: Manifest


@dataclass
class DatasetState:
    """Every manifest of DIR: the merged one (``MANIFEST``) and the parts shards wrote since."""

    main: Manifest | None
    parts: list[ManifestPart] = field(default_factory=list)

    @property
    def manifests(self) -> list[Manifest]:
        return ([self.main] if self.main is not None else []) + [p.manifest for p in self.parts]


def read_dataset(out: Path) -> DatasetState:
    """DIR's manifest and manifest parts; an empty state when DIR is new or empty. DatasetProblem when DIR holds
    something else (no manifest, no part, but other files), a manifest is damaged, is a link, or names a partition
    this export could not have written."""
    if not out.exists():
        return DatasetState(None)
    if not out.is_dir():
        raise DatasetProblem(f"{out} is not a directory")
    with opened_dir(out) as out_fd:
        names = entries(out_fd)
        if MANIFEST not in names and not any(_PART.match(n) for n in names):
            # A shard starting at the same time renames its part in before it makes any folder: a second listing
            # sees the part of any folder the first one saw.
            names = entries(out_fd)
        main_bytes = read_regular(out_fd, MANIFEST, str(out / MANIFEST)) if MANIFEST in names else None
        parts = []
        for name in sorted(n for n in names if _PART.match(n)):
            data = read_regular(out_fd, name, str(out / name))
            if data is not None:
                parts.append(ManifestPart(name, data, _parse_manifest(data, out / name)))
        if main_bytes is None and not parts:
            if any(not name.startswith(_OURS_BEFORE_A_MANIFEST) for name in names):
                raise DatasetProblem(f"{out} is not empty and holds no pimm-inspect dataset ({MANIFEST} is "
                                     "missing): give a new or empty directory")
            return DatasetState(None)
    main = _parse_manifest(main_bytes, out / MANIFEST) if main_bytes is not None else None
    return DatasetState(main, parts)


def read_manifest(out: Path) -> Manifest | None:
    """The dataset's merged manifest; None when DIR is new or empty (or holds only shards' parts). DatasetProblem as
    ``read_dataset``."""
    return read_dataset(out).main


def remove_part(out: Path, part: ManifestPart) -> bool:
    """Delete a merged manifest part, unless a shard rewrote it since it was read (then it is merged next time)."""
    with opened_dir(out) as out_fd:
        if read_regular(out_fd, part.name, str(out / part.name)) != part.data:
            return False
        unlink(out_fd, part.name)
    return True


def write_manifest(out: Path, manifest: Manifest, name: str = MANIFEST) -> None:
    """Write the manifest (or a shard's part, ``name``) atomically (temporary file, then rename; never through a
    link)."""
    text = (manifest.to_json() + "\n").encode("utf-8")
    with opened_dir(out, create=True) as out_fd:
        write_atomically(out_fd, name, lambda handle: handle.write(text), str(out / name))


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold ``DIR/.pimm-inspect.lock`` for the export: a second export into the same DIR fails at once."""
    try:
        import fcntl  # POSIX only: elsewhere the export runs without the lock
    except ImportError:
        yield
        return
    with opened_dir(out, create=True) as out_fd:
        handle = open_lock(out_fd, LOCK, str(out / LOCK))
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise DatasetProblem(f"another export is writing {out} (its lock {LOCK} is held)") from exc
        yield
    finally:
        os.close(handle)
