"""The bulk W&B decoder equals the per-record one (``Record.FromString`` on every record) on what wandb writes,
on damaged records, and number by number (``float`` / ``int``)."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pimm_inspect.sources.wandb._bulk as bulk
import pimm_inspect.sources.wandb.reader as reader
from pimm_inspect.sources.wandb import _numbers
from pimm_inspect.sources.wandb._framing import FramingState, iter_records
from pimm_inspect.sources.wandb._proto import record_class
from pimm_inspect.sources.wandb._scan import padded
from tests.wandb_support import frame_records

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "wandb_shapes"
SHAPE_FOLDERS = sorted(SHAPES.glob("*/offline-run-*"))


def full_view(result) -> dict:
    """Everything the reader gives that records decide, with floats as repr (NaN and -0.0 compare)."""
    return dict(
        steps=result.history_steps.tolist(), ts=[repr(x) for x in result.history_timestamps_s.tolist()],
        rt=[repr(x) for x in result.history_runtimes_s.tolist()],
        series=[(s.tag, s.steps.tolist(), [repr(v) for v in s.values.tolist()],
                 [repr(v) for v in s.wall_times_s.tolist()]) for s in result.series],
        x_axis=dict(result.x_axis), non_scalar=list(result.non_scalar_keys),
        summary=json.dumps(result.summary, default=repr), config=json.dumps(result.config, default=repr),
        findings=[(f.code, f.message) for f in result.findings], console=[(c.stream, c.text) for c in result.console],
        unknown=result.unknown_record_count, metrics=list(result.metrics), exit=result.exit_code)


def both_ways(folder: Path, monkeypatch) -> tuple[dict, dict]:
    """(bulk view, per-record view) of one run folder."""
    fast = full_view(reader.read_wandb_run(folder, "wandb/run"))
    monkeypatch.setattr(bulk, "BULK_DECODE", False)
    slow = full_view(reader.read_wandb_run(folder, "wandb/run"))
    monkeypatch.setattr(bulk, "BULK_DECODE", True)
    return fast, slow


class _Counting:
    """The Record class, counting the records given to the protobuf parser by kind."""

    cls = None
    kinds: dict[str, int] = {}

    @classmethod
    def install(cls, monkeypatch) -> None:
        real, info = record_class()
        cls.cls, cls.kinds = real, {}
        cls.DESCRIPTOR = real.DESCRIPTOR
        monkeypatch.setattr(reader, "record_class", lambda: (cls, info))

    @classmethod
    def FromString(cls, data: bytes):
        rec = cls.cls.FromString(data)
        kind = rec.WhichOneof("record_type")
        cls.kinds[kind] = cls.kinds.get(kind, 0) + 1
        return rec


def test_shape_fixtures_are_there():
    names = {f.parent.name for f in SHAPE_FOLDERS}
    assert names == {"nested", "mixed_types", "media", "step_metric", "commit_false", "explicit_steps", "resumed", "wide"}


@pytest.mark.parametrize("folder", SHAPE_FOLDERS, ids=lambda f: f.parent.name + "/" + f.name[-8:])
def test_wandb_written_shapes_equal_the_per_record_decode(folder, monkeypatch):
    fast, slow = both_ways(folder, monkeypatch)
    assert fast == slow
    assert not [code for code, _m in fast["findings"] if code.startswith("file.")]
    # The bulk path took the history rows and summaries wandb wrote, not the parser.
    _Counting.install(monkeypatch)
    reader.read_wandb_run(folder, "wandb/run")
    histories = len(fast["steps"])
    assert _Counting.kinds.get("history", 0) == 0 and histories > 0
    assert _Counting.kinds.get("summary", 0) <= 3  # the few with wandb's _info field (large values)


def test_shapes_hold_what_they_claim(monkeypatch):
    by_name = {f.parent.name: reader.read_wandb_run(f, "run") for f in SHAPE_FOLDERS if "_000000-" in f.name}
    tags = {name: {s.tag for s in r.series} for name, r in by_name.items()}
    assert {"train.loss", "train.acc", "val.seg.mIoU", "lr"} <= tags["nested"]
    mixed = by_name["mixed_types"]
    assert {"phase", "flag", "maybe", "vector"} <= set(mixed.non_scalar_keys)
    assert next(s for s in mixed.series if s.tag == "huge").values[0] == 1.7976931348623157e308
    assert {"sample._type", "weights.values"} <= set(by_name["media"].non_scalar_keys)
    assert by_name["step_metric"].x_axis["val/mIoU"] == "epoch"
    steps = by_name["explicit_steps"].history_steps
    assert steps[0] == 10 and np.all(np.diff(steps) > 0) and steps[-1] > 10_000
    assert len(by_name["wide"].series) == 900 and len(by_name["wide"].summary["notes"]) == 33_000
    assert len(by_name["commit_false"].history_steps) == 40


# --- numbers ------------------------------------------------------------------------------------

def _parse_texts(texts: list[str]):
    data = bytearray(b"\x01" * 40)
    starts, ends = [], []
    for text in texts:
        raw = text.encode("utf-8", "surrogatepass")
        starts.append(len(data))
        data += raw
        ends.append(len(data))
        data += b"\x82\x01"
    _buf, words = padded(bytes(data))
    return _numbers.parse(words, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))


def _check_numbers(texts: list[str]) -> int:
    """Assert every text the bulk parser accepts reads as float()/int() does; return how many it accepted."""
    values, ok, ints, is_int = _parse_texts(texts)
    for text, value, good, integer, flag in zip(texts, values.tolist(), ok.tolist(), ints.tolist(), is_int.tolist()):
        if good:
            expected = float(text)
            assert struct.pack("<d", value) == struct.pack("<d", expected) or (math.isnan(value) and math.isnan(expected)), text
        if flag:
            assert good and int(text) == integer, text
    return int(ok.sum())


def _random_texts(rng: random.Random, n: int) -> list[str]:
    import decimal

    texts = []
    for i in range(n):
        kind = i % 6
        if kind == 0:  # what Python's json writes for doubles of any size
            texts.append(repr(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]))
        elif kind == 1:
            texts.append(repr(rng.random() * 10 ** rng.randint(-12, 12)))
        elif kind == 2:  # exact decimal expansions of midpoints between doubles, cut anywhere (ties and near-ties)
            x = rng.random() * 10 ** rng.randint(-6, 20)
            mid = decimal.Decimal(x) + decimal.Decimal(math.ulp(x)) / 2
            texts.append(format(mid, "f")[:rng.randint(12, 26)].rstrip(".") or "0")
        elif kind == 3:
            texts.append(str(rng.randint(-10**19, 10**19)))
        elif kind == 4:
            digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22)))
            cut = rng.randint(1, len(digits))
            text = digits[:cut] + ("." + digits[cut:] if cut < len(digits) else "")
            if rng.random() < 0.5:
                text += rng.choice("eE") + rng.choice(["", "-", "+"]) + str(rng.randint(0, 400))
            texts.append(("-" if rng.random() < 0.3 else "") + text)
        else:
            texts.append(rng.choice(["NaN", "Infinity", "-Infinity", "nan", "inf", "1_0", " 1", "-0", "0", "007", "1e5",
                                     "1E+05", "-.5", "5.", "1e-400", "1e400", "0e999", "-0.0e-0", "+1", "1.5e", "--1"]))
    return texts


def test_numbers_equal_float_on_a_wide_sample():
    rng = random.Random(20261201)
    texts = _random_texts(rng, 60_000)
    accepted = sum(_check_numbers(texts[i:i + 6000]) for i in range(0, len(texts), 6000))
    assert accepted > 0.5 * len(texts)
    metric_like = [repr(rng.random() * 10 ** rng.randint(-12, 12)) for _ in range(20_000)]
    assert _check_numbers(metric_like) > 0.95 * len(metric_like)  # what training runs log: the fast path
    exact = ["9007199254740993", "9007199254740995", "4503599627370497.5", "7864236400590823.5", "0.1", "1e23",
             "0.0033333333333333335", "1.7961229560201213e+09", "123456789012345678"]
    assert _check_numbers(exact * 20) == len(exact) * 20


_NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: json.dumps(x)),
    st.integers(-10**20, 10**20).map(str),
    st.from_regex(r"\A-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?\Z"),
    st.text(alphabet="0123456789.-+eE", min_size=1, max_size=26),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_NUMBER_TEXT, min_size=1, max_size=80))
def test_numbers_equal_float(texts):
    _check_numbers(texts * 20)  # repeated: every shape is common enough for the bulk path


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2**64 - 1), st.integers(-360, 330)), min_size=1, max_size=50))
def test_eisel_lemire_is_correctly_rounded(pairs):
    w = np.array([p[0] for p in pairs], dtype=np.uint64)
    q = np.array([p[1] for p in pairs], dtype=np.int64)
    values, ok = _numbers.eisel_lemire(w, q)
    for (m, e), value, good in zip(pairs, values.tolist(), ok.tolist()):
        if good:
            assert value == float(f"{m}e{e}"), (m, e)


# --- damaged records ----------------------------------------------------------------------------

def _payloads(folder: Path) -> list[bytes]:
    with open(next(folder.glob("run-*.wandb")), "rb") as fh:
        return [payload for _offset, payload in iter_records(fh, FramingState("x"))]


_MIXED = _payloads(SHAPES / "mixed_types" / "offline-run-20260101_000000-mixed001")
_KINDS = [record_class()[0].FromString(p).WhichOneof("record_type") for p in _MIXED]
_TARGETS = [i for i, kind in enumerate(_KINDS) if kind in ("history", "summary")]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_records_equal_the_per_record_decode(tmp_path_factory, data):
    """A history or summary record with flipped, inserted or deleted bytes (CRC still valid): the bulk
    decoder gives what the parser gives (the same rows, summary, and undecodable-record finding)."""
    payloads = list(_MIXED)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.sampled_from(_TARGETS))
        record = bytearray(payloads[i])
        if not record:
            continue
        at = data.draw(st.integers(0, len(record) - 1))
        how = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "cut"]))
        if how == "flip":
            record[at] ^= data.draw(st.integers(1, 255))
        elif how == "set":
            record[at] = data.draw(st.sampled_from([0x00, 0x01, 0x0A, 0x12, 0x1A, 0x2E, 0x30, 0x39, 0x65, 0x7F, 0x80,
                                                    0x82, 0xC0, 0xFF]))
        elif how == "insert":
            record[at:at] = bytes(data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=4)))
        elif how == "delete":
            del record[at:at + data.draw(st.integers(1, 4))]
        else:
            del record[at:]
        payloads[i] = bytes(record)
    folder = tmp_path_factory.mktemp("mut") / "wandb" / "offline-run-20260101_000000-mut00001"
    folder.mkdir(parents=True)
    (folder / "run-mut00001.wandb").write_bytes(frame_records(payloads))
    mp = pytest.MonkeyPatch()
    try:
        fast, slow = both_ways(folder, mp)
    finally:
        mp.undo()
    assert fast == slow


# --- framing and CRCs in bulk -------------------------------------------------------------------

def _framed_both_ways(data: bytes, tmp_path: Path):
    """(records, findings) of the bulk framing and of the exact chunk loop."""
    from pimm_inspect.sources.wandb._batches import frame_batches

    log = tmp_path / "run-x.wandb"
    log.write_bytes(data)
    with open(log, "rb") as fh:
        state = FramingState("x")
        bulk_records = [bytes(b.buf[s:e]) for b in frame_batches(fh, state)
                        for s, e in zip(b.starts.tolist(), b.ends.tolist())]
        bulk_findings = [(f.code, f.message) for f in state.findings]
    with open(log, "rb") as fh:
        state = FramingState("x")
        exact_records = [p for _o, p in iter_records(fh, state)]
        exact_findings = [(f.code, f.message) for f in state.findings]
    return (bulk_records, bulk_findings), (exact_records, exact_findings)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_chunks_are_found_as_the_exact_loop_finds_them(tmp_path, seed, monkeypatch):
    """Bytes flipped inside payloads, headers or block tails (CRCs not updated), one to four per file,
    some in one segment: bulk framing (one CRC pass per segment) gives the exact loop's records and findings."""
    import pimm_inspect.sources.wandb._batches as batches
    from pimm_inspect.sources.wandb._framing import BLOCK_LEN

    rng = random.Random(seed)
    monkeypatch.setattr(batches, "SEGMENT_BLOCKS", rng.choice([2, 4, 256]))
    cls, _ = record_class()
    records = []
    for i in range(4000):
        rec = cls()
        rec.num = i + 1
        item = rec.history.item.add()
        item.nested_key.append("loss")
        item.value_json = repr(1 / (i + 1)) * rng.randint(1, 30)  # lengths vary; some records span blocks
        records.append(rec.SerializeToString())
    data = bytearray(frame_records(records))
    import pimm_inspect.sources.wandb._crc as crc

    checked_one_by_one = []
    real = crc.per_chunk_mismatch
    monkeypatch.setattr(crc, "per_chunk_mismatch", lambda *a: checked_one_by_one.append(len(a[1])) or real(*a))
    clean = _framed_both_ways(bytes(data), tmp_path)
    assert clean[0] == clean[1] and clean[0][0] == records
    assert max(checked_one_by_one, default=0) < 64  # intact segments: one CRC pass each (a few chunks: one by one)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(7, len(data) - BLOCK_LEN) if rng.random() < 0.7 else rng.randrange(7, 6 * BLOCK_LEN)
        data[at] ^= rng.randint(1, 255)
    fast, exact = _framed_both_ways(bytes(data), tmp_path)
    assert fast == exact
    assert fast[1] and fast[0] != records  # the damage was seen (and is what the exact loop reports)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=60))
