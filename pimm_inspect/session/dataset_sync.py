"""Export a tree of runs as a Parquet dataset, and bring an existing one up to date rewriting only what changed.

For each run found under ROOT: when the manifest holds the record of its last read (``load.read_record``, the rule
the ``ls`` row cache follows too: every file opened and folder listed, inside the run and outside it) and nothing
in it changed (checked by ``stat`` and folder listings alone), the export options and the writer match and its
five partition files exist, the run is not even loaded and its partitions are not touched. Otherwise it is
loaded (its read recorded), analysed and its five partitions are rewritten (each atomically), and its manifest
entry updated. A live run, a failed load or one that read a file modified just before is rewritten next time too.
Runs in the manifest that are no longer under ROOT are kept (their partitions stay queryable) unless ``prune``.
A run that cannot be loaded is exported with its findings; a bug while building its tables becomes an
``internal.export-failed`` finding of that run, and the export goes on.

Sharded (``shard=(K, N)``, a Slurm job array): only the runs whose ``shard_of`` is K, and no lock (file locks are
unreliable across the nodes of NFS or Lustre). Shard K writes only its runs' partitions and its own manifest part,
each by rename, so N shards started at once into one DIR never write the same file. The next unsharded export merges
every part into the manifest (the runs a part lists are known, not pruned or rewritten when unchanged) and removes it.
"""

from __future__ import annotations

import hashlib
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from .. import __version__
from .store.cache import ReadCache
from ..analysis import analyze
from ..load.read_record import ReadRecord, record_read, unchanged
from ..load.safe import load_reusable
from ..model import Finding, Run, Severity
from ..report.dataset import (DATASET_VERSION, TABLES, attempts_table, findings_table, run_tables, runs_table,
                              schema)
from ..report.dataset_compact import has_compact, remove_compact, write_compact
from ..report.safe_text import name_text
from ..report.dataset_store import (DatasetProblem, DatasetState, Manifest, RunEntry, encode_partition,
                                    has_partitions, locked, part_name, read_dataset, remove_part, remove_partitions,
                                    write_manifest, write_partition)

MANIFEST_EVERY_S = 10.0
"""The manifest is also saved this often during a long export, so an interrupted one resumes where it stopped."""


@dataclass(frozen=True, slots=True)
class DatasetOptions:
    """What the scalars table holds (as ``export RUN``), and whether runs gone from ROOT are pruned."""

    tags: tuple[str, ...] = ()
    policy: str = "all"
    all_sources: bool = False
    prune: bool = False
    compact: bool = False
    """Rebuild the compact copy (``report.dataset_compact``: one file per table) at the end; without it, an export
    that changes the partitions removes the compact files (they would show an older state)."""

    def as_json(self) -> dict[str, object]:
        """The options that decide the tables' content (stored in the manifest)."""
        return {"tags": list(self.tags), "policy": self.policy, "all_sources": self.all_sources}


@dataclass
class DatasetReport:
    """What an export did, by run id."""

    added: list[str] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept_missing: list[str] = field(default_factory=list)
    """In the dataset, no longer under ROOT, kept."""
    pruned: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """Runs whose tables could not be built (exported with an ``internal.export-failed`` finding)."""
    rewrite_all: str | None = None
    """Why every run was rewritten (new options or writer), None when only changed runs were."""
    prune_left: list[Path] = field(default_factory=list)
    """Partition folders of pruned runs that still held other files (left alone)."""
    seen: set[str] = field(default_factory=set)
    """Partition values of the runs found under ROOT (of this shard)."""
    compacted: bool = False
    """The compact files were rebuilt."""

    @property
    def changed(self) -> bool:
        return bool(self.added or self.rewritten or self.pruned)


def check_target(out: Path, run_dirs: list[Path]) -> None:
    """DatasetProblem when DIR is (inside) one of the runs, or holds one: the dataset never mixes with runs."""
    from .output_place import run_held, run_holding

    inside = run_holding(out, run_dirs)
    if inside is not None:
        raise DatasetProblem(f"{out} is inside the run {inside}: nothing is written inside a run directory; "
                             "choose a directory outside the runs")
    held = run_held(out, run_dirs)
    if held is not None:
        raise DatasetProblem(f"{out} holds the run {held}: choose a directory of its own for the dataset")


def run_id_of(run_dir: Path, root: Path) -> str:
    """The run's id: its path relative to ROOT, POSIX style (``.`` when ROOT is the run itself), by the one name
    escape (``name_text``: a backslash doubled, a byte that is not UTF-8 ``\\xNN``), as ``ls --json`` writes it."""
    return name_text(Path(os.path.relpath(run_dir, root)).as_posix())


FIRST_ESCAPED_VERSION = 2
"""The first dataset version whose run ids are escaped by ``name_text``: an older dataset's entry whose escaped id
is a run found now is that run (its old partitions are replaced, not kept as a run gone from ROOT)."""


