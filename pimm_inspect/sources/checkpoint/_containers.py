"""Open the containers torch writes (zip archive, legacy pickle stream, DCP) without torch.

Only pickles are read: tensor bytes are never loaded (the legacy format's storage
headers are peeked at to detect truncation). Every failure becomes a finding.
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from ...model import Finding, Severity
from .._common import UnreadableFile, file_finding, open_regular
from ._lfs import LFS_HEAD, lfs_finding, read_pointer
from ._zip_dir import Directory, read_directory
from ._zip_member import MemberError, read_member, small_text
from ._pickle_budget import Budget, BudgetExceeded
from ._dcp_tree import extent, insert, listify
from ._placeholders import PickledGlobal, checked_shape
from .safe_pickle import (MAX_PICKLE_BYTES, PickledObject, SafeUnpickler, StoragePlaceholder,
                          TensorPlaceholder, TorchDtype, safe_loads)

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
"""First pickle of a pre-zip torch.save file."""
MAX_DCP_ITEM_BYTES = 1024 * 1024
"""Non-tensor DCP items larger than this are listed but not unpickled (e.g. big loader states)."""
DCP_SKIPPED_PREFIXES = ("optimizer.", "rng.state", "scheduler.", "scaler.")
"""DCP byte items not needed for metadata: listed, never read (saves time on big optimizers)."""


@dataclass(frozen=True, slots=True)
class DcpUnread:
    """A DCP non-tensor item whose pickled bytes were deliberately not read."""

    length: int


@dataclass(slots=True)
class Container:
    """What one container yielded: the payload tree plus bookkeeping."""

    kind: str
    """zip, legacy, pickle, dcp, lfs (a Git LFS pointer, not fetched) or unknown."""
    payload: Any = None
    ok: bool = False
    findings: list[Finding] = field(default_factory=list)
    unsafe_globals: list[str] = field(default_factory=list)
    called_globals: list[str] = field(default_factory=list)
    """Those of ``unsafe_globals`` a pickle called; the others it only names (a class kept as a value)."""
    globals_seen: list[str] = field(default_factory=list)
    tensor_count: int = 0
    tensor_bytes: int = 0
    byteorder: str | None = None
    archive_version: str | None = None
    dcp_keys: tuple[str, ...] = ()
    bytes_read: int = 0
    storage_keys: list[str] = field(default_factory=list)

    def absorb(self, unpickler: SafeUnpickler) -> None:
        """Merge the globals seen by one unpickler."""
        rec = unpickler.recorder
        self.unsafe_globals += [g for g in rec.unsafe_globals if g not in self.unsafe_globals]
        self.called_globals += [g for g in unpickler.called_globals if g not in self.called_globals]
        self.globals_seen += [g for g in rec.globals_seen if g not in self.globals_seen]


def _corrupt(rel_path: str, message: str, severity: Severity = Severity.WARNING) -> Finding:
    return file_finding("file.corrupt", rel_path, f"{rel_path}: {message}", severity=severity)


def _truncated(rel_path: str, message: str) -> Finding:
    return file_finding("file.truncated", rel_path, f"{rel_path}: {message}")


def _pickle_failure(out: Container, rel_path: str, what: str, error: str | None, truncated: bool) -> None:
    if truncated:
        out.findings.append(_truncated(rel_path, f"{what} ends early ({error}); partial metadata only"))
    else:
        out.findings.append(_corrupt(rel_path, f"{what} could not be read safely ({error})"))


def read_container(path: Path, rel_path: str) -> Container:
    """Read a torch.save file (zip or legacy), a DCP ``.metadata`` or a plain pickle."""
    try:
        fh = open_regular(path, rel_path)
    except UnreadableFile as exc:
        return Container("unknown", findings=[exc.finding])
    with fh:
        try:
            head = fh.read(4)
            if not head:
                return Container("unknown", findings=[file_finding(
                    "file.empty", rel_path, f"{rel_path} is empty (0 bytes)")])
            if head == b"PK\x03\x04" or head[:2] == b"PK":
                fh.seek(0)
                return _read_zip(fh, rel_path)
            if head == LFS_HEAD and (pointer := read_pointer(fh)) is not None:
                return Container("lfs", findings=[lfs_finding(rel_path, pointer)])
            if head[:1] == b"\x80":
                fh.seek(0)
                data = fh.read(MAX_PICKLE_BYTES)
                out = _read_pickle_stream(data, rel_path, path)
                out.bytes_read = len(data)
                return out
        except OSError as exc:
            return Container("unknown", findings=[file_finding(
                "file.unreadable", rel_path, f"{rel_path}: read failed ({exc.strerror})")])
    return Container("unknown", findings=[_corrupt(rel_path, "neither a zip archive nor a pickle")])


def _read_zip(fh: BinaryIO, rel_path: str, budget: Budget | None = None) -> Container:
    """The torch zip format: unpickle ``<archive>/data.pkl`` only (charging ``budget`` when given)."""
    out = Container("zip")
    try:
        directory = read_directory(fh)  # the plain case, read directly; anything else goes through zipfile
    except OSError:
        directory = None  # zipfile meets the same error and says so
    if directory is None:
        try:
            with zipfile.ZipFile(fh) as archive:
                directory = Directory(archive.namelist(), {info.filename: info for info in archive.infolist()})
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, struct.error) as exc:
            # No usable central directory: usually a write cut short. data.pkl comes first: try its local header.
            if isinstance(exc, (NotImplementedError, struct.error)):
                out.findings.append(_corrupt(rel_path, f"zip central directory is damaged ({exc})"))
            else:
                out.findings.append(_truncated(rel_path, f"zip archive is truncated or damaged ({exc})"))
            _salvage_first_entry(fh, rel_path, out, budget)
            return out
    names = directory.names
    pkl_names = sorted((n for n in names if n.endswith("/data.pkl") and n.count("/") == 1), key=len)
    if not pkl_names:
        out.findings.append(_corrupt(rel_path, "zip archive has no data.pkl (not a torch checkpoint)"))
        return out
    prefix = pkl_names[0][: -len("data.pkl")]
    try:
        data = read_member(fh, directory.members[pkl_names[0]], MAX_PICKLE_BYTES)
    except MemberError as exc:
        out.findings.append(_corrupt(rel_path, f"zip member {pkl_names[0]} {exc}"))
        return out
    out.byteorder = small_text(fh, directory.members, prefix + "byteorder")
    out.archive_version = small_text(fh, directory.members, prefix + "version")
    out.bytes_read = len(data)
    _unpickle_into(out, data, rel_path, "data.pkl", budget)
    stored = {n[len(prefix) + len("data/"):] for n in names if n.startswith(prefix + "data/")}
    missing = [k for k in out.storage_keys if k not in stored]
    if missing:
        out.findings.append(_corrupt(rel_path, f"{len(missing)} tensor storage(s) referenced by data.pkl "
                                               f"are missing from the archive (e.g. data/{missing[0]})"))
    return out


def _salvage_first_entry(fh: BinaryIO, rel_path: str, out: Container, budget: Budget | None) -> None:
    """Unpickle data.pkl straight from its local header when the central directory is gone."""
    fh.seek(0)
    head = fh.read(30)
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        return
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    method = struct.unpack("<H", head[8:10])[0]
    name = fh.read(name_len)
    if not name.endswith(b"/data.pkl") or method != 0:
        return
    fh.seek(30 + name_len + extra_len)
    data = fh.read(MAX_PICKLE_BYTES)
    out.bytes_read = 30 + name_len + extra_len + len(data)
    _unpickle_into(out, data, rel_path, "data.pkl", budget)


def _unpickle_into(out: Container, data: bytes, rel_path: str, what: str,
                   budget: Budget | None = None) -> SafeUnpickler:
    result, unpickler = safe_loads(data, budget=budget)
    out.absorb(unpickler)
    out.payload, out.ok = result.value, result.ok
    rec = unpickler.recorder
    out.tensor_count = rec.tensor_count
    out.tensor_bytes = rec.storage_bytes or rec.tensor_numel_bytes
    out.storage_keys = list(rec.storages)
    if not result.ok:
        _pickle_failure(out, rel_path, what, result.error, result.truncated)
    return unpickler


def _read_pickle_stream(data: bytes, rel_path: str, path: Path) -> Container:
    """Legacy torch.save (magic, protocol, sys_info, object, keys, raw storages) or a plain pickle."""
    unpickler = SafeUnpickler(data)
    first = unpickler.load()
    if not (first.ok and isinstance(first.value, int) and first.value == LEGACY_MAGIC):
        out = Container("pickle", payload=first.value, ok=first.ok)
        out.absorb(unpickler)
        rec = unpickler.recorder
        out.tensor_count, out.tensor_bytes = rec.tensor_count, rec.storage_bytes
        if not first.ok:
            _pickle_failure(out, rel_path, "pickle", first.error, first.truncated)
        elif _is_dcp_metadata(first.value):
            _read_dcp(out, first.value, path.parent, rel_path)
        return out
    out = Container("legacy")
    protocol, sys_info = unpickler.load(), unpickler.load()
    if not (protocol.ok and sys_info.ok):
        _pickle_failure(out, rel_path, "legacy header", protocol.error or sys_info.error, True)
        return out
    if isinstance(sys_info.value, dict):
        out.byteorder = "little" if sys_info.value.get("little_endian", True) else "big"
    out.archive_version = str(protocol.value)
    body = unpickler.load()
    out.payload, out.ok = body.value, body.ok
    out.absorb(unpickler)
    rec = unpickler.recorder
    out.tensor_count, out.tensor_bytes = rec.tensor_count, rec.storage_bytes
    if not body.ok:
        _pickle_failure(out, rel_path, "object pickle", body.error, body.truncated)
        return out
    keys = unpickler.load()
    if not (keys.ok and isinstance(keys.value, list)):
        out.findings.append(_truncated(rel_path, "legacy file ends before its storage list"))
        return out
    _check_legacy_storages(out, path, rel_path, keys.end_offset, keys.value, rec.storages)
    return out


def _check_legacy_storages(out: Container, path: Path, rel_path: str, offset: int, keys: list[str],
                           storages: dict[str, StoragePlaceholder]) -> None:
    """Walk the raw storage headers (8-byte element counts) to see the file is whole."""
    try:
        size = os.stat(path).st_size
        with open_regular(path, rel_path) as fh:
            for key in keys:
                storage = storages.get(str(key))
                itemsize = storage.nbytes // storage.numel if storage and storage.numel else 1
                fh.seek(offset)
                header = fh.read(8)
                if len(header) < 8:
                    raise EOFError
                count = struct.unpack("<q", header)[0]
                if count < 0:
                    out.findings.append(_corrupt(rel_path, f"legacy storage header at byte {offset} "
                                                           f"claims {count} elements"))
                    return
                offset += 8 + count * max(itemsize, 0)
                if offset > size:
                    raise EOFError
    except (EOFError, struct.error):
        out.findings.append(_truncated(rel_path, "legacy file ends inside its tensor storages"))
    except (OSError, UnreadableFile):
        return


# ---------------------------------------------------------------- DCP

def _is_dcp_metadata(value: Any) -> bool:
    return (isinstance(value, PickledObject)
            and cast(PickledGlobal, type(value)).dotted.endswith("checkpoint.metadata.Metadata"))


def _state(obj: Any) -> dict[Any, Any]:
    state = obj.state if isinstance(obj, PickledObject) else None
    return state if isinstance(state, dict) else {}


def _read_dcp(out: Container, metadata: Any, directory: Path, rel_path: str) -> None:
    """Rebuild the nested state dict a DCP ``.metadata`` describes; unpickle its small byte items."""
    out.kind = "dcp"
    meta = _state(metadata)
    entries = meta.get("state_dict_metadata")
    if not isinstance(entries, dict):
        out.findings.append(_corrupt(rel_path, "DCP metadata has no state_dict_metadata"))
        return
    planner_data = meta.get("planner_data")
    planner: dict[Any, Any] = planner_data if isinstance(planner_data, dict) else {}
    locations: dict[str, dict[Any, Any]] = {}
    storage_data = meta.get("storage_data")
    for index, info in (storage_data.items() if isinstance(storage_data, dict) else ()):
        fqn = _state(index).get("fqn")
        if isinstance(fqn, str) and fqn not in locations:
            locations[fqn] = _state(info)
    rel_dir = rel_path.rpartition("/")[0]
    payload: dict[Any, Any] = {}
    created: set[int] = {id(payload)}
    tensor_count = tensor_bytes = 0
    shards: dict[str, bytes | None] = {}
    handles: dict[str, BinaryIO | Exception] = {}
    """Each shard opened once for all its items (or why it could not be)."""
    bad_paths: list[str] = []
    budget = Budget()  # one for every item of this checkpoint: 100k items may all point at one 1 MiB blob
    try:
        for fqn, entry in entries.items():
            if not isinstance(fqn, str):
                continue
            kind = type(entry).__name__ if isinstance(entry, PickledObject) else ""
            if kind == "TensorStorageMetadata":
                value: Any = _dcp_tensor(_state(entry))
                tensor_count += 1
                tensor_bytes += value.nbytes
            elif fqn.startswith(DCP_SKIPPED_PREFIXES):
                value = DcpUnread(extent(locations.get(fqn, {}).get("length")) or 0)
            else:
                value = _dcp_bytes_item(out, fqn, locations.get(fqn), directory, rel_dir, shards, handles, budget)
            if not insert(payload, planner.get(fqn), fqn, value, created):
                bad_paths.append(fqn)
    finally:
        for handle in handles.values():
            if not isinstance(handle, Exception):
                handle.close()
    if bad_paths:
        out.findings.append(_corrupt(rel_path, f"DCP planner_data holds {len(bad_paths)} unusable key path(s) "
                                               f"(e.g. for {bad_paths[0][:200]}); those items are placed by "
                                               "their dotted names"))
    out.payload = listify(payload, created)
    out.ok = True
    out.tensor_count, out.tensor_bytes = tensor_count, tensor_bytes
    out.dcp_keys = tuple(k for k in entries if isinstance(k, str))


def _dcp_tensor(state: dict[Any, Any]) -> TensorPlaceholder:
    props = state.get("properties")
    props_state = props.state if isinstance(props, PickledObject) else None
    dtype = None
    if isinstance(props_state, dict):
        dtype = props_state.get("dtype")
    elif isinstance(props_state, tuple) and props_state:
        dtype = props_state[0]
    checked = checked_shape(state.get("size"))
    shape, numel = checked if checked is not None else ((), 0)  # out of range: described as empty
    name, itemsize = (dtype.name, dtype.itemsize) if isinstance(dtype, TorchDtype) else ("unknown", 0)
    return TensorPlaceholder(name, shape, numel, numel * itemsize, None)


def _dcp_bytes_item(out: Container, fqn: str, location: dict[Any, Any] | None, directory: Path, rel_dir: str,
                    shards: dict[str, bytes | None], handles: dict[str, BinaryIO | Exception], budget: Budget) -> Any:
    """Read one non-tensor item: a small torch.save archive inside a ``.distcp`` shard."""
    if not location:
        return None
    shard, offset, length = location.get("relative_path"), extent(location.get("offset")), \
        extent(location.get("length"))
    if not (isinstance(shard, str) and offset is not None and length is not None) \
            or "/" in shard or shard.startswith("."):
        return None
    if location.get("transform_descriptors") or length > MAX_DCP_ITEM_BYTES:
        return DcpUnread(length)
    shard_rel = f"{rel_dir}/{shard}" if rel_dir else shard
    try:
        budget.charge(length, 1)
    except BudgetExceeded as exc:
        finding = _corrupt(shard_rel, f"DCP items past the per-checkpoint budget are not read ({exc})")
        if finding not in out.findings:
            out.findings.append(finding)
        return DcpUnread(length)
    handle = handles.get(shard)
    if handle is None:
        try:
            handle = open_regular(directory / shard, shard_rel)
        except (UnreadableFile, OSError) as exc:
            handle = exc
        handles[shard] = handle
    if isinstance(handle, UnreadableFile):
        if handle.finding not in out.findings:
            out.findings.append(handle.finding)
        return None
    if isinstance(handle, Exception):
        return None
    try:
        handle.seek(offset)
        blob = handle.read(length)
    except OSError:
        return None
    if len(blob) < length:
        if shard not in shards:
            shards[shard] = None
            out.findings.append(_truncated(shard_rel, "DCP shard ends before items its metadata describes"))
        return None
    inner = _read_zip(io.BytesIO(blob), shard_rel, budget)
    out.unsafe_globals += [g for g in inner.unsafe_globals if g not in out.unsafe_globals]
    out.called_globals += [g for g in inner.called_globals if g not in out.called_globals]
    out.globals_seen += [g for g in inner.globals_seen if g not in out.globals_seen]
    if not inner.ok:
        out.findings.extend(f for f in inner.findings if f not in out.findings)
        return None
    return inner.payload


def read_dcp_directory(directory: Path, rel_dir: str) -> Container:
    """Read a DCP checkpoint directory through its ``.metadata`` file."""
    meta_rel = f"{rel_dir}/.metadata" if rel_dir else ".metadata"
    out = read_container(directory / ".metadata", meta_rel)
    if out.kind != "dcp" and out.ok:
        out.findings.append(_corrupt(meta_rel, "not a torch.distributed.checkpoint Metadata pickle"))
        out.ok = False
    return out
