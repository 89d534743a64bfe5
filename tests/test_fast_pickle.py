"""The safe unpickler's fast loop (``_fast_pickle``) against pickle's own loop (``SafeUnpickler(fast=False)``).

Real torch.save pickles from the fixtures must give the same tree, globals, tensors and budget counts;
damaged copies (cut at many offsets, bytes overwritten), every hostile and fuzz-found pickle we keep,
framed protocol 4/5 pickles and tight opcode budgets must give exactly what pickle's loop gives: the
same value or partial value, error text, truncation flag, end offset and counters.
"""

from __future__ import annotations

import pickle
import random
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pimm_inspect.sources.checkpoint import _fast_pickle
from pimm_inspect.sources.checkpoint import _placeholders as ph
from pimm_inspect.sources.checkpoint._pickle_budget import Budget
from pimm_inspect.sources.checkpoint.safe_pickle import SafeUnpickler
from tests import hostile_checkpoint_inputs as hci
from tests.test_safe_pickle import _hostile_pickles

REPO = Path(__file__).resolve().parent.parent
HOSTILE = REPO / "tests" / "data" / "hostile"
FUZZ = REPO / "tests" / "data" / "fuzz"


def _torch_pickles() -> dict[str, bytes]:
    """Every data.pkl of the fixtures' torch.save zips, every DCP .metadata and the legacy pre-zip file."""
    found: dict[str, bytes] = {}
    roots = [REPO / "fixtures" / "checkpoints", REPO / "fixtures" / "runs"]
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.is_symlink():
                continue
            name = str(path.relative_to(REPO))
            if path.name == ".metadata":
                found[name] = path.read_bytes()
            elif path.suffix in (".pth", ".pt", ".ckpt", ".bin", ".prev") and zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as archive:
                    for member in archive.namelist():
                        if member.endswith("/data.pkl"):
                            found[f"{name}:{member}"] = archive.read(member)
            elif path.name == "e0_prezip.pth":
                found[name] = path.read_bytes()
    return found


TORCH = _torch_pickles()
UNIQUE = {data: name for name, data in sorted(TORCH.items(), reverse=True)}
"""Each distinct fixture pickle once, under its first name (many runs hold the same checkpoint)."""
SMALL = {k: v for v, k in UNIQUE.items() if "e2_model_last" in k or k.endswith(".metadata") or "prezip" in k}


def _describe(value: Any) -> Any:
    """A comparable copy of an unpickled tree: types kept, placeholders by their fields, sharing by first index."""
    seen: dict[int, int] = {}
    count = [0]

    def go(node: Any, depth: int) -> Any:
        count[0] += 1
        if depth > 200 or count[0] > 200_000:
            return "<cut>"
        if isinstance(node, float):
            return (type(node).__name__, struct.pack(">d", node).hex())  # bit for bit: -0.0, NaN payloads
        if node is None or isinstance(node, (bool, str)):
            return (type(node).__name__, repr(node))
        if isinstance(node, int):
            return (type(node).__name__, hex(node))
        if isinstance(node, (bytes, bytearray)):
            return (type(node).__name__, bytes(node))
        if id(node) in seen:
            return ("<shared>", seen[id(node)])
        seen[id(node)] = len(seen)
        kind = type(node).__name__
        if isinstance(node, dict):
            return (kind, [(go(k, depth + 1), go(v, depth + 1)) for k, v in list(node.items())],
                    go(getattr(node, "__dict__", None), depth + 1))
        if isinstance(node, (list, tuple)):
            return (kind, [go(v, depth + 1) for v in node])
        if isinstance(node, (set, frozenset)):
            return (kind, sorted(repr(go(v, depth + 1)) for v in node))
        if isinstance(node, ph.PickledObject):
            return (repr(node), go(node.args, depth + 1), go(node.kwargs, depth + 1), go(node.state, depth + 1))
        if isinstance(node, ph.ArrayPlaceholder):
            return (kind, node.dtype, node.shape, node.nbytes)
        if isinstance(node, ph.NumpyDtype):
            return (kind, node.spec, node.byteorder)
        if hasattr(node, "__code__"):  # a stand-in function (its repr holds an address)
            return (kind, node.__qualname__)
        return (kind, re.sub(r" at 0x[0-9a-f]+", "", repr(node)), go(getattr(node, "__dict__", None), depth + 1))

    return go(value, 0)


