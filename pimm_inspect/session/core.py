"""The one front door: what the CLI, the UI, the Python API and the exports ask of the core, through one object.

A ``Session`` is built once from ``Settings`` and owns the persistent cache (checked for trust, never used inside a
run of the tree being read), the per-file read caches of live runs, and how trees are searched. Below it, ``load``,
``analysis`` and ``report`` are pure: files -> Run -> findings -> text or JSON.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..load.discover import RUN_MARKERS_TEXT, classify_dir, iter_runs, run_containing
from ..sources.confine import real_path
from .settings import Settings
from .store.disk_cache import DiskCache
from .store.trust import directory_problem

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.compare import AttemptsComparison, SidesComparison
    from ..evidence import RunRow
    from ..load.progress import ReadTracker
    from ..load.quick import RunGlance
    from ..model import Run

    from .dataset_sync import DatasetOptions, DatasetReport
    from .frames import RunsArg, Table
    from .fresh import Fresh
    from .row_index import RowIndex
    from .staged import CachingLoader, StageCallback
    from .store.cache import ReadCache

# Loading, analysis, the row cache and the staged loader are imported where first used: a command served from the
# cache (a warm ``show --json``) imports none of them (nor numpy).


class NotARunError(ValueError):
    """A folder that is not a run directory (a tree of runs, a folder inside a run, or nothing recognisable)."""

    def __init__(self, path: Path, message: str, inside: Path | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.inside = inside
        """The run ``path`` is part of, when it is inside one."""


def say_on_stderr(message: str) -> None:
    """The default for ``Session(on_problem=...)``: one line on stderr (module level: worker processes get it)."""
    try:
        print(f"pimm-inspect: {message}", file=sys.stderr)
    except (OSError, ValueError):
        pass  # a closed stderr: nothing more to say


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


class Session:
    """Discover, load, list, refresh and export runs with one set of settings (see the module docstring)."""

    def __init__(self, settings: Settings | None = None, *, clock: Callable[[], float] | None = None,
                 on_problem: Callable[[str], None] = say_on_stderr) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        self.on_problem = on_problem
        """Told why the cache is not used (each reason once): a directory others may write, one inside a run."""
        self.disk = self._disk_cache()
        """The persistent cache, or None (off, refused, or inside a run of the tree being read)."""
        self._clock = clock
        self._index: tuple[Path, RowIndex | None] | None = None
        """The row index ``stored_rows`` read last (for which folder), kept for the next batch of the same tree."""
        self._cache_real = ""
        """Where the cache directory really is, once resolved."""
        self._guarded: set[str] = set()
        """Run folders ``guard_cache`` found clear of the cache directory."""

    @cached_property
    def _fresh(self) -> Fresh:
        """Where each run folder found since really leads (``guard_cache``) and its entries (discovery): the check
        of its stored row right after takes them from here instead of resolving and listing it again."""
        from .fresh import Fresh

        return Fresh()

    @cached_property
    def staged(self) -> CachingLoader:
        """The staged loader: keeps a read cache per live run, so a refresh reads only what was appended."""
        from .staged import CachingLoader

        return CachingLoader(clock=self._clock, make_cache=self.read_cache, disk=self.disk)

    @cached_property
    def _transient(self) -> ReadCache:
        """The per-file read cache of one-shot commands (results on disk only)."""
        from .store.cache import ReadCache

        return ReadCache(disk=self.disk, keep_in_memory=False, min_store_s=self.settings.cache_min_decode_s)

    # -- the cache ------------------------------------------------------------------------------------------

    def _disk_cache(self) -> DiskCache | None:
        folder = self.settings.cache_dir
        if folder is None:
            return None
        problem = directory_problem(folder)
        if problem is not None:
            self.on_problem(f"{problem}: the cache is not used (like ssh with a key file others can change)")
            return None
        return DiskCache(folder, max_bytes=self.settings.cache_max_bytes, on_problem=self.on_problem)

    def read_cache(self) -> ReadCache:
        """A new per-file read cache (one per run followed live) on the session's disk cache."""
        from .store.cache import ReadCache

        return ReadCache(disk=self.disk, min_store_s=self.settings.cache_min_decode_s)

    def guard_cache(self, run_dirs: list[Path]) -> None:
        """Stop using the disk cache when it lies inside any of ``run_dirs``: no entry of any run is then written into
        a run (a relative or pointed-in cache place would otherwise fill one run with the others' entries)."""
        if self.disk is None:
            return
        for run_dir in run_dirs:
            if str(run_dir) in self._guarded:
                continue  # found clear by this session already (each use of the cache checks its run again)
            if not self._guard(run_dir, real_path(run_dir)):
                return

    def _guard(self, run_dir: Path, real: str) -> bool:
        """``guard_cache`` of one run folder that really leads to ``real``: False when the cache was dropped."""
        if not self._cache_real:  # resolved once, as ``DiskCache.usable_for`` does
            self._cache_real = real_path(self.disk.directory) if self.disk is not None else ""
        if _inside(self._cache_real, real):
            self.on_problem(f"the cache directory {self.disk.directory if self.disk else ''} is inside the run "
                            f"{run_dir}: the cache is not used (nothing is ever written into a run)")
            self._drop_disk()
            return False
        self._guarded.add(str(run_dir))
        self._fresh.note_real(self._absolute(run_dir), real)
        return True

    def _drop_disk(self) -> None:
        self.disk = None
        made = self.__dict__  # the loaders made so far (``cached_property``); those made later see ``disk``
        if "_transient" in made:
            self._transient.disk = None
        if "staged" in made:
            for cache in self.staged.caches.values():
                cache.disk = None

    # -- finding runs -----------------------------------------------------------------------------------------

    def iter_runs(self, root: Path | str, on_error: Callable[[Path, str], None] | None = None) -> Iterator[Path]:
        """Run directories under ``root`` as they are found (breadth-first), by the session's depth and link rules."""
        for path in iter_runs(Path(root), on_error, self.settings.max_depth, self.settings.follow_links,
                              self._keep_listing if self.disk is not None else None):
            self.guard_cache([path])
            yield path

    def _keep_listing(self, run_dir: Path, entries: Iterable[os.DirEntry[str]], real: str) -> None:
        """Keep a run folder's entries as discovery listed them and where it really leads, for the check of its
        stored row right after (and the cache's guard, which needs no resolving of its own then)."""
        if self.disk is None:
            return
        if str(run_dir) in self._guarded:
            self._fresh.note_real(self._absolute(run_dir), real)
        elif not self._guard(run_dir, real):
            return
        self._fresh.note_entries(self._absolute(run_dir), list(entries))

    def _absolute(self, path: Path) -> str:
        text = str(path)
        return text if text.startswith(os.sep) else str(Path(os.getcwd(), text))

    def discover_with_errors(self, root: Path | str) -> tuple[list[Path], list[tuple[Path, str]]]:
        """Run directories under ``root`` (sorted) and the folders that were not searched, with why."""
        errors: list[tuple[Path, str]] = []
        runs = sorted(self.iter_runs(root, lambda path, reason: errors.append((path, reason))),
                      key=lambda p: p.as_posix())
        return runs, errors

    def discover(self, root: Path | str) -> list[Path]:
        """Run directories under ``root`` (``root`` itself when it is a run), sorted."""
        return self.discover_with_errors(root)[0]

    def run_dir(self, path: Path | str) -> Path:
        """``path`` when it is a run directory; FileNotFoundError when it does not exist, NotARunError otherwise
        (naming the run it is inside, or pointing to ``discover`` for a folder of runs)."""
        path = Path(path)
        if not os.path.lexists(path):
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", str(path))
        owner = run_containing(path)
        if owner is not None:
            raise NotARunError(path, f"{path} is inside the run {owner}: load that run instead", owner)
        if not path.is_dir() or classify_dir(path.absolute()) is None:
            raise NotARunError(path, f"{path} is not a run directory (none of: {RUN_MARKERS_TEXT}); to find the "
                                     "runs under a folder use discover()")
        return path

    # -- loading ----------------------------------------------------------------------------------------------

    def load(self, path: Path | str) -> Run:
        """The analysed Run of the run directory ``path``; damaged content becomes findings, never an exception.
        FileNotFoundError / NotARunError for a path that is not a run (``run_dir``)."""
        return self.load_found(self.run_dir(path))

    def load_found(self, run_dir: Path, now: float | None = None, progress: ReadTracker | None = None) -> Run:
        """The analysed Run of a directory discovery found (not checked again); never raises for its content."""
        from ..analysis import analyze
        from ..load.safe import load_safely

        self.guard_cache([run_dir])
        return analyze(load_safely(Path(run_dir), cache=self._transient if self.disk is not None else None, now=now,
                                   progress=progress))

    def show_document(self, path: Path | str, base: Path | str = ".") -> dict[str, Any]:
        """The ``show --json`` document of one run (``report.json_doc.show_run``, its path relative to ``base``): from
        the disk cache while nothing the run was read from changed, else loaded, analysed and stored."""
        from .show_docs import show_document

        self.guard_cache([Path(path)])
        return show_document(Path(path), Path(base), self.disk,
                             lambda: self._transient if self.disk is not None else None,
                             self.settings.cache_min_decode_s)

    def row(self, path: Path | str) -> RunRow:
        """The ``ls`` row of one run (from the disk cache while nothing it was read from changed)."""
        from .rows import load_row

        self.guard_cache([Path(path)])
        return load_row(path, self.disk, self._transient if self.disk is not None else None)

    def rows(self, paths: list[Path], under: Path | None = None) -> Iterator[RunRow]:
        """The rows of many runs, in order (what ``ls`` prints and the UI's runs table shows): cached rows where
        still valid, the others loaded and analysed now by the session's worker processes. ``under``: the folder
        they were found in, all of them (its row index serves a warm tree at once, and is written again when it
        missed some); None: one entry per run."""
        from .rows import load_rows

        self.guard_cache(paths)
        return load_rows(paths, self.disk, self._transient if self.disk is not None else None, self.settings.jobs,
                         under, self._fresh)

    def stored_rows(self, paths: list[Path], under: Path | None = None) -> dict[Path, RunRow]:
        """The rows of ``paths`` still valid in the disk cache (stats and one small entry each, no run read), by path;
        the others are missing. ``under``: the folder they were found in (its row index is read once per session
        and serves every run it holds; without it, one entry per run)."""
        from .row_index import read_index, served_from
        from .store.row_cache import stored_row

        self.guard_cache(paths)
        found: dict[Path, RunRow] = {}
        disk = self.disk
        if disk is None:
            return found
        roots = [Path(path).absolute() for path in paths]
        if under is not None:
            key = Path(under).absolute()
            if self._index is None or self._index[0] != key:
                self._index = (key, read_index(disk, key))
            for i, row in served_from(self._index[1], disk, roots, self._fresh, self.settings.jobs).items():
                found[paths[i]] = row
        else:
            self._fresh.take([str(root) for root in roots])  # found for these rows: never for a later check
        for path, root in zip(paths, roots):
            if path in found:
                continue
            real = real_path(root)
            stored = stored_row(disk, root, real) if disk.usable_for(root, real) else None
            if stored is not None:
                found[path] = stored
        return found

    def stages(self, path: Path, on_stage: StageCallback | None = None,
               cancelled: Callable[[], bool] | None = None) -> Run:
        """The analysed Run of ``path``, reporting its stages to ``on_stage`` (quick facts, read progress, read
        done); raises ``LoadCancelled`` once ``cancelled()`` holds. A live run keeps its read cache for ``refresh``."""
        self.guard_cache([path])
        return self.staged.load(path, on_stage, cancelled)

    def row_in_stages(self, path: Path, on_stage: StageCallback | None = None,
                      cancelled: Callable[[], bool] | None = None) -> RunRow:
        """The row of a run read now in stages (``stages``: the runs table reads a big run so, with progress), stored
        in the row cache as ``rows`` stores one, so the next ``ls`` or runs table serves it from there."""
        from ..analysis.summary import run_row
        from .store.row_cache import build_and_store

        self.guard_cache([path])
        root = Path(path).absolute()

        def read() -> tuple[RunRow, bool]:
            run, reusable = self.staged.load_here(root, on_stage, cancelled)
            return run_row(run), reusable and self.staged.clock is None  # a test's fixed clock: never stored

        return build_and_store(root, lambda _root: read(), self.disk)

    def glance(self, path: Path) -> RunGlance | None:
        """The quick stage alone (header facts from the listing, small documents and tails), None when it fails."""
        return self.staged.glance(path)

    def refresh(self, run: Run) -> Run:
        """``run`` read again: a live run through its kept read cache (only appended bytes), others afresh."""
        return self.stages(run.root)

    # -- tables -----------------------------------------------------------------------------------------------

    def scalars(self, run: Run | Path | str, tags: tuple[str, ...] | list[str] | str = (), policy: str = "all",
                all_sources: bool = False) -> pd.DataFrame:
        """The tidy scalar table of a run (``Run.scalars``): tag, step, value, wall_time, attempt, source."""
        from ..analysis import scalar_frame
        from ..model import Run

        loaded = run if isinstance(run, Run) else self.load(run)
        frame: pd.DataFrame = scalar_frame(loaded, tags, policy, all_sources)
        return frame

    def compare(self, runs: Sequence[Run | Path | str], tags: Sequence[str] = (), policy: str = "newest",
                attempts: Sequence[int] = ()) -> SidesComparison:
        """``compare RUN RUN...``: per tag every run (or each of its ``attempts``) logged, the values side by side
        over the shared steps, exact, with their differences (``analysis.compare.compare_sides``); ValueError for an
        attempt a run does not have."""
        from ..analysis.compare import compare_sides, make_sides
        from ..model import Run

        loaded = [run if isinstance(run, Run) else self.load(run) for run in runs]
        sides, missing = make_sides(loaded, attempts)
        if missing:
            run, index = missing[0]
            raise ValueError(f"{run.name!r} has no attempt {index} (attempts: {[a.index for a in run.attempts]})")
        return compare_sides(sides, tags, policy)

    def compare_attempts(self, run: Run | Path | str, tags: Sequence[str] = ()) -> AttemptsComparison:
        """``compare RUN --attempts``: per replayed range, every copy of each step, per-step tags first."""
        from ..analysis.compare import compare_attempts
        from ..model import Run

        return compare_attempts(run if isinstance(run, Run) else self.load(run), tags)

    def table(self, root_or_runs: RunsArg, table: Table, tags: tuple[str, ...] | list[str] | str = (),
              policy: str = "all", all_sources: bool = False) -> pd.DataFrame:
        """One table of the Parquet dataset (``runs``, ``attempts``, ``findings``, ``checkpoints``, ``scalars``)
        for the runs under a ROOT or the runs given, as one DataFrame (``frames.table_frame``)."""
        from .frames import table_frame

        return table_frame(self, root_or_runs, table, tags, policy, all_sources)

    def export_dataset(self, root: Path, out: Path, options: DatasetOptions | None = None,
                       progress: Callable[[int, int, str], None] | None = None,
                       run_dirs: list[Path] | None = None, shard: tuple[int, int] | None = None) -> DatasetReport:
        """Write or bring up to date the Parquet dataset of every run under ``root`` in ``out`` (only changed runs
        are read again); ``DatasetProblem`` when ``out`` cannot be used. ``shard`` (K, N): only shard K's runs, into
        its own manifest part (``dataset_sync``)."""
        from .dataset_sync import DatasetOptions, export_dataset

        found = run_dirs if run_dirs is not None else self.discover(root)
        self.guard_cache(found)
        return export_dataset(root, found, out, options or DatasetOptions(), progress,
                              self._transient if self.disk is not None else None, shard)

    def close(self) -> None:
        """Stop background work (a prefetching child process)."""
        if "staged" in self.__dict__:  # never made: nothing started
            self.staged.close()


def default_session(**options: Any) -> Session:
    """A session from the environment and ``options`` (``Settings.from_env``'s keywords)."""
    return Session(Settings.from_env(**options))