def _export_failed(run: Run, exc: BaseException) -> Run:
    """The run reduced to its identity and findings plus ``internal.export-failed``, whose tables always build."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    finding = Finding("internal.export-failed", Severity.ERROR,
                      f"the dataset tables of this run could not be built: {type(exc).__name__}: {exc}", (),
                      None, f"Please report this bug{where}. The run's other tables are empty in this export.")
    return Run(root=run.root, kind=run.kind, era=run.era, status=run.status, name=run.name,
               findings=(*run.findings, finding))


def _now() -> datetime:
    return datetime.now(timezone.utc)


def shard_of(run_id: str, count: int) -> int:
    """The shard (0 .. count-1) of a run: the SHA-256 of its id (its path relative to ROOT, as in the dataset's
    ``run_id`` column), as an integer, modulo ``count``; the same on every machine and Python (not ``hash``)."""
    return int(hashlib.sha256(run_id.encode("utf-8", "surrogateescape")).hexdigest(), 16) % count


def _merged(state: DatasetState, real_root: str, options: DatasetOptions, out: Path
            ) -> tuple[Manifest, str | None]:
    """The main manifest with every shard's part merged in (per run, the entry written last), and why every run is
    rewritten (None: only changed ones). Entries from a manifest of other options or another writer are kept as
    known runs, but not trusted as unchanged."""
    for manifest in state.manifests:
        if manifest.root != real_root:
            raise DatasetProblem(f"{out} is the dataset of {manifest.root}, not of {real_root}: export that root "
                                 "again, or choose a new directory")
    merged = state.main or Manifest(root=real_root, options=options.as_json())
    reason = None
    for manifest in state.manifests:
        if manifest.options != options.as_json():
            reason = "the options differ from the last export's (--tag, --policy, --all-sources)"
        elif (manifest.dataset_version, manifest.pimm_inspect_version) != (DATASET_VERSION, __version__):
            reason = reason or (f"it was written by pimm-inspect {manifest.pimm_inspect_version} (dataset version "
                                f"{manifest.dataset_version})")
        else:
            continue
        for entry in manifest.runs.values():
            entry.read = None  # rewritten: what it was written from no longer decides
    for part in state.parts:
        for value, entry in part.manifest.runs.items():
            known = merged.runs.get(value)
            if known is None or entry.written_at >= known.written_at:
                merged.runs[value] = entry
    return merged, reason


def export_dataset(root: Path, run_dirs: list[Path], out: Path, options: DatasetOptions = DatasetOptions(),
                   progress: Callable[[int, int, str], None] | None = None, cache: ReadCache | None = None,
                   shard: tuple[int, int] | None = None) -> DatasetReport:
    """Write or update the dataset of the runs ``run_dirs`` found under ``root`` in ``out`` (see the module
    docstring); DatasetProblem when ``out`` cannot be used. ``cache``: the session's per-file cache (None: none).
    ``shard`` (K, N): only the runs of shard K (``shard_of``), without the lock, into shard K's own manifest part."""
    check_target(out, run_dirs)
    state = read_dataset(out)  # refuses a directory that is not a dataset before anything (even the lock) is made
    if shard is not None:
        return _export_shard(root, run_dirs, out, options, progress, cache, shard, state)
    with locked(out):
        state = read_dataset(out)
        manifest, reason = _merged(state, os.path.realpath(root), options, out)
        if not options.compact:
            remove_compact(out)  # the partitions may change: compact files would show an older state
        report = DatasetReport(rewrite_all=reason)
        if state.main is None and not state.parts:
            write_manifest(out, manifest)  # from now on DIR is a dataset, even if this export is interrupted
        migrating = manifest.dataset_version < FIRST_ESCAPED_VERSION
        manifest.options, manifest.dataset_version, manifest.pimm_inspect_version = (
            options.as_json(), DATASET_VERSION, __version__)
        _sync(root, run_dirs, out, options, manifest.runs, manifest.runs, report, progress, cache,
              partial(write_manifest, out, manifest))
        _missing(out, manifest, set(manifest.runs) - report.seen, options, report, migrating)
        write_manifest(out, manifest)
        for part in state.parts:  # merged: the manifest lists their runs now
            remove_part(out, part)
        if options.compact and (report.changed or state.parts or not has_compact(out)):
            write_compact(out, manifest.runs)
            report.compacted = True
    return report