def _outcome(data: bytes, fast: bool, max_ops: int | None = None, loads: int = 1) -> Any:
    """Everything a load makes visible: per pickle the value, ok, error, truncated, end offset; then the counters."""
    unpickler = SafeUnpickler(data, fast=fast)
    if max_ops is not None:
        unpickler.budget = Budget(max_ops=max_ops)
    results = []
    for _ in range(loads):
        result = unpickler.load()
        results.append((_describe(result.value), result.ok, result.error, result.truncated, result.end_offset))
        if not result.ok:
            break
    rec, budget = unpickler.recorder, unpickler.budget
    return (results, rec.unsafe_globals, rec.globals_seen, sorted(rec.storages.items()), rec.tensor_count,
            rec.tensor_numel_bytes, budget.ops, budget.objects, budget.nbytes, budget.called)


def _same(data: bytes, max_ops: int | None = None, loads: int = 1) -> Any:
    fast = _outcome(data, True, max_ops, loads)
    slow = _outcome(data, False, max_ops, loads)
    assert fast == slow
    return fast


def test_fixture_pickles_were_found():
    assert len(TORCH) >= 20
    assert any(k.endswith(".metadata") for k in TORCH) and any("prezip" in k for k in TORCH)


@pytest.mark.parametrize("name", sorted(UNIQUE.values()))
def test_real_torch_pickle_same_as_pickles_loop(name):
    results = _same(TORCH[name], loads=5)[0]
    assert results[0][1], results[0][2]  # read whole, with a real value
    assert results[0][0] != ("NoneType", "None")


def test_real_torch_pickle_matches_c_pickle_tree():
    """The fast loop's tree equals what CPython's C unpickler builds with the same stand-ins (no hostile input)."""
    from pimm_inspect.sources.checkpoint import safe_pickle as sp

    class CUnpickler(sp._SafeMixin, pickle.Unpickler):
        pass

    name = next(k for k in TORCH if "e2_model_last" in k)
    data = TORCH[name]
    fast = SafeUnpickler(data).load()
    import io
    c = CUnpickler(io.BytesIO(data))
    c.recorder, c.budget = sp._Recorder(), Budget()
    assert _describe(fast.value) == _describe(c.load())


