"""Cached ``ls`` rows: identical to a fresh load, reused only while nothing the run was read from changed."""

from __future__ import annotations

import dataclasses
import json
import io
import os
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.analysis import analyze
from pimm_inspect.cli.main import cli
from pimm_inspect.load import file_deps, safe
from pimm_inspect.load.assemble import load_run_and_liveness
from pimm_inspect.session import Session, Settings, rows
from pimm_inspect.session.store import disk_cache, row_cache
from pimm_inspect.session.store.cache import ReadCache
from tests.cache_support import ls_stdout, quiet_copy, spy_builds

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
ALL = pimm_inspect.discover(RUNS)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_ls_identical_with_and_without_cache(path, tmp_path, monkeypatch):
    """Text and JSON, no cache / cold / warm, on every fixture; the warm call loads nothing it need not."""
    cache = tmp_path / "cache"
    fresh, storable = rows.build_row(path.absolute())
    outputs = []
    for setting in ("off", str(cache), str(cache)):
        monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", setting)
        built = spy_builds(monkeypatch, rows, "build_row")
        outputs.append((ls_stdout(path), ls_stdout(path, "--json")))
    assert outputs[0] == outputs[1] == outputs[2]
    assert built == ([] if storable else [path.absolute()] * 2)
    assert Session().row(path) == fresh


def test_ls_of_the_whole_tree_identical_and_warm_from_rows(tmp_path, monkeypatch):
    tree = quiet_copy(RUNS, tmp_path / "runs")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    reference = (ls_stdout(tree), ls_stdout(tree, "--json"))
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    assert (ls_stdout(tree), ls_stdout(tree, "--json")) == reference
    built = spy_builds(monkeypatch, rows, "build_row")
    assert (ls_stdout(tree), ls_stdout(tree, "--json")) == reference
    assert built == []  # no run of the quiet tree is live: every row came from the cache
    assert len(json.loads(reference[1])["runs"]) == len(ALL)


def _copy(name: str, tmp_path: Path) -> Path:
    """A copy of a fixture run with its files' mtimes kept (old enough for its row to be stored)."""
    run = tmp_path / "runs" / name
    shutil.copytree(RUNS / name, run, symlinks=True)
    return run


def _stored_then(run: Path, change, monkeypatch, tmp_path, *, differs: bool | None = True) -> None:
    """Store the run's row, apply ``change``, and check the next row is rebuilt and equals a fresh load."""
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    before = Session().row(run)
    disk = Session().disk
    assert row_cache.stored_row(disk, run.absolute()) == before
    change(run)
    assert row_cache.stored_row(disk, run.absolute()) is None  # the change shows in a fingerprint
    built = spy_builds(monkeypatch, rows, "build_row")
    after = Session().row(run)
    assert built == [run.absolute()]
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    assert after == rows.build_row(run.absolute())[0]
    if differs is not None:
        assert (after != before) is differs


def test_grown_train_log_is_never_a_stale_row(tmp_path, monkeypatch):
    def grow(run: Path) -> None:
        log = run / "train.log"
        last = next(line for line in reversed(log.read_text().splitlines()) if "Train: [" in line)
        with open(log, "a") as fh:  # one more epoch's first steps
            fh.write(last.replace("09:01:00", "09:01:02").replace("[3/3][25/25]", "[4/4][5/25]") + "\n")

    _stored_then(_copy("e2_clean", tmp_path), grow, monkeypatch, tmp_path)


def test_new_event_file_in_the_run_is_never_a_stale_row(tmp_path, monkeypatch):
    other = next((RUNS / "e2_rollback").glob("events.out.tfevents.*"))

    def add(run: Path) -> None:
        shutil.copy2(other, run / other.name)

    _stored_then(_copy("e2_clean", tmp_path), add, monkeypatch, tmp_path)


def test_deleted_event_file_is_never_a_stale_row(tmp_path, monkeypatch):
    def delete(run: Path) -> None:
        for path in run.glob("events.out.tfevents.*"):
            path.unlink()

    _stored_then(_copy("tb_plain", tmp_path) / "runs" / "baseline", delete, monkeypatch, tmp_path)


