"""A small self-describing encoding of reader results for the disk cache: JSON plus numpy arrays.

No pickle: arrays are raw little-endian bytes described (dtype from a fixed list, shape, offset) in a
JSON header, read with ``np.frombuffer``; everything else is JSON with tagged containers, and a
SHA-256 over the whole entry catches damage. Only dataclasses and enums defined in already-imported ``pimm_inspect``
modules can be named, and a dataclass is rebuilt only when the stored field names are exactly its
fields, so a damaged or foreign file can at worst fail to decode (then it is ignored and rebuilt).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import sys
from pathlib import PurePosixPath
from typing import Any

import numpy as np

FORMAT = 1
"""Bumped whenever the encoding changes; entries of another format are ignored."""
MAGIC = b"pimm-inspect cache 1\n"
"""File start; then the SHA-256 of the rest (hex, newline), then meta length, meta JSON, arrays."""
_PACKAGE = "pimm_inspect."
_ARRAY_DTYPES = {"int64", "float64", "float32", "int32", "bool", "uint8", "int8", "uint32", "uint64", "int16"}
_NATIVE_NAMES = {np.dtype(name): name for name in _ARRAY_DTYPES}
"""The names of the native-order storable dtypes (``dtype.name`` is slow to compute per array)."""


def _dtype_name(dtype: np.dtype) -> str:
    return _NATIVE_NAMES.get(dtype) or dtype.name


class NotCacheable(Exception):
    """The value holds something the codec does not store (it is then simply not cached)."""


class BadEntry(Exception):
    """A stored entry does not decode into what it claims to be."""


def _type_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _lookup(name: Any) -> type:
    """A dataclass or enum class of pimm_inspect, only from modules already imported (nothing is imported)."""
    if not isinstance(name, str) or ":" not in name:
        raise BadEntry(f"bad type name {name!r}")
    module_name, _, qual = name.partition(":")
    if not module_name.startswith(_PACKAGE) or "." in qual or not qual.isidentifier():
        raise BadEntry(f"type outside pimm_inspect: {name!r}")
    module = sys.modules.get(module_name)
    cls = getattr(module, qual, None) if module is not None else None
    if not isinstance(cls, type) or not (dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum)):
        raise BadEntry(f"unknown type {name!r}")
    return cls


_FIELDS: dict[type, tuple[str, ...]] = {}
"""Field names of each dataclass encoded so far (``dataclasses.fields`` is slow to call per object)."""


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []

    def enc(self, value: Any) -> Any:
        kind = type(value)
        # Exact built-in types first (most nodes); then every other value exactly as the general rules say.
        if kind is str or kind is int or kind is bool or value is None:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"f": repr(value)}
        if kind is tuple:
            return {"t": [self.enc(v) for v in value]}
        if kind in _FIELDS:
            return {"dc": _type_name(kind), "f": {name: self.enc(getattr(value, name)) for name in _FIELDS[kind]}}
        return self._general(value, kind)

    def _general(self, value: Any, kind: type) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, enum.Enum):
            return {"i": int(value)}
        if isinstance(value, np.ndarray):
            if _dtype_name(value.dtype) not in _ARRAY_DTYPES:
                raise NotCacheable(f"array of {value.dtype}")
            self.arrays.append(value)
            return {"a": len(self.arrays) - 1}
        if isinstance(value, np.generic):
            return {"np": value.dtype.name, "v": self.enc(value.item())}
        if isinstance(value, enum.Enum):
            return {"e": _type_name(kind), "v": self.enc(value.value)}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if not kind.__module__.startswith(_PACKAGE):
                raise NotCacheable(_type_name(kind))
            return {"dc": _type_name(kind), "f": {name: self.enc(getattr(value, name)) for name in _field_names(kind)}}
        if kind is list:
            return {"l": [self.enc(v) for v in value]}
        if kind is dict:
            return {"d": [[self.enc(k), self.enc(v)] for k, v in value.items()]}
        if kind in (set, frozenset):
            return {"s" if kind is set else "fs": [self.enc(v) for v in value]}
        if kind is bytes:
            return {"b": value.hex()}
        if isinstance(value, PurePosixPath) or kind.__name__ in ("PosixPath", "WindowsPath"):
            return {"p": str(value)}
        raise NotCacheable(kind.__name__)


_PLAIN = frozenset({str, int, float, bool, type(None)})
"""JSON values that decode to themselves."""
_DECODABLE: dict[str, tuple[type, frozenset[str], frozenset[str]]] = {}
"""Per stored type name of a dataclass: (class, field names, names its ``__init__`` takes); looked up once."""


def _dataclass_of(name: Any) -> tuple[type, frozenset[str], frozenset[str]]:
    known = _DECODABLE.get(name) if type(name) is str else None
    if known is None:
        cls = _lookup(name)
        if not dataclasses.is_dataclass(cls):
            raise BadEntry(f"fields of {name} do not match")
        fields = dataclasses.fields(cls)
        known = (cls, frozenset(f.name for f in fields), frozenset(f.name for f in fields if f.init))
        if sys.modules.get(cls.__module__) is not None:
            _DECODABLE[name] = known
    return known


class _Decoder:
    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays

    def dec(self, node: Any) -> Any:
        kind = type(node)
        # Exact JSON types first (a row of ``ls`` is hundreds of nodes: tuples, dataclasses and scalars).
        if kind is str or kind is int or kind is float or kind is bool or node is None:
            return node
        if kind is dict and len(node) == 1:
            items = node.get("t")
            if type(items) is list:
                dec = self.dec
                return tuple([v if type(v) in _PLAIN else dec(v) for v in items])
        if node is None or isinstance(node, (bool, str, int, float)):
            return node
        if isinstance(node, list):
            raise BadEntry("untagged list")
        if not isinstance(node, dict) or len(node) not in (1, 2):
            raise BadEntry("bad node")
        if "dc" in node:
            cls, names, init = _dataclass_of(node["dc"])
            fields = node.get("f")
            if not isinstance(fields, dict) or len(fields) != len(names) or not names.issuperset(fields):
                raise BadEntry(f"fields of {node['dc']} do not match")
            if len(init) == len(names):
                dec = self.dec
                return cls(**{k: v if type(v) in _PLAIN else dec(v) for k, v in fields.items()})
            obj = cls(**{k: self.dec(v) for k, v in fields.items() if k in init})
            for k in names - init:
                object.__setattr__(obj, k, self.dec(fields[k]))
            return obj
        if "e" in node:
            cls = _lookup(node["e"])
            if not issubclass(cls, enum.Enum):
                raise BadEntry("not an enum")
            return cls(self.dec(node["v"]))
        tag: str
        body: Any  # a JSON value; each tag checks the kind it stores
        (tag, body), = node.items() if len(node) == 1 else [("np", node)]
        if tag == "a":
            if type(body) is not int or not 0 <= body < len(self.arrays):
                raise BadEntry("bad array index")
            return self.arrays[body]
        if tag == "np":
            if node.get("np") not in _ARRAY_DTYPES:
                raise BadEntry("bad scalar dtype")
            return np.dtype(node["np"]).type(self.dec(node["v"]))
        if tag == "i":
            return int(body)
        if tag == "f":
            if body not in ("nan", "inf", "-inf"):
                raise BadEntry("bad float")
            return float(body)
        if not isinstance(body, (list, str)):
            raise BadEntry("bad container")
        if tag == "t":
            return tuple(self.dec(v) for v in body)
        if tag == "l":
            return [self.dec(v) for v in body]
        if tag == "d":
            if not isinstance(body, list):
                raise BadEntry("bad dict")
            return {self.dec(k): self.dec(v) for k, v in body}
        if tag == "s":
            return {self.dec(v) for v in body}
        if tag == "fs":
            return frozenset(self.dec(v) for v in body)
        if tag == "b":
            if not isinstance(body, str):
                raise BadEntry("bad bytes")
            return bytes.fromhex(body)
        if tag == "p":
            from pathlib import Path

            if not isinstance(body, str):
                raise BadEntry("bad path")
            return Path(body)
        raise BadEntry(f"unknown tag {tag!r}")


def to_text(value: Any) -> str:
    """``value`` (no arrays) as one JSON text in this encoding: stored as a single string inside an entry, it costs
    that entry's reader nothing until ``from_text`` decodes it (a row's findings and config, say)."""
    encoder = _Encoder()
    tree = encoder.enc(value)
    if encoder.arrays:
        raise NotCacheable("arrays in a text value")
    return json.dumps(tree, allow_nan=False, separators=(",", ":"))


def from_text(text: str) -> Any:
    """The value ``to_text`` wrote; ``BadEntry`` when it does not decode."""
    try:
        return _Decoder([]).dec(json.loads(text))
    except BadEntry:
        raise
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError, AttributeError) as exc:
        raise BadEntry(f"{type(exc).__name__}: {exc}") from None


def encode(value: Any, header: dict[str, Any]) -> bytes:
    """The file bytes for ``value``: magic, SHA-256 of the rest, meta length, meta JSON, raw array bytes.

    Meta holds the header, the tree and per array its dtype, shape and byte offset; arrays are stored
    C-contiguous, little-endian, each starting at a multiple of 8 bytes.
    """
    encoder = _Encoder()
    tree = encoder.enc(value)
    layout, chunks, offset = [], [], 0
    for array in encoder.arrays:
        raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        layout.append([_dtype_name(array.dtype), list(array.shape), offset])
        pad = -len(raw) % 8
        chunks.append(raw + bytes(pad))
        offset += len(raw) + pad
    meta = json.dumps({"format": FORMAT, "header": header, "tree": tree, "arrays": layout},
                      allow_nan=False).encode()
    meta += b" " * (-len(meta) % 8)
    body = len(meta).to_bytes(8, "little") + meta + b"".join(chunks)
    return MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def decode(data: bytes, header: dict[str, Any]) -> Any:
    """The value stored by ``encode``; ``BadEntry`` unless it is intact and its header equals ``header``."""
    head = len(MAGIC) + 65
    if data[:len(MAGIC)] != MAGIC or data[head - 1:head] != b"\n":
        raise BadEntry("not a pimm-inspect cache entry")
    body = bytearray(memoryview(data)[head:])
    if hashlib.sha256(body).hexdigest().encode() != data[len(MAGIC):head - 1]:
        raise BadEntry("checksum mismatch (damaged entry)")
    try:
        meta_len = int.from_bytes(body[:8], "little")
        if not 0 < meta_len <= len(body) - 8:
            raise BadEntry("bad meta length")
        meta = json.loads(bytes(body[8:8 + meta_len]))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("header") != header:
            raise BadEntry("stale or foreign entry")
        base = 8 + meta_len
        arrays = []
        for dtype_name, shape, offset in meta["arrays"]:
            if dtype_name not in _ARRAY_DTYPES or not all(type(n) is int and n >= 0 for n in shape):
                raise BadEntry("bad array layout")
            dtype = np.dtype(dtype_name).newbyteorder("<")
            count = int(np.prod(shape, dtype=np.int64)) if shape else 1
            start = base + offset
            if type(offset) is not int or offset < 0 or start + count * dtype.itemsize > len(body):
                raise BadEntry("array outside the entry")
            array = np.frombuffer(body, dtype=dtype, count=count, offset=start).reshape(shape)
            arrays.append(array.astype(dtype.newbyteorder("="), copy=False))
        return _Decoder(arrays).dec(meta["tree"])
    except BadEntry:
        raise
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError, AttributeError) as exc:
        raise BadEntry(f"{type(exc).__name__}: {exc}") from None
