"""Hand-assembled hostile checkpoints (issue 14), written to tests/data/hostile/ by ``python -m tests.hostile_checkpoint_inputs``.

Damage cases, so bytes are built by hand (pickle opcodes, zip headers), deterministically. The small
ones are committed; ``BUILDERS_AT_TEST_TIME`` are cheap to rebuild and too big to be worth committing.
"""

from __future__ import annotations

import bz2
import io
import lzma
import pickle
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Callable

HOSTILE = Path(__file__).resolve().parent / "data" / "hostile"
INERT = b"c__builtin__\nbytearray\nJ\xff\xff\xff\xff\x85R"
"""Opcodes leaving an ``Inert`` on the stack (``bytearray(-1)`` is refused by its stand-in)."""


def torch_zip(data_pkl: bytes, prefix: str = "archive") -> bytes:
    """A torch-style zip archive (stored members) around one data.pkl."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as archive:
        for name, data in ((f"{prefix}/data.pkl", data_pkl), (f"{prefix}/byteorder", b"little"),
                           (f"{prefix}/version", b"3\n")):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            archive.writestr(info, data)
    return buf.getvalue()


def _text(value: str) -> bytes:
    raw = value.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _set_slots(module: str, name: str, attrs: dict[str, bytes]) -> bytes:
    """GLOBAL module.name, then BUILD with slot state: pickle's own BUILD calls setattr(global, k, v)."""
    items = b"".join(_text(k) + v for k, v in attrs.items())
    return f"c{module}\n{name}\n".encode() + b"N}(" + items + b"u\x86b0"


def poisoning_pickle() -> bytes:
    """Tries to rewrite every shared stand-in: OrderedDict's __init__/__iter__, a tensor builder's defaults, ..."""
    body = b"\x80\x02"
    body += _set_slots("collections", "OrderedDict", {"__init__": INERT, "__iter__": INERT, "get": INERT})
    body += _set_slots("collections", "defaultdict", {"__init__": INERT})
    body += _set_slots("torch._utils", "_rebuild_tensor_v2", {"__defaults__": b"K\x07\x85"})
    body += _set_slots("numpy", "ndarray", {"__setstate__": INERT})
    body += _set_slots("numpy", "dtype", {"itemsize": b"K\x63"})
    body += _set_slots("torch", "Tensor", {"__init__": INERT})
    body += _set_slots("copyreg", "_reconstructor", {"__defaults__": b"K\x01K\x02\x86"})
    return body + b"}X\x05\x00\x00\x00epochK\x02s."


def poisoning_checkpoint() -> bytes:
    return torch_zip(poisoning_pickle())


def unsafe_checkpoint() -> bytes:
    """An ``os.system`` payload inside a dict built without calling OrderedDict's __init__ (copyreg.__newobj__)."""
    data = (b"\x80\x02ccopyreg\n__newobj__\nccollections\nOrderedDict\n\x85R"
            b"X\x05\x00\x00\x00epochK\x03sX\x01\x00\x00\x00xcos\nsystem\nX\x0c\x00\x00\x00touch /pwned\x85Rs.")
    return torch_zip(data)


def bytearray_bomb_pickle() -> bytes:
    """3,000 calls of the bytearray stand-in with 1 MiB each (3 GiB from 15 KB), memoised callee and args."""
    return (b"\x80\x02c__builtin__\nbytearray\nq\x00J\x00\x00\x10\x00\x85q\x01]q\x02("
            + b"h\x00h\x01R" * 3000 + b"e.")