def _damaged(data: bytes, seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    out = [data[:cut] for cut in sorted(rng.sample(range(len(data)), min(count, len(data))))]
    for _ in range(count):
        at = rng.randrange(len(data))
        value = rng.choice([0, 0xFF, 0x7F, 0x80, ord("q"), ord("X"), ord("("), ord("t"), ord("R"), ord("."),
                            0x95, ord("c"), ord("h"), ord("j"), rng.randrange(256)])
        out.append(data[:at] + bytes([value]) + data[at + 1:])
        width = rng.randrange(1, 9)
        out.append(data[:at] + bytes(rng.randrange(256) for _ in range(width)) + data[at + width:])
    return out


@pytest.mark.parametrize("name", sorted(SMALL))
def test_damaged_torch_pickles_same_as_pickles_loop(name):
    data = SMALL[name]
    for bad in _damaged(data, seed=len(data), count=150):
        _same(bad, loads=5)


def test_every_cut_of_a_small_pickle_same_as_pickles_loop():
    name = min(TORCH, key=lambda k: len(TORCH[k]))
    data = TORCH[name]
    assert len(data) < 5000
    for cut in range(len(data) + 1):
        _same(data[:cut])


@pytest.mark.parametrize("max_ops", [0, 1, 2, 3, 50, 777, 1391, 1392, 1393, 5000])
def test_opcode_budget_same_as_pickles_loop(max_ops):
    for name in sorted(SMALL):
        _same(SMALL[name], max_ops=max_ops, loads=5)


def _hostile_inputs(tmp: Path) -> dict[str, bytes]:
    found = {f"handmade {k}": v for k, v in _hostile_pickles(tmp / "pwned").items()}
    for path in sorted(FUZZ.iterdir()):
        found[f"fuzz {path.name}"] = path.read_bytes()
    for path in sorted(HOSTILE.glob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if zipfile.is_zipfile(path):
            try:
                with zipfile.ZipFile(path) as archive:
                    for member in archive.namelist():
                        info = archive.getinfo(member)
                        if member.endswith("data.pkl") and info.compress_type == zipfile.ZIP_STORED:
                            found[f"hostile {path.name}:{member}"] = archive.read(member)
            except zipfile.BadZipFile:
                pass
        else:
            found[f"hostile {path.name}"] = data
    for builder in (hci.poisoning_pickle, hci.bytearray_bomb_pickle, hci.tensor_dims_bomb_pickle,
                    hci.dcp_planner_list_metadata):
        found[f"builder {builder.__name__}"] = builder()
    return found


def test_hostile_pickles_same_as_pickles_loop(tmp_path):
    inputs = _hostile_inputs(tmp_path)
    assert len(inputs) >= 20
    for name, data in inputs.items():
        _same(data, loads=3)
    assert not (tmp_path / "pwned").exists()


def _tree(items: int) -> dict[str, Any]:
    """Every opcode kind pickle writes for plain data: str short and long, bytes, ints of every width, floats, tuples,
    lists, dicts, True/False/None, and a long run of numbers (RNG-state-like ints, then floats)."""
    rng = random.Random(items)
    return {"schema": "x", "blob": "é" * (items * 24), "flags": [True, False, None],
            "items": [(i, -i, 2**40 + i, f"k{i}", b"b" * (i % 7), i / 3) for i in range(items)],
            "rng": (3, tuple(rng.getrandbits(32) for _ in range(300)) + (624,), None),
            "floats": [rng.random() for _ in range(200)]}


def _small_frames(tree: Any, protocol: int, target: int) -> bytes:
    """``tree`` pickled by pickle's pure-Python pickler with frames of about ``target`` bytes (64 KiB in pickle)."""
    import io

    out = io.BytesIO()
    pickler = pickle._Pickler(out, protocol=protocol)  # type: ignore[attr-defined]
    pickler.framer._FRAME_SIZE_TARGET = target
    pickler.dump(tree)
    return out.getvalue()


def _frames(data: bytes) -> list[tuple[int, int]]:
    """(position, length) of each FRAME opcode of an intact pickle."""
    import pickletools

    return [(pos, arg) for op, arg, pos in pickletools.genops(data) if op.name == "FRAME"]


def _framed() -> dict[str, bytes]:
    """The tree at protocols 2 and 3 (no frames) and 4 (5 writes the same opcodes), with pickle's 64 KiB frames
    and with 1 KiB frames (many frame ends, and long strings written between frames, at a tenth of the size)."""
    big = _tree(1700)
    small = _tree(300)
    out = {f"protocol {p}": pickle.dumps(small, protocol=p) for p in (2, 3)}
    out["protocol 4, 64 KiB frames"] = pickle.dumps(big, protocol=4)
    assert pickle.dumps(big, protocol=5)[2:] == out["protocol 4, 64 KiB frames"][2:]  # 5: only PROTO differs
    out["protocol 4, 1 KiB frames"] = _small_frames(small, 4, 1024)
    return out


def _frame_damage(data: bytes) -> list[bytes]:
    """Cuts at and just after every FRAME opcode, inside its length, at its frame's end; lengths made wrong."""
    out = []
    for at, length in _frames(data):
        for cut in (at, at + 1, at + 5, at + 9, at + 10, at + 9 + length - 1, at + 9 + length, at + 9 + length + 1):
            out.append(data[:cut])
        for wrong in (length - 1, length + 1, 0, 2**63):
            out.append(data[:at + 1] + wrong.to_bytes(8, "little") + data[at + 9:])
    return out


def test_framed_pickles_and_their_damage_same_as_pickles_loop():
    """Every protocol's opcodes, frame handling and damage shape (cuts, byte and span overwrites, broken FRAMEs).

    Damaged copies come from ``_damaged``'s seeded rule (a fixed sample of cut points and overwrites) plus every
    FRAME's own damage, duplicates dropped."""
    inputs = _framed()
    assert len(_frames(inputs["protocol 4, 64 KiB frames"])) >= 3
    assert len(_frames(inputs["protocol 4, 1 KiB frames"])) >= 10
    assert not _frames(inputs["protocol 2"]) and not _frames(inputs["protocol 3"])
    seen = set()
    for name, data in inputs.items():
        outcome = _same(data)
        assert outcome[0][0][1], name
        damaged = _frame_damage(data) + _damaged(data, seed=len(data), count=6 if "64 KiB" in name else 40)
        for bad in damaged:
            if bad not in seen:
                seen.add(bad)
                _same(bad)
    assert len(seen) >= 400


def _number_opcode(rng: random.Random) -> bytes:
    """One number opcode with a random argument: BININT1/2/BININT, LONG1 of 0-9 bytes, BINFLOAT (NaNs included)."""
    kind = rng.randrange(7)
    if kind == 0:
        return b"K" + bytes([rng.randrange(256)])
    if kind == 1:
        return b"M" + rng.randbytes(2)
    if kind == 2:
        return b"J" + rng.randbytes(4)
    if kind == 3:
        size = rng.choice([0, 1, 2, 3, 4, 5, 5, 5, 8, 9])
        return b"\x8a" + bytes([size]) + rng.randbytes(size)
    if kind == 4:
        return b"G" + rng.choice([b"\x7f\xf8\x00\x00\x00\x00\x00\x01", b"\x7f\xf0\x00\x00\x00\x00\x00\x01",
                                  b"\xff\xf8\xde\xad\xbe\xef\x00\x00", b"\x80" + bytes(7), b"\x7f\xf0" + bytes(6)])
    return b"G" + rng.randbytes(8)


def _number_pickles() -> dict[str, bytes]:
    """Runs of number opcodes: random ones (every width, NaN payloads, -0.0), one over 4,096 opcodes, real RNG
    states, and a float list long enough for protocol 4 to split it across frames."""
    rng = random.Random(23)
    out = {}
    for n in (5, 40, 300, 5000):
        body = b"".join(_number_opcode(rng) for _ in range(n))
        out[f"random run of {n}"] = b"\x80\x02}q\x00(X\x01\x00\x00\x00a(" + body + b"lu."
    state = random.Random(5).getstate()
    out["random.getstate()"] = pickle.dumps({"python": state, "step": 2**40, "loss": [0.5, -0.0]}, protocol=2)
    out["floats, protocol 4 frames"] = pickle.dumps([rng.random() for _ in range(20_000)], protocol=4)
    return out


def test_number_runs_same_as_pickles_loop_bit_for_bit(monkeypatch):
    """Runs decoded by the C unpickler give pickle's loop's values bit for bit, counters, cuts and budgets."""
    calls = []
    monkeypatch.setattr(_fast_pickle, "_loads", lambda data: calls.append(len(data)) or pickle.loads(data))
    for name, data in _number_pickles().items():
        calls.clear()
        ops = _same(data)[6]
        assert (len(calls) > 0) == (name != "random run of 5"), name  # the run path is really taken
        assert len(_frames(data)) >= 2 or "frames" not in name
        cuts = sorted(set(random.Random(len(data)).sample(range(len(data)), 25)) | set(range(0, 60)))
        for cut in cuts:
            _same(data[:cut])
        for bad in _frame_damage(data):
            _same(bad)
        for max_ops in sorted({0, 1, 7, 8, 9, 40, 4096, 4104, 4105, ops // 2, ops - 1, ops, ops + 1}):
            _same(data, max_ops=max_ops)


def _mutations(data: bytes, rng: random.Random) -> list[bytes]:
    """Cuts and overwrites inside the number runs of a real pickle (its RNG states, step counts, floats), and anywhere."""
    runs = []
    pos = 0
    while pos < len(data):
        match = _fast_pickle._NUMBER_RUN(data, pos, len(data))
        if match is not None and match.end() - pos >= _fast_pickle.MIN_RUN_BYTES:
            runs.append((pos, match.end()))
            pos = match.end()
        else:
            pos += 1
    spans = [run for run in runs[:4] for _ in range(2)] + [(0, len(data))]  # and once anywhere
    out = []
    for start, stop in spans:
        at = rng.randrange(start, stop)
        out.append(data[:at])
        value = rng.choice([ord("J"), ord("K"), ord("M"), ord("G"), 0x8A, 0x09, 0xFF, ord("."), rng.randrange(256)])
        out.append(data[:at] + bytes([value]) + data[at + 1:])
    return out


def test_mutated_torch_pickles_same_as_pickles_loop():
    """Seeded mutations of every distinct fixture pickle, most inside its number runs."""
    rng = random.Random(7)
    count = 0
    for data in sorted(UNIQUE, key=UNIQUE.__getitem__):
        for bad in _mutations(data, rng):
            _same(bad, loads=2)
            count += 1
    assert count >= 250