def _export_shard(root: Path, run_dirs: list[Path], out: Path, options: DatasetOptions,
                  progress: Callable[[int, int, str], None] | None, cache: ReadCache | None, shard: tuple[int, int],
                  state: DatasetState) -> DatasetReport:
    """Shard K of N: its runs' partitions and its own manifest part, each written by rename; no lock, so N shards
    (a Slurm job array) may write one DIR at once, each touching only files no other shard writes."""
    index, count = shard
    real_root = os.path.realpath(root)
    known, reason = _merged(state, real_root, options, out)
    remove_compact(out)  # the partitions are about to change; only the merge rebuilds the compact files
    name = part_name(shard)
    own = next((p.manifest for p in state.parts if p.name == name), None)
    part = Manifest(root=real_root, options=options.as_json(), shard=shard,
                    runs=dict(own.runs) if own is not None else {})  # what it listed stays expected, not pruned
    write_manifest(out, part, name)  # before any partition: from now on DIR is a dataset for the other shards too
    report = DatasetReport(rewrite_all=reason)
    mine = [d for d in run_dirs if shard_of(run_id_of(d, root), count) == index]
    _sync(root, mine, out, options, known.runs, part.runs, report, progress, cache,
          partial(write_manifest, out, part, name))
    report.kept_missing = [e.run_id for v, e in sorted(known.runs.items())
                           if v not in report.seen and shard_of(e.run_id, count) == index]
    write_manifest(out, part, name)
    return report


def _sync(root: Path, run_dirs: list[Path], out: Path, options: DatasetOptions, known: dict[str, RunEntry],
          written: dict[str, RunEntry], report: DatasetReport, progress: Callable[[int, int, str], None] | None,
          cache: ReadCache | None, save: Callable[[], None]) -> None:
    """Bring the partitions of ``run_dirs`` up to date: ``known`` tells what each was written from, ``written``
    receives the entry of every run found (``save`` stores it: the manifest, or a shard's part)."""
    # The per-file cache's entries are not a run's files.
    cache_dir = str(cache.disk.directory) if cache is not None and cache.disk is not None else None
    last_save = time.monotonic()
    for i, run_dir in enumerate(run_dirs, start=1):
        run_id = run_id_of(run_dir, root)
        value = encode_partition(run_id)
        if value in report.seen:
            continue  # two paths of one run (a link found twice); the first one wins
        report.seen.add(value)
        if progress is not None:
            progress(i, len(run_dirs), run_id)
        stamp = _now().isoformat(timespec="seconds")
        entry = known.get(value)
        if entry is not None and entry.read is not None and unchanged(entry.read) and has_partitions(out, value):
            entry.seen_at = stamp
            written[value] = entry
            report.unchanged.append(run_id)
            continue
        record = _write_run(run_dir, run_id, value, out, options, report, cache, cache_dir)
        written[value] = RunEntry(run_id=run_id, read=record if record is not None and record.reusable else None,
                                  written_at=stamp, seen_at=stamp)
        (report.added if entry is None else report.rewritten).append(run_id)
        if time.monotonic() - last_save > MANIFEST_EVERY_S:
            save()
            last_save = time.monotonic()


def _missing(out: Path, manifest: Manifest, gone: set[str], options: DatasetOptions, report: DatasetReport,
             migrating: bool) -> None:
    """Runs of the manifest no longer under ROOT: kept (named in the report), or pruned."""
    for value in sorted(gone):
        run_id = manifest.runs[value].run_id
        if migrating and encode_partition(name_text(run_id)) in report.seen:  # the same run, under its escaped id now
            remove_partitions(out, value)
            del manifest.runs[value]
        elif options.prune:
            report.prune_left += remove_partitions(out, value)
            del manifest.runs[value]
            report.pruned.append(run_id)
        else:
            report.kept_missing.append(run_id)


def _write_run(run_dir: Path, run_id: str, value: str, out: Path, options: DatasetOptions,
               report: DatasetReport, cache: ReadCache | None, cache_dir: str | None) -> ReadRecord | None:
    """Load one run and write its five partitions; returns the record of what its read used, or None when building
    its tables hit a bug (then exported as an ``internal.export-failed`` finding)."""
    run, read = record_read(run_dir, partial(load_reusable, run_dir, cache), cache_dir)  # as an `ls` row is made
    record: ReadRecord | None = read
    exported_at = _now()
    try:
        run = analyze(run)
        tables = run_tables(run, run_id, exported_at, options.tags, options.policy, options.all_sources)
    except Exception as exc:  # one run's bug must not stop the export of a thousand
        report.failed.append(run_id)
        try:
            failed = _export_failed(run, exc)
            tables = {"runs": runs_table(failed, run_id, exported_at), "attempts": attempts_table(failed, run_id),
                      "findings": findings_table(failed, run_id), "checkpoints": schema("checkpoints").empty_table(),
                      "scalars": schema("scalars").empty_table()}
        except Exception:  # not even the run's identity builds: its old partitions (if any) stay as they were
            return None
        record = None
    for table_name in TABLES:
        write_partition(tables[table_name], out, table_name, value)
    return record