def tensor_dims_bomb_pickle(tensors: int = 100) -> bytes:
    """``tensors`` calls of _rebuild_tensor_v2 sharing one size: 64 dimensions of one 64 KiB integer.

    The integer and the size tuple are memoised, so each tensor costs a few bytes of input and ~3 s of
    ``math.prod`` on huge ints: 66 KB took minutes.
    """
    huge = (1 << (64 * 1024 * 8 - 1)) + 12345
    raw = huge.to_bytes(64 * 1024 + 1, "little", signed=True)
    size = b"(\x8b" + struct.pack("<I", len(raw)) + raw + b"q\x00" + b"h\x00" * 63 + b"tq\x02"
    stride = b"(" + b"K\x01" * 64 + b"tq\x03"
    calls = b"".join(
        b"h\x01(" + b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\n" + _text(str(i)) + b"X\x03\x00\x00\x00cpuK\x01tQ"
        + b"K\x00h\x02h\x03\x89ccollections\nOrderedDict\n)RtR" for i in range(tensors))
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x01" + size + b"0" + stride + b"0]q\x04(" + calls
            + b"e.")


HUGE_FIELDS = ("epoch", "iter_in_epoch", "global_step", "best_metric_value", "resume_step", "step_offset",
               "checkpoint_global_step", "world_size", "num_workers")


def huge_numbers_checkpoint(huge_fields: tuple[str, ...] = HUGE_FIELDS) -> bytes:
    """Step, epoch, iteration, W&B cursor and counts of 10**5000, a best metric of 10**400, a 10**5000 key.

    Only ``huge_fields`` get the huge values; the others hold ordinary ones.
    """
    def value(field: str, ordinary: int) -> int:
        if field not in huge_fields:
            return ordinary
        return 10**400 if field == "best_metric_value" else 10**5000

    payload = {
        "schema": "pimm.trainer_checkpoint", "version": 3,
        "trainer": {name: value(name, ordinary) for name, ordinary in
                    (("epoch", 3), ("iter_in_epoch", 0), ("global_step", 120), ("best_metric_value", 1))},
        "logger": {"wandb": {"run_id": "huge0001", "resume_step": value("resume_step", 121),
                             "step_offset": value("step_offset", 0),
                             "checkpoint_global_step": value("checkpoint_global_step", 120),
                             "step_metric": "train/global_step"}},
        "distributed": {"world_size": value("world_size", 2)},
        "dataloader": {"num_workers": value("num_workers", 3), "state": {"epoch": value("epoch", 3)}},
    }
    if huge_fields == HUGE_FIELDS:
        payload[10**5000] = "an integer key"  # type: ignore[index]
    return torch_zip(pickle.dumps(payload, protocol=2))


def _zip_with_member(name: str, method: int, compressed: bytes, declared: int, crc: int) -> bytes:
    """A one-member zip written by hand, so the declared size can lie."""
    raw_name = name.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(compressed), declared,
                        len(raw_name), 0) + raw_name
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(compressed),
                          declared, len(raw_name), 0, 0, 0, 0, 0, 0) + raw_name
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(compressed), 0)
    return local + compressed + central + end


