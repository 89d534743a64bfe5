"""The persistent cache: faithful, outside runs, safe against damage and concurrency, off when asked."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_refresh import _grow_copy
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect import lazy
from pimm_inspect.cli.main import cli
from pimm_inspect.load import load_run as load_uncached
from pimm_inspect.session import Session, Settings
from pimm_inspect.session.settings import cache_dir_from
from pimm_inspect.load.safe import load_reusable
from pimm_inspect.session.store import codec, disk_cache, doc_cache
from pimm_inspect.session.store.cache import ReadCache
from pimm_inspect.load.collect import collect
from pimm_inspect.load.discover import classify_dir

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
ALL = pimm_inspect.discover(RUNS)


def load_run(path: Path):
    """A run read as a new process reads it: through a fresh session's disk cache (no analysis)."""
    return load_uncached(path, cache=Session().read_cache())


def _cli(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _cache_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.exists() else []


def _same(a, b, where: str = "") -> None:
    """Deep equality of reader results: dataclasses field by field, arrays by dtype and bits (NaN equal)."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        # a cached result may be its dataclass's lazy stand-in (columns decoded on first use): the same class else
        assert lazy.BASES.get(type(a), type(a)) is lazy.BASES.get(type(b), type(b)), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert type(a) is type(b) and list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, float) and a != a:
        assert isinstance(b, float) and b != b, where
    else:
        assert type(a) is type(b) and a == b, where


def _reader_results(root: Path) -> list:
    c = collect(root.absolute(), classify_dir(root) or "pimm", ReadCache(disk=None))
    results = [r for _p, _n, r in c.tb_files] + list(c.wandb_runs)
    if c.train_log is not None:
        results.append(c.train_log)
    if c.model_dir is not None:
        results.append(c.model_dir)
    return results


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_codec_round_trip_of_every_reader_result(path):
    for result in _reader_results(path):
        if getattr(result, "log_state", None) is not None:
            continue  # a live W&B log keeps its decoder state in memory only (never stored)
        header = {"kind": "x"}
        _same(result, codec.decode(codec.encode(result, header), header), type(result).__name__)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_show_check_and_series_identical_with_and_without_cache(path, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    outputs = []
    for setting in ("off", str(cache), str(cache)):  # no cache, cold, warm
        monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", setting)
        outputs.append((_cli("show", path, "--json"), _cli("check", path, "--json", "--fail-on", "never")))
        run = load_run(path)
        outputs[-1] += (sorted((s.tag, s.source, s.attempt) for s in run.series),)
        if setting == "off":
            reference = run
        else:
            for s, r in zip(sorted(run.series, key=lambda s: (s.tag, s.source, s.attempt or 0)),
                            sorted(reference.series, key=lambda s: (s.tag, s.source, s.attempt or 0))):
                _same(s, r, s.tag)
    assert outputs[0] == outputs[1] == outputs[2]
    # A W&B log without its exit record (killed, or still running) keeps its decoder state in memory only.
    has_stream = any(r for r in _reader_results(path) if getattr(r, "log_state", None) is None)
    document = doc_cache.entry_path(Session().disk, path.absolute())
    assert bool([e for e, _s, _t in disk_cache.entries(cache) if e != document]) == has_stream
    # The show document is stored unless the run's read may not be reused (a live run).
    assert document.exists() == load_reusable(path)[1]


def test_warm_read_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    cold = _cli("show", RUNS / "e2_rollback", "--json")
    import pimm_inspect.sources.tensorboard.reader as tb
    import pimm_inspect.sources.train_log.reader as tl

    def fail(*args, **kwargs):
        raise AssertionError("decoded again although cached")

    monkeypatch.setattr(tb, "read_event_file", fail)
    monkeypatch.setattr(tl, "read_train_log", fail)
    import pimm_inspect.sources.checkpoint.reader as ck

    monkeypatch.setattr(ck, "read_model_dir", fail)
    assert _cli("show", RUNS / "e2_rollback", "--json") == cold


def test_cache_dir_inside_the_run_is_refused(tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_rollback", run, symlinks=True)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(run / ".cache"))
    _cli("show", run, "--json")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(run / "model" / "cache"))
    _cli("ls", run)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_default_location_follows_xdg_and_off(monkeypatch, tmp_path):
    monkeypatch.delenv("PIMM_INSPECT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Settings.from_env().cache_dir == tmp_path / "xdg" / "pimm-inspect"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Settings.from_env().cache_dir == tmp_path / "home" / ".cache" / "pimm-inspect"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    assert Settings.from_env().cache_dir is None
    assert Settings.from_env(no_cache=True, environ={"PIMM_INSPECT_CACHE_DIR": str(tmp_path)}).cache_dir is None


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign-type", "pickle", "empty"])
def test_damaged_entry_is_ignored_and_rebuilt(damage, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    reference = _cli("show", RUNS / "e2_rollback", "--json")
    stored = {p: p.read_bytes() for p, _s, _t in disk_cache.entries(cache)}
    assert stored
    for path, data in stored.items():
        if damage == "truncate":
            path.write_bytes(data[: len(data) // 2])
        elif damage == "flip":
            at = len(data) - 100  # inside the last array's values: the layout still parses
            path.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
        elif damage == "foreign-type":
            path.write_bytes(_entry_with_tree({"dc": "os:system", "f": {}}, {"kind": "x"}))
        elif damage == "pickle":
            import pickle

            path.write_bytes(pickle.dumps({"tree": "x"}))
        else:
            path.write_bytes(b"")
    assert _cli("show", RUNS / "e2_rollback", "--json") == reference
    rebuilt = {p: p.read_bytes() for p, _s, _t in disk_cache.entries(cache)}
    assert set(rebuilt) == set(stored)
    document = doc_cache.entry_path(Session().disk, (RUNS / "e2_rollback").absolute())
    for path, data in rebuilt.items():  # every damaged entry was replaced by a valid one
        # (the show document's entry holds when its read started: the same document, a new time)
        assert data == stored[path] or path == document
    assert doc_cache.stored_show(Session().disk, (RUNS / "e2_rollback").absolute()) is not None


def _entry_with_tree(tree, header) -> bytes:
    """A well-formed entry (valid checksum) holding ``tree``: what a hostile writer could make."""
    import hashlib

    meta = json.dumps({"format": codec.FORMAT, "header": header, "tree": tree, "arrays": []}).encode()
    head = (codec.MAGIC + codec._HEAD.to_bytes(8, "little") + len(meta).to_bytes(8, "little")
            + hashlib.sha256(meta).hexdigest().encode() + b"\n")
    return head + bytes(codec._HEAD - len(head)) + meta


def test_codec_refuses_names_outside_the_package():
    header = {"kind": "x"}
    fields = {"f": {"code": "a", "severity": {"e": "pimm_inspect.model:Severity", "v": "info"}}}
    for evil in ("os:system", "builtins:eval", "pimm_inspect.model:os", "subprocess:Popen",
                 "pimm_inspect.model:Finding.__init__"):
        with pytest.raises(codec.BadEntry):
            codec.decode(_entry_with_tree({"dc": evil, **fields}, header), header)
    with pytest.raises(codec.BadEntry):  # a real type, but not its fields
        codec.decode(_entry_with_tree({"dc": "pimm_inspect.model:Finding", **fields}, header), header)
    good = codec.encode(pimm_inspect.model.Finding("a", pimm_inspect.model.Severity.INFO, "m", (), None, ""), header)
    assert codec.decode(good, header).code == "a"
    with pytest.raises(codec.BadEntry):
        codec.decode(good, {"kind": "other"})


def test_two_processes_fill_the_cache_at_once(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(cache))
    argv = [sys.executable, "-m", "pimm_inspect", "show", "--json", str(RUNS)]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-500:] for o in outs]
    off = subprocess.run(argv, env=dict(env, PIMM_INSPECT_CACHE_DIR="off"), capture_output=True, check=True)
    assert outs[0][0] == outs[1][0] == off.stdout
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]
    warm = subprocess.run(argv, env=env, capture_output=True, check=True)
    assert warm.stdout == off.stdout


def test_grown_files_decode_only_the_appended_bytes(tmp_path, monkeypatch):
    """A later process finds the stored prefix and reads train.log and the event file from where it ended."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    log, log_tail, _event_tail, events, ev = _grow_copy(tmp_path)  # the refresh tests' half-written copy
    run = log.parent
    cut = log.stat().st_size
    data = log.read_bytes() + log_tail
    first = load_run(run)  # no ReadCache passed: the disk cache only, as in a new process
    ends = {s.path: s.bytes_read for s in first.sources}
    log.write_bytes(data)
    events.write_bytes(ev)
    import pimm_inspect.sources.tensorboard.reader as tb
    import pimm_inspect.sources.train_log.reader as tl

    calls = []
    real_tb, real_tl = tb.read_event_file, tl.read_train_log

    def spy_tb(path, rel_path, start_offset=0, **kw):
        calls.append((rel_path, start_offset))
        return real_tb(path, rel_path, start_offset=start_offset, **kw)

    def spy_tl(path, rel_path, start_offset=0, **kw):
        result = real_tl(path, rel_path, start_offset=start_offset, **kw)
        calls.append((rel_path, result.read_from_offset))  # where decoding began (previous end when extended)
        return result

    monkeypatch.setattr(tb, "read_event_file", spy_tb)
    monkeypatch.setattr(tl, "read_train_log", spy_tl)
    grown = load_run(run)
    ev_rel = events.name
    assert dict(calls)[ev_rel] == ends[ev_rel] > 0  # the event file: from the stored end on
    assert dict(calls)["train.log"] == ends["train.log"] == cut  # train.log: from the stored end on
    monkeypatch.setattr(tb, "read_event_file", real_tb)
    monkeypatch.setattr(tl, "read_train_log", real_tl)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    full = load_run(run)
    assert sorted((s.tag, s.source, s.attempt, s.steps.tolist(), s.values.tolist()) for s in grown.series) == \
        sorted((s.tag, s.source, s.attempt, s.steps.tolist(), s.values.tolist()) for s in full.series)
    assert sorted(f.code for f in grown.findings) == sorted(f.code for f in full.findings)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_cache_writes_nothing(how, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache) if how == "flag" else "off")
    args = ["--no-cache"] if how == "flag" else []
    for command in (["show", RUNS / "e2_rollback", "--json"], ["ls", RUNS], ["check", RUNS / "wandb_clean"]):
        result = CliRunner().invoke(cli, [*args, *map(str, command)])
        assert result.exit_code in (0, 1), result.output
    assert _cache_files(cache) == []


