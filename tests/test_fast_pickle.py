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
import zipfile
from pathlib import Path
from typing import Any

import pytest

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
SMALL = {k: v for k, v in TORCH.items() if "e2_model_last" in k or k.endswith(".metadata") or "prezip" in k}


def _describe(value: Any) -> Any:
    """A comparable copy of an unpickled tree: types kept, placeholders by their fields, sharing by first index."""
    seen: dict[int, int] = {}
    count = [0]

    def go(node: Any, depth: int) -> Any:
        count[0] += 1
        if depth > 200 or count[0] > 200_000:
            return "<cut>"
        if node is None or isinstance(node, (bool, float, str)):
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


@pytest.mark.parametrize("name", sorted(TORCH))
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


def _framed() -> list[bytes]:
    tree = {"schema": "x", "blob": "é" * 70_000, "items": [(i, -i, 2**40 + i, f"k{i}", b"b" * (i % 7), i / 3)
                                                     for i in range(3000)], "flags": [True, False, None]}
    return [pickle.dumps(tree, protocol=p) for p in (2, 3, 4, 5)]


def test_framed_pickles_and_their_damage_same_as_pickles_loop():
    for data in _framed():
        outcome = _same(data)
        assert outcome[0][0][1]
        for bad in _damaged(data, seed=len(data), count=60):
            _same(bad)
    data = _framed()[2]
    assert b"\x95" in data[:12]  # protocol 4 frames
    frame_starts = [i for i in range(len(data) - 9) if data[i] == 0x95]
    for at in frame_starts[:40]:
        for cut in (at, at + 1, at + 5, at + 9, at + 10):
            _same(data[:cut])