def _zeros(total: int, chunk: int = 16 << 20):
    block = b"\x00" * chunk
    for _ in range(total // chunk):
        yield block


def bzip2_bomb_checkpoint(total: int = 3 << 30) -> bytes:
    """data.pkl as bzip2 of 3 GiB of zeros (2.7 KB) declaring 55 bytes."""
    compressor, parts, crc = bz2.BZ2Compressor(9), [], 0
    for block in _zeros(total):
        parts.append(compressor.compress(block))
        crc = zlib.crc32(block, crc)
    parts.append(compressor.flush())
    return _zip_with_member("archive/data.pkl", zipfile.ZIP_BZIP2, b"".join(parts), 55, crc)


def lzma_bomb_checkpoint(total: int = 128 << 20) -> bytes:
    """data.pkl as zip-LZMA of 128 MiB of zeros declaring 55 bytes (zip's LZMA header + raw LZMA1)."""
    lc, lp, pb, dict_size = 3, 0, 2, 1 << 23
    filters = [{"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb, "dict_size": dict_size}]
    compressor, crc = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=filters), 0
    props = struct.pack("<BI", (pb * 5 + lp) * 9 + lc, dict_size)  # the 5 LZMA1 property bytes
    parts = [struct.pack("<BBH", 9, 4, len(props)) + props]  # zip's LZMA header: version 9.4, props size
    for block in _zeros(total):
        parts.append(compressor.compress(block))
        crc = zlib.crc32(block, crc)
    parts.append(compressor.flush())
    return _zip_with_member("archive/data.pkl", zipfile.ZIP_LZMA, b"".join(parts), 55, crc)


def _dcp_object(name: str, state: bytes) -> bytes:
    return f"ctorch.distributed.checkpoint.metadata\n{name}\n".encode() + b")\x81" + state + b"b"


def dcp_planner_list_metadata() -> bytes:
    """A DCP ``.metadata`` whose planner_data path for one item holds a list (an unhashable key)."""
    bytes_item = _dcp_object("BytesStorageMetadata", b"}")
    entries = b"}(" + _text("trainer.global_step") + bytes_item + _text("trainer.epoch") + bytes_item + b"u"
    planner = (b"}(" + _text("trainer.global_step") + _text("trainer") + b"]" + _text("global_step")
               + b"a\x86" + _text("trainer.epoch") + _text("trainer") + _text("epoch") + b"\x86u")
    state = (b"}(" + _text("state_dict_metadata") + entries + _text("planner_data") + planner
             + _text("storage_data") + b"}u")
    return b"\x80\x02" + _dcp_object("Metadata", state) + b"."


def dcp_many_items(directory: Path, count: int = 1000, item_bytes: int = 1000_000) -> None:
    """A DCP folder whose ``count`` byte items all point at one ~1 MB torch archive in one shard."""
    blob = torch_zip(pickle.dumps({"padding": b"\x00" * item_bytes}, protocol=2))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "__0_0.distcp").write_bytes(blob)
    bytes_item = _dcp_object("BytesStorageMetadata", b"}")
    names = [f"extra.item{i}" for i in range(count)]
    entries = b"}(" + b"".join(_text(n) + bytes_item for n in names) + b"u"
    storage = b"}(" + b"".join(
        _dcp_object("MetadataIndex", b"}" + _text("fqn") + _text(n) + b"s")
        + b"ctorch.distributed.checkpoint.filesystem\n_StorageInfo\n)\x81}("
        + _text("relative_path") + _text("__0_0.distcp") + _text("offset") + b"K\x00"
        + _text("length") + b"J" + struct.pack("<i", len(blob)) + b"ub" for n in names) + b"u"
    state = (b"}(" + _text("state_dict_metadata") + entries + _text("planner_data") + b"}"
             + _text("storage_data") + storage + b"u")
    (directory / ".metadata").write_bytes(b"\x80\x02" + _dcp_object("Metadata", state) + b".")


COMMITTED: dict[str, Callable[[], bytes]] = {
    "ckpt-poison-stand-ins.pth": poisoning_checkpoint,
    "ckpt-unsafe-os-system.pth": unsafe_checkpoint,
    "pickle-bytearray-3000x1MiB.pkl": bytearray_bomb_pickle,
    "ckpt-huge-numbers.pth": huge_numbers_checkpoint,
    "ckpt-bzip2-bomb-3GiB-declares-55.pth": bzip2_bomb_checkpoint,
    "ckpt-lzma-bomb-128MiB-declares-55.pth": lzma_bomb_checkpoint,
    "dcp-planner-list.metadata": dcp_planner_list_metadata,
}
BUILDERS_AT_TEST_TIME: dict[str, Callable[[], bytes]] = {
    "pickle-tensor-64-dims-of-64KiB.pkl": tensor_dims_bomb_pickle,
}
SLOW = {"ckpt-bzip2-bomb-3GiB-declares-55.pth", "ckpt-lzma-bomb-128MiB-declares-55.pth"}
"""Committed inputs too slow to rebuild in a test (compressing gigabytes)."""


if __name__ == "__main__":
    HOSTILE.mkdir(parents=True, exist_ok=True)
    for file_name, build in COMMITTED.items():
        (HOSTILE / file_name).write_bytes(build())
        print(file_name, (HOSTILE / file_name).stat().st_size)
