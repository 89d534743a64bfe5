"""The disk cache at scale: entries small and lossless, columns decoded on first use, a cold read no heavier with it.

Issue 23: the default cache made the first open of a 1 GB train.log 4x heavier and its entry was 786 MB. Here the
same properties on small generated inputs: an entry of a train.log is at most a quarter of the log, every column
decodes bit for bit (decimals, NaN, inf, -0.0, timestamps, extremes), big columns stay undecoded until read (and a
damaged chunk is found then), and a cold read that writes the cache peaks within 15% of one without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pimm_inspect import lazy
from pimm_inspect.session.store import codec, columns
from pimm_inspect.sources.train_log import _patterns as P
from pimm_inspect.sources.train_log.reader import read_train_log
from tests.hostile_support import PEAK_KIB
from tests.test_disk_cache import ALL, RUNS, _reader_results, _same
from tests.train_log_support import write_big_log

REPO = Path(__file__).resolve().parents[1]


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


def _round_trip(array: np.ndarray) -> np.ndarray:
    stored = bytearray()

    def write(data: memoryview) -> tuple[int, int, int]:
        stored.extend(bytes(-len(stored) % 8))
        offset = len(stored)
        stored.extend(data)
        return offset, data.nbytes, columns.crc(data)

    layout = json.loads(json.dumps(columns.pack(write, array)))  # the layout travels as JSON
    return columns.unpack(layout, array.dtype, array.shape, lambda o, n: bytes(stored[o:o + n]))


def _timestamps(n: int) -> np.ndarray:
    """Wall times as the train.log reader computes them (seconds + milliseconds / 1000, one rounding each)."""
    start = np.datetime64("2026-07-14T14:30:05.049")
    texts = np.datetime_as_string(start + np.arange(n) * np.timedelta64(401, "ms") * 7 // 3, unit="ms")
    chars = np.array([t.replace("T", " ").replace(".", ",").encode() for t in texts], dtype="S23")
    return P.timestamps_matrix(chars.view(np.uint8).reshape(-1, 23))


@pytest.mark.parametrize("name", ["decimals", "specials", "random", "timestamps", "ints", "extremes", "small"])
def test_columns_give_back_every_bit(name):
    rng = np.random.default_rng(7)
    n = columns.CHUNK + 1000  # two chunks
    if name == "decimals":  # a logged loss: 4 decimals, as float("0.4821") gives it (the second chunk's tail)
        texts = [float(f"{v:.4f}") for v in rng.uniform(0, 3, 5000)]
        arrays = [np.concatenate([rng.integers(0, 30000, n - 5000) / 1e4, texts]),
                  np.array([float(f"{v:.5f}") for v in np.linspace(0, 0.002, 5000)])]
    elif name == "specials":
        base = rng.integers(-5000, 5000, n) / 1e3
        base[::97] = np.nan
        base[5::101] = np.inf
        base[7::103] = -np.inf
        base[9::107] = -0.0
        base[11::109] = 1e-300
        base[13::113] = 0.1 + 0.2  # not a short decimal
        base[-1] = np.float64(np.frombuffer(b"\x01\x00\x00\x00\x00\x00\xf8\x7f", np.float64)[0])  # a NaN payload
        arrays = [base]
    elif name == "random":
        arrays = [rng.standard_normal(n), rng.standard_normal(1000).astype(np.float32)]
    elif name == "timestamps":
        arrays = [_timestamps(50_000)]
    elif name == "ints":
        arrays = [np.arange(n, dtype=np.int64) * 3 + 5, np.cumsum(rng.integers(150, 300, n)),
                  rng.integers(-2**40, 2**40, 5000), np.repeat(np.array([1, 2], dtype=np.int32), [70_000, 1]),
                  rng.integers(0, 2, 3000).astype(bool), rng.integers(0, 255, 3000).astype(np.uint8)]
    elif name == "extremes":
        info = np.iinfo(np.int64)
        arrays = [np.array([info.min, info.max, 0, -1, info.max], dtype=np.int64),
                  np.array([2**64 - 1, 0], dtype=np.uint64), np.array([1e308, -1e308, 5e-324, 2.0**53 + 2])]
    else:
        arrays = [np.zeros(0), np.zeros(0, np.int64), np.array([42], np.int64), np.array([0.5]),
                  np.arange(12, dtype=np.int64).reshape(3, 4), np.array(3.25)]
    for array in arrays:
        back = _round_trip(array)
        assert back.dtype == array.dtype and back.shape == array.shape
        assert _bits(back) == _bits(array), name


def _small_columns() -> list[np.ndarray]:
    """Short float columns of every kind a run's tags hold: logged decimals, timestamps, float32 values, specials."""
    rng = np.random.default_rng(11)
    out = [np.array([float(f"{v:.4f}") for v in rng.uniform(0, 3, n)]) for n in (1, 2, 7, 8, 9, 16, 31, 32)]
    out += [_timestamps(n) for n in (1, 5, 32)]
    out += [rng.standard_normal(n).astype(np.float32).astype(np.float64) for n in (1, 10, 32)]
    out += [np.array([0.5, np.nan, -0.0, 1.25]), np.array([np.nan, np.inf]), np.array([-0.0]), np.array([0.0, -0.0]),
            np.array([1e300, 2.0]), np.array([1e15, 2e15, 1e16 + 2]), np.array([0.1, 0.2, 0.1 + 0.2] * 3),
            np.array([123456789.123456, 0.5, -2.75]), np.array([5e-324, 1.0]), np.array([-1.5, -2.5, 2.5, 0.5]),
            np.array([float(f"{v:.2f}") for v in rng.uniform(-1e6, 1e6, 20)]), np.array([7.0] * 30 + [7.000001] * 2)]
    # whole part + fraction / 1e14 gives these back, the plain quotient does not (the split form)
    split = [13.735159002319019, 46.770687298536544, 60.534721755464346, 12.649074979388839, 6.3497435809925005,
             2.6094454346532903, 1.8665245279540001, 1.6668801887381202]
    out += [np.array(split), np.array(split[:3] + [0.5]), np.array(split * 3 + [0.25, np.nan, 1e-9])]
    return out