def test_new_checkpoint_is_never_a_stale_row(tmp_path, monkeypatch):
    unsafe = RUNS / "e2_unsafe_checkpoint" / "model"
    pth = next(p for p in sorted(unsafe.rglob("*.pth")) if p.is_file())

    def add(run: Path) -> None:
        shutil.copy2(pth, run / "model" / "model_last.pth")

    _stored_then(_copy("e2_clean", tmp_path), add, monkeypatch, tmp_path)


def test_checkpoint_marker_removed_deep_in_model_is_never_a_stale_row(tmp_path, monkeypatch):
    def remove(run: Path) -> None:
        (run / "model" / "last" / "trainer.dcp" / ".complete").unlink()

    _stored_then(_copy("e2_clean", tmp_path), remove, monkeypatch, tmp_path, differs=None)


def test_new_wandb_folder_is_never_a_stale_row(tmp_path, monkeypatch):
    source = next((RUNS / "wandb_clean" / "wandb").iterdir())

    def add(run: Path) -> None:
        shutil.copytree(source, run / "wandb" / source.name.replace("clean001", "other002"))

    _stored_then(_copy("e2_wandb", tmp_path), add, monkeypatch, tmp_path)


def test_new_wandb_folder_in_the_launch_directory_is_never_a_stale_row(tmp_path, monkeypatch):
    """A dependency outside the run: pimm's ``<launch cwd>/wandb/`` holds the run's W&B folders."""
    launch = _copy("rw_launch_cwd_wandb", tmp_path)
    run = launch / "exp" / "panda" / "semseg" / "semseg-drift"
    source = sorted((launch / "wandb").iterdir())[-1]

    def add(_run: Path) -> None:
        shutil.copytree(source, launch / "wandb" / source.name.replace("081404", "091500"))

    _stored_then(run, add, monkeypatch, tmp_path)


def test_a_file_appearing_in_a_listed_folder_is_never_a_stale_row(tmp_path, monkeypatch):
    """Any new name in a folder the load listed counts, even one the readers would skip."""
    def touch(run: Path) -> None:
        (run / "notes.txt").write_text("hello")

    _stored_then(_copy("e2_clean", tmp_path), touch, monkeypatch, tmp_path, differs=False)


def test_wandb_sync_marker_and_settings_reach_show_through_the_per_file_cache(tmp_path, monkeypatch):
    """The per-file W&B result is keyed by the folder's files and the ``settings`` beside it, not only its log."""
    run = _copy("wandb_offline_entity", tmp_path)
    folder = next((run / "wandb").iterdir())
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))

    def show() -> str:
        result = CliRunner().invoke(cli, ["show", str(run), "--json"])
        assert result.exit_code == 0, result.output
        return result.stdout

    before = show()
    (run / "wandb" / "settings").write_text("[default]\nbase_url = https://wandb.example.org\nentity = team-x\n")
    with_settings = show()
    log = next(folder.glob("run-*.wandb"))
    (folder / (log.name + ".synced")).write_text("")
    synced = show()
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    assert synced == show() != with_settings
    (folder / (log.name + ".synced")).unlink()
    assert with_settings == show() != before


