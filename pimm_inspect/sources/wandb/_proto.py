"""The W&B ``Record`` protobuf class, built without importing wandb.

``import wandb`` costs 1-2 s and ~60 MB, and ``wandb.proto.*`` imports all of
wandb. The installed package ships each ``.proto`` file as a serialized
``FileDescriptorProto`` bytes literal inside its generated ``*_pb2.py``; we read
those files as text, extract the literal with ``ast`` (parsing only, nothing is
executed) and register them in a private descriptor pool.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD_TYPE_NAME = "wandb_internal.Record"
_ROOT_PROTO = "wandb/proto/wandb_internal.proto"
_ADD_CALL = re.compile(r"^.*AddSerializedFile\(b['\"].*$", re.MULTILINE)


class WandbProtoUnavailable(Exception):
    """The wandb package (or a usable descriptor in it) is not installed."""


@dataclass(frozen=True, slots=True)
class ProtoLoadInfo:
    """Where the descriptors came from and what loading them cost."""

    proto_dir: str
    """Directory of the ``*_pb2.py`` files that were read (inside site-packages)."""
    files: tuple[str, ...]
    """Proto file names registered, in dependency order."""
    load_seconds: float


_lock = threading.Lock()
_cache: dict[str, Any] = {}


def _wandb_package_dir() -> Path:
    """Directory of the installed wandb package, found without importing it."""
    # find_spec on a top-level name only locates the package; it does not run it.
    spec = importlib.util.find_spec("wandb")
    if spec is None or not spec.submodule_search_locations:
        raise WandbProtoUnavailable("the wandb package is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def _candidate_proto_dirs(package_dir: Path) -> list[Path]:
    """Proto directories to try: the one matching our protobuf major version first."""
    import google.protobuf

    major = google.protobuf.__version__.split(".")[0]
    proto = package_dir / "proto"
    dirs = [proto / f"v{major}"]
    # Any other generated set carries the same descriptors (gencode version differs only).
    dirs += sorted((p for p in proto.glob("v*") if p.is_dir() and p not in dirs), reverse=True)
    dirs.append(proto)  # older wandb releases kept the literal in proto/ itself
    return [d for d in dirs if (d / "wandb_internal_pb2.py").is_file()]


def extract_serialized_descriptor(source: str) -> bytes | None:
    """The bytes literal passed to ``AddSerializedFile`` in generated ``_pb2`` source."""
    match = _ADD_CALL.search(source)
    trees: list[ast.AST] = []
    if match:
        # Fast path: protoc emits the call on one line; parse just that statement.
        try:
            trees.append(ast.parse(match.group(0).strip()))
        except SyntaxError:
            pass
    if not trees:
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            return None
    for tree in trees:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "AddSerializedFile" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes)):
                return node.args[0].value
    return None


def _dependencies(serialized: bytes) -> list[str]:
    """Import names of a serialized FileDescriptorProto."""
    from google.protobuf import descriptor_pb2

    return list(descriptor_pb2.FileDescriptorProto.FromString(serialized).dependency)


def _well_known(proto_name: str) -> bytes:
    """Serialized descriptor of a google/protobuf/*.proto well-known type (cheap imports)."""
    module_name = "google.protobuf." + Path(proto_name).stem + "_pb2"
    module = importlib.import_module(module_name)
    data: bytes = module.DESCRIPTOR.serialized_pb
    return data


def _build(proto_dir: Path) -> tuple[Any, tuple[str, ...]]:
    """Register wandb_internal.proto and its imports in a fresh pool; return (class, files)."""
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    added: list[str] = []
    blobs: dict[str, bytes] = {}

    def blob_for(name: str) -> bytes:
        if name not in blobs:
            if name.startswith("google/protobuf/"):
                blobs[name] = _well_known(name)
            else:
                path = proto_dir / (Path(name).stem + "_pb2.py")
                text = path.read_text(encoding="utf-8")
                data = extract_serialized_descriptor(text)
                if data is None:
                    raise WandbProtoUnavailable(f"no serialized descriptor in {path.name}")
                blobs[name] = data
        return blobs[name]

    # Depth-first so every import is in the pool before the file that needs it.
    stack: list[tuple[str, bool]] = [(_ROOT_PROTO, False)]
    visiting: set[str] = set()
    while stack:
        name, deps_done = stack.pop()
        if name in added:
            continue
        if deps_done:
            pool.AddSerializedFile(blob_for(name))
            added.append(name)
            continue
        if name in visiting:
            raise WandbProtoUnavailable(f"import cycle at {name}")
        visiting.add(name)
        stack.append((name, True))
        stack.extend((dep, False) for dep in reversed(_dependencies(blob_for(name))) if dep not in added)
    descriptor = pool.FindMessageTypeByName(RECORD_TYPE_NAME)
    return message_factory.GetMessageClass(descriptor), tuple(added)


def record_class() -> tuple[Any, ProtoLoadInfo]:
    """The ``wandb_internal.Record`` message class and load info, built once per process."""
    with _lock:
        if "record" in _cache:
            built: tuple[Any, ProtoLoadInfo] = _cache["record"]
            return built
        if "error" in _cache:
            raise WandbProtoUnavailable(_cache["error"])
        start = time.perf_counter()
        errors: list[str] = []
        try:
            dirs = _candidate_proto_dirs(_wandb_package_dir())
        except (WandbProtoUnavailable, ImportError, ValueError) as exc:
            dirs, errors = [], [str(exc)]
        for proto_dir in dirs:
            try:
                cls, files = _build(proto_dir)
            except Exception as exc:  # a damaged or unexpected install: try the next set
                errors.append(f"{proto_dir.name}: {exc}")
                continue
            info = ProtoLoadInfo(str(proto_dir), files, time.perf_counter() - start)
            _cache["record"] = (cls, info)
            return cls, info
        _cache["error"] = "; ".join(errors) or "no wandb proto descriptors found"
        raise WandbProtoUnavailable(_cache["error"])