def test_short_columns_are_judged_as_long_ones_are():
    """Short float chunks (a few with NaN or infinity are not kept inline) are judged with Python floats (numpy's
    per-call cost would dominate): the decimal form chosen is the one numpy's arithmetic chooses."""
    forms: set[object] = set()
    for array in _small_columns():
        assert array.size <= columns._SMALL
        fast = _packed_floats(array)
        forms.add(tuple(fast[0][:3]) if fast[0] is not None else "raw")
        original = columns._SMALL
        columns._SMALL = 0  # every chunk through numpy
        try:
            slow = _packed_floats(array)
        finally:
            columns._SMALL = original
        assert fast == slow, array
    assert {("dec", 4, False), ("dec", 3, False), ("dec", 14, True), "raw"} <= forms  # every way was taken


def _packed_floats(array: np.ndarray) -> tuple[list[object] | None, list[bytes]]:
    blobs: list[bytes] = []

    def write(data: memoryview) -> tuple[int, int, int]:
        blobs.append(bytes(data))
        return len(blobs), data.nbytes, columns.crc(data)

    return columns._pack_floats(write, array), blobs


def test_short_columns_are_kept_inline_and_give_back_every_bit():
    rng = np.random.default_rng(5)
    arrays = _small_columns() + [
        rng.standard_normal(32).astype(np.float32), np.array([np.float32(1e-45), np.float32(3.4e38)]),
        np.array([True, False, True]), rng.integers(0, 255, 20).astype(np.uint8), np.array([-128, 127], np.int8),
        np.array([2**64 - 1, 0], np.uint64), np.array([-(2**63), 2**63 - 1], np.int64), np.array([-5], np.int16),
        np.array(2.5), np.arange(6, dtype=np.int32).reshape(2, 3), np.array([5e-324, -0.0, 1e308])]
    inline = 0
    for array in arrays:
        layout, blobs = _packed_layout(array)
        finite = array.dtype.kind != "f" or bool(np.isfinite(array).all())
        assert (layout[0][1][0] == "js") == finite, array  # NaN and infinity are not JSON: packed as columns
        if finite:
            inline += 1
            assert not blobs
        back = _round_trip(array)
        assert back.dtype == array.dtype and back.shape == array.shape and _bits(back) == _bits(array), array
    assert inline >= 30
    long = np.arange(columns.INLINE_MAX + 1, dtype=np.int64) * 3
    assert _packed_layout(long)[0][0][1][0] == "ar"  # past the bound: a column as before