def test_live_and_racy_runs_get_no_stored_row(tmp_path, monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    disk = Session().disk
    fresh = tmp_path / "fresh"
    shutil.copytree(RUNS / "e2_clean", fresh, copy_function=shutil.copy)  # mtimes now: within RACY_S
    Session().row(fresh)
    assert row_cache.stored_row(disk, fresh.absolute()) is None
    run = _copy("e2_clean", tmp_path)
    monkeypatch.setattr(safe, "load_run_and_liveness", lambda root, cache=None: (load_run_and_liveness(root, cache=cache)[0], True))
    Session().row(run)
    assert row_cache.stored_row(disk, run.absolute()) is None
    monkeypatch.undo()
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    Session().row(run)
    assert row_cache.stored_row(disk, run.absolute()) is not None


def test_damaged_or_future_row_entries_are_ignored_and_rebuilt(tmp_path, monkeypatch):
    run = _copy("e2_rollback", tmp_path)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    reference = ls_stdout(run, "--json")
    disk = Session().disk
    entry = disk._entry(row_cache.ROW_KIND, run.absolute(), "", disk_cache.code_version(row_cache.ROW_CODE))[0]
    good = entry.read_bytes()
    entry.write_bytes(good[:-7] + b"garbage")
    built = spy_builds(monkeypatch, rows, "build_row")
    assert ls_stdout(run, "--json") == reference and built == [run.absolute()]
    assert entry.read_bytes() != good[:-7] + b"garbage"  # replaced by a valid entry
    made_s, flat, row = row_cache.stored_entry(disk, run.absolute())
    assert row_cache.stored_row(disk, run.absolute()) == row
    row_cache.store_entry(disk, run.absolute(), made_s, flat[:-1], row)
    assert row_cache.stored_row(disk, run.absolute()) is None  # a dependency list cut short: damaged
    row_cache.store_entry(disk, run.absolute(), made_s + 3600.0, flat, row)
    assert row_cache.stored_row(disk, run.absolute()) is None  # made "in the future": the clock went back


def _probes(monkeypatch) -> list[str]:
    """Every path stat'ed from now on (os.stat / os.lstat: exists, is_dir, realpath, Path.stat ...)."""
    seen: list[str] = []
    real_stat, real_lstat = os.stat, os.lstat

    def note(path) -> None:
        if not isinstance(path, int):
            text = os.fsdecode(os.fspath(path))
            seen.append(text if os.path.isabs(text) else os.path.join(os.getcwd(), text))

    def stat(path, *args, **kwargs):
        note(path)
        return real_stat(path, *args, **kwargs)

    def lstat(path, *args, **kwargs):
        note(path)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "lstat", lstat)
    return seen


def _recorded(root: Path, cache: ReadCache) -> tuple[file_deps.Dep, ...]:
    assert cache.disk is not None
    with file_deps.recording(str(root), str(cache.disk.directory)) as recorder:
        analyze(load_run_and_liveness(root, cache=cache)[0])
    return recorder.result()


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_every_path_the_load_looks_at_is_in_the_key(path, tmp_path, monkeypatch):
    """What a load stats, opens or lists is a recorded file, a recorded folder, an entry of one (its stat is in
    the folder's fingerprint) or a folder on the way to one (realpath); a warm per-file cache gives the same key."""
    root = path.absolute()
    disk = disk_cache.DiskCache(tmp_path / "cache")
    # One load first, into another cache: a module the load imports for the first time in this process (a fresh
    # xdist worker) is found through pytest's import hook, which stats the import path's folders (tests/, the package).
    _recorded(root, ReadCache(disk=disk_cache.DiskCache(tmp_path / "imports"), keep_in_memory=False))
    probes = _probes(monkeypatch)
    deps = _recorded(root, ReadCache(disk=disk, keep_in_memory=False))
    monkeypatch.undo()
    files = {p for kind, p, _fp in deps if kind == "f"}
    folders = {p for kind, p, _fp in deps if kind == "d"}
    on_the_way = {str(parent) for p in [*files, *folders, str(root), str(disk.directory)] for parent in Path(p).parents}
    python = file_deps._python_prefixes() + (str(disk.directory),)  # imports; the cache's own entries
    missed = sorted({p for p in probes if p not in files | folders | on_the_way and os.path.dirname(p) not in folders
                     and not p.startswith(python)})
    assert missed == []
    assert str(root) in folders
    warm = _recorded(root, ReadCache(disk=disk, keep_in_memory=False))  # results from the per-file cache now
    assert {(k, p) for k, p, _fp in warm} == {(k, p) for k, p, _fp in deps}
    assert file_deps.unchanged(deps)