def test_cache_info_and_clear(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    _cli("ls", RUNS)
    info = json.loads(_cli("cache", "info", "--json"))
    assert info["enabled"] and info["directory"] == str(cache) and info["entries"] == len(disk_cache.entries(cache)) > 0
    assert info["size_bytes"] == sum(p.stat().st_size for p in cache.iterdir())
    assert "removed" in _cli("cache", "clear")
    assert disk_cache.entries(cache) == []
    assert json.loads(_cli("cache", "info", "--json"))["entries"] == 0


def test_size_cap_evicts_least_recently_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    _cli("ls", RUNS)
    found = sorted(disk_cache.entries(cache), key=lambda e: e[2])
    for i, (path, _size, _t) in enumerate(found):
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    newest = found[-1][0]
    disk_cache.evict(cache, newest.stat().st_size)
    assert [p for p, _s, _t in disk_cache.entries(cache)] == [newest]


def test_a_worker_keeps_one_cache_for_every_batch_it_is_handed(tmp_path):
    """Each batch of runs sent to a worker process carries the cache again: unpickled, it is that process's one
    cache, so the bytes written since the last size check add up and the cap is kept during a cold run of a tree
    (a fresh copy per batch of four runs never reached a twentieth of the cap: nothing was evicted)."""
    import pickle

    told: list[str] = []
    cap = 40_000
    disk = disk_cache.DiskCache(tmp_path / "cache", max_bytes=cap, on_problem=told.append)
    first = pickle.loads(pickle.dumps(disk))
    assert first.on_problem is None and first.directory == disk.directory and first.max_bytes == cap
    first.put_value("k", tmp_path / "a", "", "x" * 300)
    assert 300 < first.written_bytes < cap // 20
    again = pickle.loads(pickle.dumps(disk))
    assert again is first and again.written_bytes == first.written_bytes
    for i in range(80):  # each batch writes less than a twentieth of the cap, all of them more than the cap
        pickle.loads(pickle.dumps(disk)).put_value("k", tmp_path / f"run{i}", "", "x" * 300)
    assert sum(size for _p, size, _t in disk_cache.entries(tmp_path / "cache")) <= cap + cap // 20
    assert pickle.loads(pickle.dumps(disk_cache.DiskCache(tmp_path / "other"))) is not first


def test_the_suite_never_uses_the_real_cache_dir():
    """conftest points every test (and module-scoped fixtures before them) away from ~/.cache."""
    configured = Path(os.environ["PIMM_INSPECT_CACHE_DIR"])
    assert Settings.from_env().cache_dir == configured
    assert not (Path.home() / ".cache" / "pimm-inspect").resolve() == configured.resolve()


def test_cheap_reads_are_not_written(tmp_path, monkeypatch):
    """A result that decoded faster than PIMM_INSPECT_CACHE_MIN_DECODE_MS (default 5 ms) is not worth an entry."""
    from pimm_inspect.session.store.cache import DEFAULT_MIN_DECODE_MS

    monkeypatch.delenv("PIMM_INSPECT_CACHE_MIN_DECODE_MS")
    assert Settings.from_env().cache_min_decode_s == DEFAULT_MIN_DECODE_MS / 1000 == 0.005
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    monkeypatch.setenv("PIMM_INSPECT_CACHE_MIN_DECODE_MS", "1e9")
    reference = _cli("show", RUNS / "e2_rollback", "--json")
    assert disk_cache.entries(cache) == []
    monkeypatch.setenv("PIMM_INSPECT_CACHE_MIN_DECODE_MS", "0")
    assert _cli("show", RUNS / "e2_rollback", "--json") == reference
    assert len(disk_cache.entries(cache)) == 5  # train.log, two event files, model/, the show document


def test_reading_an_entry_marks_it_used_unless_marked_recently(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    reference = _cli("show", RUNS / "e2_rollback", "--json")
    found = [p for p, _s, _t in disk_cache.entries(cache)]
    long_ago = 1_000_000
    os.utime(found[0], (long_ago, long_ago))
    recent = found[1].stat().st_mtime_ns - 10**9  # marked a second ago: left as it is
    os.utime(found[1], ns=(recent, recent))
    assert _cli("show", RUNS / "e2_rollback", "--json") == reference
    _cli("check", RUNS / "e2_rollback", "--json")  # reads the reader entries (show read its document alone)
    assert found[0].stat().st_mtime > long_ago + disk_cache.TOUCH_AFTER_S
    assert found[1].stat().st_mtime_ns == recent


def test_a_temp_name_left_by_a_dead_process_is_never_written_through(tmp_path, monkeypatch):
    """Entries are written to ``.tmp-<pid>-<n>.pimc`` (created exclusively); a file already there under that name (a
    process of the same number that died mid-write, or someone else's) is left alone and a random name is used."""
    import itertools

    cache = tmp_path / "cache"
    disk = disk_cache.DiskCache(cache)
    disk.put_value("probe", tmp_path / "a", "", ("first", 1))  # makes the directory
    monkeypatch.setattr(disk_cache, "_temp_numbers", itertools.count(7))
    squatter = cache / f".tmp-{os.getpid()}-7{disk_cache.ENTRY_SUFFIX}"
    squatter.write_bytes(b"not an entry of this process")
    disk.put_value("probe", tmp_path / "b", "", ("second", 2))
    assert squatter.read_bytes() == b"not an entry of this process"
    assert disk.get_value("probe", tmp_path / "b", "") == ("second", 2)
    assert disk.get_value("probe", tmp_path / "a", "") == ("first", 1)
    assert [p.name for p in cache.iterdir() if p.name.startswith(".tmp-")] == [squatter.name]
    entry = disk.entry_file("probe", tmp_path / "b", "")
    assert entry.stat().st_mode & 0o777 == 0o600  # private, as mkstemp made them


def test_text_values_encode_as_plain_json_of_their_tree() -> None:
    """``to_text`` is the JSON of the encoder's node tree: plain dict items and sequence items kept as they are,
    NaN and infinity tagged, and it decodes back to the value."""
    value = ({"lr": 0.1, "name": "x", "n": 3, "on": True, "none": None, "inf": float("inf"), 2: ("a", 1)},
             ["a", {"b": 1}], (("k", 1), ("j", [1.5, float("nan")])))
    text = codec.to_text(value)
    assert json.loads(text)["t"][0] == {"d": [["lr", 0.1], ["name", "x"], ["n", 3], ["on", True], ["none", None],
                                              ["inf", {"f": "inf"}], [2, {"t": ["a", 1]}]]}
    back = codec.from_text(text)
    assert back[0] == value[0] and back[1] == value[1] and back[2][0] == value[2][0]
    assert back[2][1][0] == "j" and back[2][1][1][0] == 1.5 and back[2][1][1][1] != back[2][1][1][1]  # NaN kept


def test_a_fifo_in_place_of_an_entry_is_refused_without_blocking(tmp_path):
    import threading

    problems: list[str] = []
    disk = disk_cache.DiskCache(tmp_path / "cache", on_problem=problems.append)
    disk.put_value("probe", tmp_path / "a", "", ("stored", 1))
    entry = disk.entry_file("probe", tmp_path / "a", "")
    entry.unlink()
    os.mkfifo(entry)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(disk.get_value("probe", tmp_path / "a", "")), daemon=True)
    reader.start()
    reader.join(timeout=60)  # a generous hang guard: an open that waited for a writer would never return
    assert not reader.is_alive() and got == [None]
    assert problems and "not a regular file" in problems[0]