def test_damaged_inline_columns_are_refused():
    def unpack(chunks: object, dtype: type, n: int) -> np.ndarray:
        return columns.unpack(chunks, np.dtype(dtype), (n,), lambda offset, length: b"")

    assert unpack([[2, ["js", [1.5, -0.0]]]], np.float64, 2).tolist() == [1.5, -0.0]
    assert unpack([[2, ["js", [1, 2]]]], np.int16, 2).tolist() == [1, 2]
    bad = [([[3, ["js", [1.5, 2.5]]]], np.float64, 3),  # fewer values than said
           ([[2, ["js", [1, 2]]]], np.float64, 2),  # ints where floats were stored
           ([[2, ["js", ["1.5", 2.5]]]], np.float64, 2),
           ([[2, ["js", [True, 1]]]], np.int64, 2),
           ([[2, ["js", [1, 0]]]], np.bool_, 2),
           ([[1, ["js"]]], np.int64, 1),
           ([[1, ["js", {"a": 1}]]], np.int64, 1),
           ([[1, ["js", [1], 2]]], np.int64, 1)]
    for chunks, dtype, n in bad:
        with pytest.raises(columns.Damaged):
            unpack(chunks, dtype, n)
    with pytest.raises(OverflowError):  # out of the type's range: the codec's read turns it into BadEntry
        unpack([[2, ["js", [300, 1]]]], np.uint8, 2)


def _packed_layout(array: np.ndarray) -> tuple[list[object], list[bytes]]:
    blobs: list[bytes] = []

    def write(data: memoryview) -> tuple[int, int, int]:
        blobs.append(bytes(data))
        return len(blobs), data.nbytes, columns.crc(data)

    return columns.pack(write, array), blobs


@pytest.fixture(scope="module")
def small_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("log") / "train.log"
    write_big_log(path, 3 << 20, iters_per_epoch=2000, attempts=2, mixed=True)
    return path


def test_train_log_entry_is_a_fraction_of_the_log_and_lossless(small_log, tmp_path):
    result = read_train_log(small_log, "train.log")
    entry = tmp_path / "entry.pimc"
    with open(entry, "wb") as fh:
        size = codec.write(fh, result, {"kind": "train_log"})
    assert size == entry.stat().st_size
    assert size <= small_log.stat().st_size // 4, (size, small_log.stat().st_size)
    with open(entry, "rb") as fh:
        back = codec.read_file(fh, {"kind": "train_log"})
    _same(result, back, "train_log")
    for mine, theirs in zip(result.series, back.series):
        assert _bits(mine.values) == _bits(theirs.values) and _bits(mine.wall_times_s) == _bits(theirs.wall_times_s)


def test_big_columns_wait_until_read(small_log, tmp_path, monkeypatch):
    monkeypatch.setattr(lazy, "LAZY_MIN_ELEMENTS", 1000)
    result = read_train_log(small_log, "train.log")
    entry = tmp_path / "entry.pimc"
    with open(entry, "wb") as fh:
        codec.write(fh, result, {"kind": "train_log"})
    with open(entry, "rb") as fh:
        back = codec.read_file(fh, {"kind": "train_log"})
    big = [s for s in back.series if len(s) >= lazy.LAZY_MIN_ELEMENTS]
    assert big and all(type(s).__name__ == "LazyScalarSeries" for s in big)
    values_slot = lazy.BASES[type(big[0])].__dict__["values"]
    assert all(type(values_slot.__get__(s)) is lazy.Pending for s in big)
    tagged = lazy.replace(big[0], source_kind="train_log")  # what the loader does: still not decoded
    assert type(values_slot.__get__(tagged)) is lazy.Pending and tagged.source_kind == "train_log"
    original = next(s for s in result.series if s.tag == tagged.tag and s.attempt == tagged.attempt)
    assert _bits(tagged.values) == _bits(original.values)
    assert not tagged.values.flags.writeable
    # damage every stored float chunk after the entry was opened: found when a column is first read
    with open(entry, "rb") as fh:
        again = codec.read_file(fh, {"kind": "train_log"})
        data = bytearray(entry.read_bytes())
        for at in _float_blobs(data):
            data[at] ^= 0xFF
        entry.write_bytes(bytes(data))  # the same inode, rewritten in place
    failed = 0
    for series in again.series:
        if type(series).__name__ == "LazyScalarSeries":
            try:
                _ = series.values
            except codec.BadEntry:
                failed += 1
    assert failed >= 1


