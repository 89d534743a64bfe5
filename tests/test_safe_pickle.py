"""The allow-listing unpickler: real torch/numpy shapes, hostile pickles, resource bounds."""

from __future__ import annotations

import enum
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from pimm_inspect.sources.checkpoint.safe_pickle import (ArrayPlaceholder, PickledObject, SafeUnpickler, TensorPlaceholder,
                                              UnsafeGlobal, safe_loads, to_plain)
from tests.hostile_support import PEAK_KIB


def _hostile_pickles(marker: Path) -> dict[str, bytes]:
    """Hand-assembled pickles that would run ``touch <marker>`` if any global were honoured."""
    cmd = f"touch {marker}".encode()
    short = bytes([len(cmd)])
    return {
        "GLOBAL+REDUCE p0": b"cos\nsystem\n(S'" + cmd + b"'\ntR.",
        "INST p0": b"(S'" + cmd + b"'\nios\nsystem\n.",
        "OBJ p1": b"(cos\nsystem\nU" + short + cmd + b"o.",
        "STACK_GLOBAL p4": b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c" + short + cmd + b"\x85R.",
        "NEWOBJ p2": b"\x80\x02csubprocess\nPopen\n]U" + short + cmd + b"a\x85\x81.",
        "NEWOBJ_EX p4": b"\x80\x04\x8c\nsubprocess\x8c\x05Popen\x93]\x8c" + short + cmd + b"a\x85}\x92.",
        "eval p2": b"\x80\x02cbuiltins\neval\nU" + bytes([len(b"__import__('os').system('" + cmd + b"')")])
                   + b"__import__('os').system('" + cmd + b"')\x85R.",
        "setstate trick p2": b"\x80\x02cbuiltins\nobject\n)\x81}U\x0c__setstate__cos\nsystem\nsbU" + short + cmd + b"b.",
        "import module p2": b"\x80\x02cbuiltins\n__import__\nU\x02os\x85R.",
        "copyreg reconstructor p0": b"ccopy_reg\n_reconstructor\n(cos\nsystem\nc__builtin__\nobject\nS'" + cmd
                                    + b"'\ntR.",
    }


@pytest.mark.parametrize("name", list(_hostile_pickles(Path("/x"))))
def test_hostile_pickle_never_runs_and_is_listed(tmp_path: Path, name: str) -> None:
    marker = tmp_path / "pwned"
    data = _hostile_pickles(marker)[name]
    result, unpickler = safe_loads(data)
    assert not marker.exists()
    assert unpickler.unsafe_globals, name
    assert any(g in unpickler.unsafe_globals for g in ("os.system", "subprocess.Popen", "builtins.eval",
                                                       "builtins.__import__"))