def test_non_ascii_spans(chunks):
    from pimm_inspect.sources.wandb._scan import non_ascii

    data = bytearray()
    starts, ends = [], []
    for chunk in chunks:
        data += b"\xff"  # a non-ASCII byte between spans must not count
        starts.append(len(data))
        data += chunk
        ends.append(len(data))
    buf, words = padded(bytes(data))
    found = non_ascii(buf, words, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))
    assert found.tolist() == [any(b >= 0x80 for b in chunk) for chunk in chunks]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=60),
                          st.lists(st.tuples(st.sampled_from([0x0A, 0x12, 0x1A, 0x08]), st.binary(max_size=200)),
                                   max_size=30).map(lambda fs: b"".join(bytes([t]) + _varint(len(b)) + b for t, b in fs))),
                min_size=1, max_size=20))
def test_field_walk_in_python_equals_the_lock_step(bodies):
    """The Python tail of the field walk (rows of hundreds of keys) finds what the numpy lock-step finds."""
    from pimm_inspect.sources.wandb import _scan

    data = bytearray(b"\x00" * 8)
    starts, ends = [], []
    for body in bodies:
        starts.append(len(data))
        data += body
        ends.append(len(data))
    buf, words = padded(bytes(data))
    spans = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
    saved = _scan.TAIL_MESSAGES, _scan.TAIL_AFTER
    try:
        _scan.TAIL_MESSAGES, _scan.TAIL_AFTER = 0, 0
        numpy_walk = _scan.fields(buf, words, *spans)
        _scan.TAIL_MESSAGES = 10**9
        python_walk = _scan.fields(buf, words, *spans)
    finally:
        _scan.TAIL_MESSAGES, _scan.TAIL_AFTER = saved
    for name in ("parent", "tag", "start", "end", "bad"):
        assert getattr(numpy_walk, name).tolist() == getattr(python_walk, name).tolist(), name


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=80))
def test_span_ids_group_equal_bytes(chunks):
    from pimm_inspect.sources.wandb._scan import span_ids

    data = bytearray(b"\x07" * 8)
    starts, ends = [], []
    for chunk in chunks + chunks[: len(chunks) // 2]:  # repeats: equal spans at other places
        starts.append(len(data))
        data += chunk
        ends.append(len(data))
        data += b"\x00\xff"
    _buf, words = padded(bytes(data))
    ids, first = span_ids(words, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))
    spans = [bytes(data[s:e]) for s, e in zip(starts, ends)]
    for i, j in [(i, j) for i in range(len(spans)) for j in range(len(spans))]:
        assert (ids[i] == ids[j]) == (spans[i] == spans[j])
    assert sorted(spans[k] for k in first.tolist()) == sorted(set(spans))