def _float_blobs(data: bytearray) -> list[int]:
    """A byte inside each stored blob of the entry's float64 columns (from the entry's meta)."""
    meta_offset = int.from_bytes(data[len(codec.MAGIC):len(codec.MAGIC) + 8], "little")
    meta = json.loads(bytes(data[meta_offset:]))
    found = []
    for dtype, _shape, chunks in meta["arrays"]:
        for _n, spec in chunks if dtype == "float64" else ():
            inner = spec[3] if spec[0] == "dec" else spec
            if inner[0] in ("dl", "nw", "raw"):
                found.append(inner[-3])
    assert found
    return found


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_every_fixture_reads_back_the_same_with_every_column_lazy(path, tmp_path, monkeypatch):
    monkeypatch.setattr(lazy, "LAZY_MIN_ELEMENTS", 1)
    for i, result in enumerate(_reader_results(path)):
        if getattr(result, "log_state", None) is not None:
            continue
        entry = tmp_path / f"{i}.pimc"
        with open(entry, "wb") as fh:
            codec.write(fh, result, {"kind": "x"})
        with open(entry, "rb") as fh:
            back = codec.read_file(fh, {"kind": "x"})
        _same(result, back, type(result).__name__)
        again = codec.decode(codec.encode(back, {"kind": "x"}), {"kind": "x"})  # a lazy result stores as its class
        _same(result, again, type(result).__name__)


PROBE = """
import json, sys
from pathlib import Path
from pimm_inspect.session import Session, Settings
from pimm_inspect.load import load_run
import pimm_inspect.analysis, pimm_inspect.sources.train_log.reader, pimm_inspect.session.store.codec
base = int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS:')))
settings = Settings.from_env()
session = Session(settings)
run = session.load_found(Path(sys.argv[1]))
print(json.dumps({{"base_kib": base, "peak_kib": {peak}, "series": len(run.series)}}))
"""


def _peak_above_import(run: Path, cache: str) -> tuple[int, int]:
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=cache, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(PROBE).format(peak=PEAK_KIB), str(run)],
                         env=env, capture_output=True, text=True, timeout=300, check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    return doc["peak_kib"] - doc["base_kib"], doc["series"]


def test_cold_read_with_the_cache_peaks_like_without(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    write_big_log(run / "train.log", 50 << 20, mixed=True)
    without, series = _peak_above_import(run, "off")
    cache = tmp_path / "cache"
    with_cache, series_cached = _peak_above_import(run, str(cache))
    assert series_cached == series and any(cache.iterdir())  # the entry was written
    assert with_cache <= without * 1.15, f"cold with the cache {with_cache} KiB above imports, without {without}"


def test_byte_columns_are_stored_as_their_bytes():
    """A column of one-byte integers (a row's encoded detail) has no narrower form: stored raw, bit for bit."""
    rng = np.random.default_rng(11)
    arrays = (np.frombuffer("détail ✓ text".encode() * 40, dtype=np.uint8),
              rng.integers(-128, 127, 5000).astype(np.int8), np.zeros(columns.CHUNK + 3, dtype=np.uint8))
    for array in arrays:
        layout, blobs = _packed_layout(array)
        assert [chunk[1][0] for chunk in layout] == ["raw"] * len(layout)
        assert b"".join(blobs) == array.tobytes()
        assert _bits(_round_trip(array)) == _bits(array) and _round_trip(array).dtype == array.dtype