def test_pool_gives_the_serial_rows_in_order(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    for i in range(row_cache.POOL_MIN_RUNS + 2):
        shutil.copytree(RUNS / ("e2_rollback", "tb_plain", "wandb_clean")[i % 3], tree / f"run{i:02d}", symlinks=True)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    roots = pimm_inspect.discover(tree)
    serial = list(Session(Settings.from_env(jobs=1)).rows(roots))
    assert list(Session(Settings.from_env(jobs=2)).rows(roots)) == serial
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    assert list(Session(Settings.from_env(jobs=2)).rows(roots)) == serial  # cold: the workers store the rows
    assert list(Session(Settings.from_env(jobs=2)).rows(roots)) == serial
    assert all(row_cache.stored_row(Session().disk, r.absolute()) is not None for r in roots)


_PARENT = os.getpid()


def _die_on_run03(root: Path):
    if root.name == "run03" and os.getpid() != _PARENT:
        os._exit(3)  # a worker killed mid-run (out of memory, a signal)
    return rows.build_row(root)


def test_a_dead_worker_does_not_lose_rows(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    for i in range(row_cache.POOL_MIN_RUNS):
        shutil.copytree(RUNS / "tb_plain" / "runs" / "baseline", tree / f"run{i:02d}")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    roots = sorted(tree.iterdir())
    got = list(row_cache.cached_rows(roots, _die_on_run03, None, jobs=2))
    assert [r.name for r in got] == [r.name for r in roots]


def _build_noting_process(root: Path):
    row, storable = rows.build_row(root)
    return dataclasses.replace(row, name=str(os.getpid())), storable


def _rows_from_a_thread(roots: list[Path], jobs: int | None) -> list:
    got: list = []
    worker = threading.Thread(target=lambda: got.extend(row_cache.cached_rows(roots, _build_noting_process, None,
                                                                              jobs=jobs)))
    worker.start()
    worker.join(120)
    assert not worker.is_alive()
    return got


def test_rows_asked_for_off_the_main_thread_are_built_in_a_worker_even_on_a_busy_machine(tmp_path, monkeypatch):
    """The UI's runs table asks from its loader thread: built there, every row would take turns under one interpreter
    lock with the thread drawing them (the table cold took 1.5-2.9x ``ls`` on a busy machine). One process is the
    busy machine's share; an explicit ``jobs=1`` still means this process."""
    tree = tmp_path / "tree"
    for i in range(row_cache.POOL_MIN_RUNS):
        shutil.copytree(RUNS / "tb_plain" / "runs" / "baseline", tree / f"run{i:02d}")
    roots = sorted(tree.iterdir())
    monkeypatch.setattr(row_cache, "busy_now", lambda: 64.0)  # every processor busy: one process
    assert row_cache.worker_count() == 1
    pooled = _rows_from_a_thread(roots, None)
    assert len(pooled) == len(roots) and {r.name for r in pooled} != {str(os.getpid())}
    assert len({r.name for r in pooled}) == 1  # one worker process built them all
    assert [r.root for r in pooled] == [r.absolute() for r in roots]
    here = _rows_from_a_thread(roots, 1)
    assert {r.name for r in here} == {str(os.getpid())}
    main = list(row_cache.cached_rows(roots, _build_noting_process, None))  # the main thread (ls): here
    assert {r.name for r in main} == {str(os.getpid())}


def test_worker_count_follows_the_environment(monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_JOBS", "3")
    assert row_cache.worker_count(Settings.from_env().jobs) == 3
    monkeypatch.setenv("PIMM_INSPECT_JOBS", "0")
    assert row_cache.worker_count(Settings.from_env().jobs) == 1
    monkeypatch.setenv("PIMM_INSPECT_JOBS", "many")
    assert Settings.from_env().jobs is None and 1 <= row_cache.worker_count(Settings.from_env().jobs) <= 8
    monkeypatch.delenv("PIMM_INSPECT_JOBS")
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(row_cache, "busy_now", lambda: 0.2)
    assert row_cache.worker_count() == min(cores, 8)  # an idle machine: every processor
    monkeypatch.setattr(row_cache, "busy_now", lambda: cores + 3.0)
    assert row_cache.worker_count() == 1  # a busy one: one process


def test_busy_now_counts_what_runs_now_not_the_lagging_load_average(monkeypatch):
    """Right after a heavy command the 1-minute load average still says busy; the runnable count says idle."""
    real_open = open

    def fake_loadavg(text):
        def fake_open(path, *args, **kwargs):
            if path == "/proc/loadavg":
                if text is None:
                    raise FileNotFoundError(path)
                return io.StringIO(text)
            return real_open(path, *args, **kwargs)
        return fake_open

    monkeypatch.setattr(os, "getloadavg", lambda: (7.5, 3.0, 1.0))
    monkeypatch.setattr("builtins.open", fake_loadavg("1.98 1.20 0.80 1/412 9999\n"))
    assert row_cache.busy_now() == 0.0  # only this process runs: the 1.98 of the last minute is the past
    monkeypatch.setattr("builtins.open", fake_loadavg("3.00 2.00 1.00 4/412 9999\n"))
    assert row_cache.busy_now() == 3.0  # three other tasks runnable now
    monkeypatch.setattr("builtins.open", fake_loadavg("garbage\n"))
    assert row_cache.busy_now() == 7.5  # unreadable: the load average stands in
    monkeypatch.setattr("builtins.open", fake_loadavg(None))
    assert row_cache.busy_now() == 7.5


def test_model_link_retargeted_to_the_same_moved_folder_is_never_a_stale_row(tmp_path, monkeypatch):
    """Moving the linked folder and pointing the link at its new place changes no inode, size or mtime of what is
    read, but the new name (not ``model``) puts it outside pimm's layout: where the link leads is part of the key."""
    run = _copy("e2_clean", tmp_path)
    store = tmp_path / "model_store" / "exp" / "model"
    store.parent.mkdir(parents=True)
    shutil.move(str(run / "model"), store)
    (run / "model").symlink_to(store)
    old = os.stat(run).st_mtime_ns
    os.utime(run, ns=(old - 10**10, old - 10**10))  # the link was made long ago: the row may be stored

    def retarget(run: Path) -> None:
        elsewhere = tmp_path / "elsewhere" / ".ssh"
        elsewhere.parent.mkdir()
        shutil.move(str(store), elsewhere)
        (run / "model").unlink()
        (run / "model").symlink_to(elsewhere)

    _stored_then(run, retarget, monkeypatch, tmp_path)


def test_a_stored_row_decodes_its_detail_only_when_asked(tmp_path, monkeypatch):
    """A warm ``ls --json`` reads each row's head only; the detail (findings, attempts, command, config, metrics) decodes on
    first use and then equals the fresh row's, through pickling and ``dataclasses.replace`` too."""
    import dataclasses
    import pickle

    from pimm_inspect.session.store import codec

    run = _copy("e2_requeued_twice", tmp_path)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    fresh = Session().row(run)  # cold: built and stored
    decoded: list[str] = []
    real = codec.from_text
    monkeypatch.setattr(codec, "from_text", lambda text: decoded.append(text) or real(text))
    built = spy_builds(monkeypatch, rows, "build_row")
    reference = ls_stdout(run, "--json")
    assert built == [] and decoded == []  # the row came from the cache, its detail never decoded
    stored = Session().stored_rows([run])[run]
    assert isinstance(stored, row_cache.StoredRow) and decoded == []
    assert stored.findings == fresh.findings and len(decoded) == 1 and fresh.findings  # one decode, for every detail field
    assert stored == fresh and fresh == stored and stored.config == fresh.config and stored.config
    again = pickle.loads(pickle.dumps(Session().stored_rows([run])[run]))
    assert again == fresh
    changed = dataclasses.replace(again, status="crashed")
    assert changed.status == "crashed" and changed.attempt_facts == fresh.attempt_facts
    assert ls_stdout(run, "--json") == reference