def test_span_ids_see_every_byte():
    """Spans of one length that differ in a single byte, at every position, for lengths 1-40."""
    from pimm_inspect.sources.wandb._scan import span_ids

    data = bytearray(b"\x07" * 8)
    starts, ends, spans = [], [], []
    for length in range(1, 41):
        base = bytes((i * 37 + length) % 251 for i in range(length))
        for position in [None, *range(length)]:
            span = bytearray(base)
            if position is not None:
                span[position] ^= 0x5A
            starts.append(len(data))
            data += span
            ends.append(len(data))
            spans.append(bytes(span))
    _buf, words = padded(bytes(data))
    ids, _first = span_ids(words, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))
    assert len(set(ids.tolist())) == len(set(spans)) == len(spans)


_ITEM = st.one_of(
    st.binary(max_size=30),
    st.tuples(st.lists(st.tuples(st.sampled_from([0x0A, 0x12]), st.binary(max_size=12)), max_size=3),
              st.binary(max_size=150)).map(
        lambda kv: b"".join(bytes([t, len(k)]) + k for t, k in kv[0]) + b"\x82\x01" + _varint(len(kv[1])) + kv[1]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ITEM, min_size=1, max_size=40))
def test_item_layout_fast_path_equals_the_general_walk(item_bytes):
    from pimm_inspect.sources.wandb import _scan

    data = bytearray(b"\x00" * 8)
    starts, ends = [], []
    for item in item_bytes:
        starts.append(len(data))
        data += item
        ends.append(len(data))
    _buf, words = padded(bytes(data))
    spans = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
    fast = _scan.items(words, *spans)
    general = _scan._items_general(words, *spans)
    assert fast[2].tolist() == general[2].tolist()
    good = general[2]
    assert fast[0][good].tolist() == general[0][good].tolist() and fast[1][good].tolist() == general[1][good].tolist()