def test_reduce_from_python_object_is_inert(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    for protocol in range(6):
        result, unpickler = safe_loads(pickle.dumps({"x": Evil()}, protocol=protocol))
        assert result.ok
        assert isinstance(type(result.value["x"]), UnsafeGlobal)
        assert result.value["x"].args == (f"touch {marker}",)
        assert unpickler.unsafe_globals == ("posix.system",)
    assert not marker.exists()


def test_unsafe_placeholder_calls_and_attributes_are_inert() -> None:
    result, _ = safe_loads(b"\x80\x02cos\nsystem\n.")
    cls = result.value
    assert isinstance(cls, UnsafeGlobal) and cls.dotted == "os.system"
    obj = cls("rm -rf /")
    assert isinstance(obj, PickledObject) and obj.args == ("rm -rf /",)
    assert repr(obj.whatever()) == "<inert>"
    assert repr(cls.path.join("a")) == "<inert>"


class Strategy(enum.Enum):
    STEPS = "steps"


class FakeTrainingArguments:
    def __init__(self) -> None:
        self.output_dir = "/scratch/user/out"
        self.logging_steps = 10
        self.report_to = ["wandb"]
        self.eval_strategy = Strategy.STEPS


def test_build_state_of_unknown_class_is_readable_data() -> None:
    result, unpickler = safe_loads(pickle.dumps(FakeTrainingArguments(), protocol=2))
    assert result.ok
    args = result.value
    assert args.output_dir == "/scratch/user/out" and args.logging_steps == 10
    plain = to_plain(args)
    assert plain == {"output_dir": "/scratch/user/out", "logging_steps": 10, "report_to": ["wandb"],
                     "eval_strategy": "steps"}
    assert set(unpickler.unsafe_globals) == {"tests.test_safe_pickle.FakeTrainingArguments",
                                             "tests.test_safe_pickle.Strategy"} or \
        all(g.endswith(("FakeTrainingArguments", "Strategy")) for g in unpickler.unsafe_globals)


def test_numpy_values_without_numpy_import() -> None:
    payload = {"f": np.float64(1.5), "i": np.int64(-7), "u": np.uint8(200), "b": np.bool_(True),
               "h": np.float16(0.5), "arr": np.arange(6, dtype=np.float32).reshape(2, 3),
               "state": np.random.RandomState(3).get_state()}
    result, unpickler = safe_loads(pickle.dumps(payload, protocol=2))
    assert result.ok, result.error
    value = result.value
    assert (value["f"], value["i"], value["u"], value["b"], value["h"]) == (1.5, -7, 200, True, 0.5)
    assert isinstance(value["arr"], ArrayPlaceholder)
    assert (value["arr"].dtype, value["arr"].shape, value["arr"].nbytes) == ("<f4", (2, 3), 24)
    assert value["state"][0] == "MT19937" and value["state"][1].shape == (624,)
    assert unpickler.unsafe_globals == ()


def test_builtins_stand_ins() -> None:
    payload = {"s": {1, 2}, "fs": frozenset({3}), "c": 1 + 2j, "sl": slice(1, 5, 2), "r": range(3),
               "ba": bytearray(b"xy"), "b": b"\x00\xff"}
    for protocol in (0, 2, 4):
        result, unpickler = safe_loads(pickle.dumps(payload, protocol=protocol))
        assert result.ok, (protocol, result.error)
        assert result.value == payload
        assert unpickler.unsafe_globals == ()


def test_resource_bounds() -> None:
    refused, _ = safe_loads(pickle.dumps(list(range(100))), cap=10)
    assert not refused.ok and "cap" in refused.error
    huge_alloc, _ = safe_loads(b"\x80\x02c__builtin__\nbytearray\nJ\x00\x00\x00\x7f\x85R.")
    assert huge_alloc.ok and repr(huge_alloc.value) == "<inert>"
    # Deep nesting: the (iterative) pure-Python unpickler copes; to_plain stops at its depth cap instead of recursing.
    deep = b"\x80\x02" + b"]" * 100_000 + b"a" * 99_999 + b"."
    result, _ = safe_loads(deep)
    assert result.ok
    assert to_plain(result.value) is not None
    # Exponential sharing ("billion laughs") stays bounded in to_plain.
    node: list = []
    for _ in range(60):
        node = [node, node]
    result, _ = safe_loads(pickle.dumps(node, protocol=2))
    assert result.ok and to_plain(result.value) is not None


def test_counted_length_beyond_the_input_is_refused_before_allocating() -> None:
    """BYTEARRAY8 claiming 4 GiB in a 15-byte pickle: pickle's own code would zero-fill 4 GiB first.

    (CI was OOM-killed by a hypothesis example of this shape claiming tens of GB.) Measured as the
    resident memory of a fresh process, the cost that matters.
    """
    import subprocess
    import sys

    script = (
        "import resource, struct\n"
        "from pimm_inspect.sources.checkpoint.safe_pickle import safe_loads\n"
        "r, _ = safe_loads(b'\\x80\\x05\\x96' + struct.pack('<Q', 4 << 30) + b'xyz.')\n"
        f"print(r.ok, r.truncated, {PEAK_KIB})\n"  # the child's own peak (tests/hostile_support.PEAK_KIB)
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    ok, truncated, max_rss_kib = out.stdout.split()
    assert (ok, truncated) == ("False", "True")
    assert int(max_rss_kib) < 300 * 1024, max_rss_kib
    honest, _ = safe_loads(b"\x80\x05\x96" + (3).to_bytes(8, "little") + b"xyz.")
    assert honest.ok and honest.value == bytearray(b"xyz")


def test_truncated_pickle_gives_partial_value() -> None:
    data = pickle.dumps({"epoch": 3, "iter": 7, "nested": {"a": [1, 2, 3]}}, protocol=2)
    result, _ = safe_loads(data[:-12])
    assert not result.ok and result.truncated
    assert result.value["epoch"] == 3 and result.value["iter"] == 7


def test_garbage_never_raises() -> None:
    for blob in (b"\x80\x02\xff\xfe", b"\x80\x05" + b"\x00" * 20, b"(((((", b"\x80\x02}q\x00(K\x01]q\x01\x85u"):
        result, _ = safe_loads(blob)
        assert result.ok is False and result.error


def test_sequential_pickles_share_a_recorder() -> None:
    data = pickle.dumps(1) + pickle.dumps({"a": 2})
    unpickler = SafeUnpickler(data)
    first, second = unpickler.load(), unpickler.load()
    assert (first.value, second.value) == (1, {"a": 2})
    assert second.end_offset == len(data)


def test_tensor_placeholder_fields_from_rebuild() -> None:
    # _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks) with a persistent id,
    # in the exact opcode shape torch.save writes (protocol 2).
    data = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nHalfStorage\n"
            b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89ccollections\n"
            b"OrderedDict\n)RtR.")
    result, unpickler = safe_loads(data)
    assert result.ok, result.error
    assert result.value == TensorPlaceholder("float16", (2, 3), 6, 12, "0")
    assert unpickler.recorder.tensor_count == 1 and unpickler.recorder.storage_bytes == 12


def _load_with(data: bytes, **limits: int):
    """Unpickle with a smaller budget, so each amplification is shown without allocating much."""
    from pimm_inspect.sources.checkpoint._pickle_budget import Budget

    unpickler = SafeUnpickler(data)
    unpickler.budget = Budget(**limits)
    return unpickler.load()


@pytest.mark.parametrize("case", ["ordered-dict copies", "unsafe call args", "build merges", "encode copies",
                                  "bytearray sizes", "opcodes", "unsafe classes"])
def test_every_amplification_is_charged_to_one_budget(case: str) -> None:
    """A few memoised bytes repeated: each copy, allocation or class is charged before it is made."""
    big_dict = b"}q\x00(" + b"".join(b"J" + i.to_bytes(4, "little") + b"N" for i in range(10_000)) + b"u"
    big_tuple = b"(" + b"N" * 10_000 + b"tq\x00"
    repeat = 2_000
    body = {
        "ordered-dict copies": big_dict + b"0ccollections\nOrderedDict\nq\x01]q\x02(" + b"h\x01h\x00\x85R" * repeat,
        "unsafe call args": big_tuple + b"0cmy.mod\nThing\nq\x01]q\x02(" + b"h\x01h\x00R" * repeat,
        "build merges": big_dict + b"0cmy.mod\nThing\nq\x01]q\x02(" + b"h\x01)Rh\x00}\x86b" * repeat,
        "encode copies": b"X" + (1 << 16).to_bytes(4, "little") + b"a" * (1 << 16) + b"q\x00"
                         + b"c_codecs\nencode\nq\x01]q\x02(" + b"h\x01h\x00X\x06\x00\x00\x00latin1\x86R" * repeat,
        "bytearray sizes": b"c__builtin__\nbytearray\nq\x01]q\x02(" + b"h\x01J\x00\x00\x01\x00\x85R" * repeat,
        "opcodes": b"]q\x02(" + b"N" * 200_000,
        "unsafe classes": b"]q\x02(" + b"".join(b"cm\nc%d\n" % i for i in range(5 * repeat)),
    }[case]
    data = b"\x80\x02" + body + b"e."
    limited = _load_with(data, max_bytes=16 << 20, max_objects=5_000_000, max_ops=100_000)
    assert not limited.ok and "budget" in limited.error, (case, limited.error)
    assert "unpickling stopped: more than" in limited.error
    roomy = _load_with(data, max_bytes=1 << 40, max_objects=1 << 40, max_ops=1 << 40)
    assert roomy.ok, (case, roomy.error)  # the same pickle is fine: only the budget stopped it


def test_the_budget_spans_every_pickle_of_one_file() -> None:
    from pimm_inspect.sources.checkpoint._pickle_budget import Budget

    one = pickle.dumps(list(range(1000)), protocol=2)
    unpickler = SafeUnpickler(one * 3)
    unpickler.budget = Budget(max_ops=2500)
    assert unpickler.load().ok and unpickler.load().ok
    third = unpickler.load()
    assert not third.ok and "opcodes" in third.error


def _plain_tree() -> dict:
    """Plain data that every protocol writes with different opcodes (memo puts, frames, long strings)."""
    return {"epoch": 3, "big": 2**70, "neg": -5, "f": 1.5, "s": "x" * 300, "b": b"\x00\xff" * 40_000,
            "t": (1, (2, 3), [4.0, None, True]), "l": list(range(500)), "set": {1, 2}, "fz": frozenset({3}),
            "nested": {"a": [{"k": i} for i in range(50)]}, "u": "\u00e9\u4e2d" * 10, "ba": bytearray(b"ab")}


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_every_opcode_is_counted_once_and_the_value_is_picklings(protocol: int) -> None:
    """The inline opcode count equals the pickle's opcodes, and framed (4+) and unframed pickles read the same."""
    import pickletools

    data = pickle.dumps(_plain_tree(), protocol=protocol)
    opcodes = sum(1 for _ in pickletools.genops(data))
    unpickler = SafeUnpickler(data + pickle.dumps("after", protocol=protocol))
    first = unpickler.load()
    assert first.ok and first.value == pickle.loads(data) and first.end_offset == len(data)
    assert unpickler.budget.ops == opcodes
    second = unpickler.load()  # the next pickle of the buffer starts where the first (framed or not) ended
    assert second.ok and second.value == "after"


@pytest.mark.parametrize("protocol", (2, 5))
def test_the_opcode_limit_stops_at_exactly_the_limit(protocol: int) -> None:
    import pickletools

    from pimm_inspect.sources.checkpoint._pickle_budget import Budget

    data = pickle.dumps(_plain_tree(), protocol=protocol)
    opcodes = sum(1 for _ in pickletools.genops(data))
    for limit, ok in ((opcodes, True), (opcodes - 1, False)):
        unpickler = SafeUnpickler(data)
        unpickler.budget = Budget(max_ops=limit)
        got = unpickler.load()
        assert got.ok is ok, (limit, got.error)
        if not ok:
            assert "opcodes" in got.error and got.value is not None  # the partial tree read so far


@pytest.mark.parametrize("number", [0, 1, -1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 2**64 + 5, 255 ** 40, -(7 ** 90)])
def test_long1_reads_as_pickle_does(number: int) -> None:
    data = pickle.dumps(number, protocol=2)
    assert data[2] == pickle.LONG1[0] or abs(number) < 2**31
    got, _ = safe_loads(data)
    assert got.ok and got.value == number == pickle.loads(data)
    truncated, _ = safe_loads(data[:4])  # the length byte promises more than there is
    assert not truncated.ok and truncated.truncated
