"""A small self-describing encoding of reader results for the disk cache: JSON plus numpy columns.

No pickle: arrays are stored by ``columns`` (lossless compact chunks, each with a CRC-32, dtype from a fixed list),
described in a JSON meta; everything else is JSON with tagged containers, and a SHA-256 over the meta (which holds
every chunk's CRC) catches damage. Only dataclasses and enums defined in already-imported ``pimm_inspect`` modules can
be named, and a dataclass is rebuilt only when the stored field names are exactly its fields, so a damaged or foreign
file can at worst fail to decode (then it is ignored and rebuilt).

An entry is written as a stream (``write``): the columns first, chunk by chunk, then the meta, then the fixed-size
head is filled in, so no second copy of a big result is ever held. ``read`` reads the meta and then each chunk it
decodes (``os.pread``), never the whole file at once. An array held twice (the steps and times every tag of a
train.log shares, the index's steps equal to the series' steps) is stored once and decoded once.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from ... import lazy

if TYPE_CHECKING:
    import numpy as np

# numpy and ``columns`` are imported with the first array written or read: an entry without arrays (a ``show``
# document, most rows) is read by a process that never imports numpy.

FORMAT = 3
"""Bumped whenever the encoding changes; entries of another format are ignored (3: short columns inline)."""
MAGIC = b"pimm-inspect cache 3\n"
"""File start; then meta offset and length (8 bytes each, little-endian), the meta's SHA-256 (hex, newline), padding
to ``_HEAD`` bytes, the column chunks, and the meta JSON at the end."""
_HEAD = 128
_SMALL_ENTRY = 1 << 18
"""Entries up to this size are read whole at once (one system call); bigger ones chunk by chunk."""
_PACKAGE = "pimm_inspect."
_ARRAY_DTYPES = {"int64", "float64", "float32", "int32", "bool", "uint8", "int8", "uint32", "uint64", "int16"}
_NATIVE_NAMES: dict[Any, str] = {}
"""The names of the native-order storable dtypes (``dtype.name`` is slow to compute per array), made at first use."""


def _dtype_name(dtype: np.dtype) -> str:
    if not _NATIVE_NAMES:
        import numpy

        _NATIVE_NAMES.update({numpy.dtype(name): name for name in _ARRAY_DTYPES})
    return _NATIVE_NAMES.get(dtype) or dtype.name


class NotCacheable(Exception):
    """The value holds something the codec does not store (it is then simply not cached)."""


class BadEntry(Exception):
    """A stored entry does not decode into what it claims to be."""


_TYPE_NAMES: dict[type, str] = {}


def _type_name(cls: type) -> str:
    name = _TYPE_NAMES.get(cls)
    if name is None:
        name = _TYPE_NAMES[cls] = f"{cls.__module__}:{cls.__qualname__}"
    return name


def _plain_list(values: tuple[Any, ...] | list[Any]) -> list[Any] | None:
    """``values`` as a list when each is a string, an int, a bool, None or a finite float (stored as it is), else
    None."""
    for v in values:
        t = type(v)
        if not (t is str or t is int or t is bool or v is None or t is float and math.isfinite(v)):
            return None
    return list(values)


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
        self._by_id: dict[int, int] = {}
        self._by_shape: dict[tuple[str, tuple[int, ...]], list[int]] = {}

    def enc(self, value: Any) -> Any:
        kind = type(value)
        kind = lazy.BASES.get(kind, kind)
        # Exact built-in types first (most nodes); then every other value exactly as the general rules say.
        if kind is str or kind is int or kind is bool or value is None:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"f": repr(value)}
        if kind is tuple:
            plain = _plain_list(value)  # a tuple of strings and numbers (a config pair, run ids): as it is
            if plain is not None:
                return {"t": plain}
            return self._rows(value, "t") or {"t": [self.enc(v) for v in value]}
        if kind in _FIELDS:
            return {"dc": _type_name(kind), "f": {name: self.enc(getattr(value, name)) for name in _FIELDS[kind]}}
        return self._general(value, kind)

    def _rows(self, values: tuple[Any, ...] | list[Any], container: str) -> dict[str, Any] | None:
        """Two or more dataclasses of one type as a table: the type and field names once, then one row each."""
        if len(values) < 2:
            return None
        kind = type(values[0])
        if any(type(v) is not kind for v in values):
            return None
        kind = lazy.BASES.get(kind, kind)
        if kind not in _FIELDS and not (dataclasses.is_dataclass(kind) and kind.__module__.startswith(_PACKAGE)):
            return None
        names = _field_names(kind)
        enc, isfinite = self.enc, math.isfinite
        rows = []
        for v in values:
            row = []
            for name in names:  # plain values as they are (most fields), the rest through enc
                x = getattr(v, name)
                t = type(x)
                row.append(x if t is str or t is int or t is bool or x is None or (t is float and isfinite(x))
                           else enc(x))
            rows.append(row)
        return {"dct": _type_name(kind), "k": container, "n": list(names), "r": rows}

    def array(self, value: np.ndarray) -> int:
        """The index of ``value`` among the stored arrays (an array held twice, or an equal one, is stored once)."""
        known = self._by_id.get(id(value))
        if known is not None:
            return known
        key = (_dtype_name(value.dtype), value.shape)
        same = self._by_shape.setdefault(key, [])
        if value.size >= 4096:
            for index in same:
                other = self.arrays[index]
                if other[:8].tobytes() == value[:8].tobytes() and other[-8:].tobytes() == value[-8:].tobytes() \
                        and _same_bits(other, value):
                    self._by_id[id(value)] = index
                    return index
        self.arrays.append(value)
        index = self._by_id[id(value)] = len(self.arrays) - 1
        same.append(index)
        return index

    def _general(self, value: Any, kind: type) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, enum.Enum):
            return {"i": int(value)}
        np_ = sys.modules.get("numpy")  # no numpy imported: no array or numpy scalar can exist
        if np_ is not None and isinstance(value, np_.ndarray):
            if _dtype_name(value.dtype) not in _ARRAY_DTYPES:
                raise NotCacheable(f"array of {value.dtype}")
            return {"a": self.array(value)}
        if np_ is not None and isinstance(value, np_.generic):
            return {"np": value.dtype.name, "v": self.enc(value.item())}
        if isinstance(value, enum.Enum):
            return {"e": _type_name(kind), "v": self.enc(value.value)}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if not kind.__module__.startswith(_PACKAGE):
                raise NotCacheable(_type_name(kind))
            return {"dc": _type_name(kind), "f": {name: self.enc(getattr(value, name)) for name in _field_names(kind)}}
        if kind is list:
            plain = _plain_list(value)
            if plain is not None:
                return {"l": plain}
            return self._rows(value, "l") or {"l": [self.enc(v) for v in value]}
        if kind is dict:
            return {"d": [[self.enc(k), self.enc(v)] for k, v in value.items()]}
        if kind in (set, frozenset):
            return {"s" if kind is set else "fs": [self.enc(v) for v in value]}
        if kind is bytes:
            return {"b": value.hex()}
        if isinstance(value, PurePosixPath) or kind.__name__ in ("PosixPath", "WindowsPath"):
            return {"p": str(value)}
        raise NotCacheable(kind.__name__)


_PLAIN = (type(None), bool, str, int, float)
_LAZY_FIELDS = {
    "pimm_inspect.model:ScalarSeries": ("values",),
    "pimm_inspect.sources.train_log._types:TrainLogIndex": ("step_steps", "step_offsets", "step_attempts"),
}
"""The dataclasses whose big columns are decoded on first use, and which: a series' values (a warm ``show`` reads only
steps and times) and a train.log's line index (read only to extend the result or jump in the log). By name, so that
nothing is imported to know it."""


class _Shape:
    """How a stored dataclass is rebuilt: its class, field names, which go to ``__init__``, and whether in order."""

    def __init__(self, cls: type) -> None:
        fields = dataclasses.fields(cls)
        self.cls = cls
        self.names = tuple(f.name for f in fields)
        self.init = frozenset(f.name for f in fields if f.init)
        self.positional = all(f.init for f in fields)
        self.lazy = _LAZY_FIELDS.get(_type_name(cls), ())
        """Fields whose big columns are decoded on first use (``lazy``)."""
        self.lazy_cls = lazy.lazy_class(cls, self.lazy) if self.lazy else cls


_SHAPES: dict[type, _Shape] = {}
"""The shape of each dataclass decoded so far, by class (made once per process, not once per entry: a warm ``ls``
reads thousands of small entries)."""


class _Decoder:
    def __init__(self, array: Callable[[Any], np.ndarray], pending: Callable[[Any], lazy.Pending | None]) -> None:
        self.array = array
        """The stored array of an index (decoded on first use, once)."""
        self.pending = pending
        """A big stored array as a Pending (decoded when first read), or None (decode it now)."""
        self._shapes: dict[Any, _Shape] = {}

    def _shape(self, name: Any, stored: Any) -> _Shape:
        """How to rebuild the dataclass ``name`` whose stored field names are ``stored`` (checked once per name)."""
        key = name if isinstance(name, str) else None
        shape = self._shapes.get(key) if key is not None else None
        if shape is None:
            cls = _lookup(name)
            shape = _SHAPES.get(cls)
            if shape is None:
                if not dataclasses.is_dataclass(cls):
                    raise BadEntry(f"{name!r} is not a dataclass")
                shape = _SHAPES[cls] = _Shape(cls)
            self._shapes[name] = shape
        if not isinstance(stored, (list, dict)) or sorted(stored) != sorted(shape.names):
            raise BadEntry(f"fields of {name!r} do not match")
        return shape

    def _build(self, shape: _Shape, names: Any, values: list[Any]) -> Any:
        cls = shape.cls
        if shape.lazy and any(type(v) is lazy.Pending for v in values):
            cls = shape.lazy_cls
        if shape.positional and names == shape.names:
            return cls(*values)
        fields = dict(zip(names, values))
        obj = cls(**{k: v for k, v in fields.items() if k in shape.init})
        for k in set(shape.names) - shape.init:
            object.__setattr__(obj, k, fields[k])
        return obj

    def _table(self, node: dict[str, Any]) -> Any:
        names, rows, container = node.get("n"), node.get("r"), node.get("k")
        shape = self._shape(node["dct"], names)
        if not isinstance(rows, list) or container not in ("t", "l"):
            raise BadEntry("bad table")
        assert isinstance(names, list)  # _shape checked it is the field names
        names_t = tuple(names)
        dec, build, plain = self.dec, self._build, _PLAIN
        lazy_at = [i for i, name in enumerate(names_t) if name in shape.lazy]
        out = []
        for row in rows:
            if not isinstance(row, list) or len(row) != len(names_t):
                raise BadEntry("bad table row")
            values = [v if type(v) in plain else dec(v) if i not in lazy_at else self._maybe_lazy(v)
                      for i, v in enumerate(row)] if lazy_at else [v if type(v) in plain else dec(v) for v in row]
            out.append(build(shape, names_t, values))
        return tuple(out) if container == "t" else out

    def _maybe_lazy(self, node: Any) -> Any:
        """A field that may stay undecoded: a big array becomes a Pending, anything else is decoded now."""
        if isinstance(node, dict) and len(node) == 1 and "a" in node:
            pending = self.pending(node["a"])
            if pending is not None:
                return pending
        return self.dec(node)

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
        if not isinstance(node, dict) or len(node) not in (1, 2, 4):
            raise BadEntry("bad node")
        if "dct" in node and len(node) == 4:
            return self._table(node)
        if "dc" in node:
            fields = node.get("f")
            shape = self._shape(node["dc"], fields)
            assert isinstance(fields, dict)  # _shape checked it holds exactly the field names
            return self._build(shape, tuple(fields), [self._maybe_lazy(v) if k in shape.lazy else self.dec(v)
                                                      for k, v in fields.items()])
        if "e" in node:
            cls = _lookup(node["e"])
            if not issubclass(cls, enum.Enum):
                raise BadEntry("not an enum")
            return cls(self.dec(node["v"]))
        tag: str
        body: Any  # a JSON value; each tag checks the kind it stores
        (tag, body), = node.items() if len(node) == 1 else [("np", node)]
        if tag == "a":
            return self.array(body)
        if tag == "np":
            if node.get("np") not in _ARRAY_DTYPES:
                raise BadEntry("bad scalar dtype")
            import numpy

            return numpy.dtype(node["np"]).type(self.dec(node["v"]))
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


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` (one dtype and shape) hold the same bytes, compared a slice at a time (no temporary the size of
    the arrays)."""
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    step = 1 << 17
    return all(flat_a[i:i + step].tobytes() == flat_b[i:i + step].tobytes() for i in range(0, flat_a.size, step))


def _no_arrays(index: Any) -> np.ndarray:
    raise BadEntry("an array in a text value")


def _no_pending(index: Any) -> None:
    return None


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
        return _Decoder(_no_arrays, _no_pending).dec(json.loads(text))
    except BadEntry:
        raise
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError, AttributeError) as exc:
        raise BadEntry(f"{type(exc).__name__}: {exc}") from None


def write(fh: Any, value: Any, header: dict[str, Any]) -> int:
    """Write the entry of ``value`` into the empty binary file ``fh`` (seekable), streaming; returns its size.

    The columns go first, chunk by chunk straight from the arrays (``columns.pack``), then the meta JSON (header,
    tree, per array its dtype, shape and chunk layout), then the head at the start is filled in.
    """
    encoder = _Encoder()
    tree = encoder.enc(value)
    fh.write(bytes(_HEAD))
    position = [_HEAD]

    def put(data: memoryview) -> tuple[int, int, int]:
        pad = -position[0] % 8
        if pad:
            fh.write(bytes(pad))
            position[0] += pad
        offset = position[0]
        fh.write(data)
        position[0] += data.nbytes
        return offset, data.nbytes, columns.crc(data)

    layout = []
    if encoder.arrays:
        from . import columns

        for array in encoder.arrays:
            layout.append([_dtype_name(array.dtype), list(array.shape), columns.pack(put, array)])
    del encoder
    meta = json.dumps({"format": FORMAT, "header": header, "tree": tree, "arrays": layout},
                      allow_nan=False, separators=(",", ":")).encode()
    meta_offset = position[0]
    fh.write(meta)
    head = (MAGIC + meta_offset.to_bytes(8, "little") + len(meta).to_bytes(8, "little")
            + hashlib.sha256(meta).hexdigest().encode() + b"\n")
    fh.seek(0)
    fh.write(head + bytes(_HEAD - len(head)))
    return meta_offset + len(meta)


def read(read_at: Callable[[int, int], bytes], size: int, header: dict[str, Any],
         keep_open: Callable[[], Callable[[int, int], bytes]] | None = None) -> Any:
    """The value of the entry of ``size`` bytes read through ``read_at(offset, length)``; ``BadEntry`` unless it is
    intact (meta checksum, each decoded chunk's CRC) and its header equals ``header``.

    With ``keep_open`` (a reader of the same bytes that stays usable afterwards, made when first needed) the big
    columns of ``lazy`` fields are decoded, and their chunks' CRCs checked, on first use; a chunk found damaged then
    raises ``BadEntry`` from that first use.
    """
    head = read_at(0, _HEAD)
    magic_end = len(MAGIC)
    if len(head) != _HEAD or head[:magic_end] != MAGIC or head[magic_end + 80:magic_end + 81] != b"\n":
        raise BadEntry("not a pimm-inspect cache entry")
    meta_offset = int.from_bytes(head[magic_end:magic_end + 8], "little")
    meta_len = int.from_bytes(head[magic_end + 8:magic_end + 16], "little")
    if not (_HEAD <= meta_offset and 0 < meta_len and meta_offset + meta_len == size):
        raise BadEntry("bad meta position")
    raw_meta = read_at(meta_offset, meta_len)
    if hashlib.sha256(raw_meta).hexdigest().encode() != head[magic_end + 16:magic_end + 80]:
        raise BadEntry("checksum mismatch (damaged entry)")
    try:
        meta = json.loads(raw_meta)
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("header") != header:
            raise BadEntry("stale or foreign entry")
        layout = meta["arrays"]
        if not isinstance(layout, list):
            raise BadEntry("bad array layout")
        decoded: dict[int, np.ndarray] = {}
        source = [read_at]  # the kept-open reader once a column is left for later

        def in_bounds(offset: int, length: int) -> bytes:
            if offset < _HEAD or offset + length > meta_offset:
                raise BadEntry("chunk outside the entry")
            return source[0](offset, length)

        def array(index: Any) -> np.ndarray:
            if type(index) is not int or not 0 <= index < len(layout):
                raise BadEntry("bad array index")
            got = decoded.get(index)
            if got is None:
                dtype_name, shape, chunks = layout[index]
                if dtype_name not in _ARRAY_DTYPES or not all(type(n) is int and n >= 0 for n in shape):
                    raise BadEntry("bad array layout")
                import numpy

                from . import columns

                got = decoded[index] = columns.unpack(chunks, numpy.dtype(dtype_name), tuple(shape), in_bounds)
            return got

        def pending(index: Any) -> lazy.Pending | None:
            if keep_open is None or type(index) is not int or not 0 <= index < len(layout) or index in decoded:
                return None
            shape = layout[index][1]
            if not isinstance(shape, list) or len(shape) != 1 or type(shape[0]) is not int \
                    or shape[0] < lazy.LAZY_MIN_ELEMENTS:
                return None
            if source[0] is read_at:
                source[0] = keep_open()
            return lazy.Pending(lambda: _or_bad_entry(array, index))

        return _Decoder(array, pending).dec(meta["tree"])
    except BadEntry:
        raise
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError, AttributeError, IndexError) as exc:
        raise BadEntry(f"{type(exc).__name__}: {exc}") from None


def _or_bad_entry(array: Callable[[Any], np.ndarray], index: int) -> np.ndarray:
    try:
        return array(index)
    except BadEntry:
        raise
    except (ValueError, KeyError, TypeError, OverflowError, IndexError, OSError) as exc:
        raise BadEntry(f"{type(exc).__name__}: {exc}") from None


def read_file(fh: Any, header: dict[str, Any]) -> Any:
    """``read`` of an open binary file: only the meta and the chunks are read, each once, the big columns of
    ``lazy`` fields on first use (the file is then kept open for them, through a duplicate of its descriptor)."""
    fd = fh.fileno()
    size = os.fstat(fd).st_size
    if size <= _SMALL_ENTRY:  # a run's row, a small file's result: one read, then slices of it
        whole = memoryview(os.pread(fd, size, 0))
        return read(lambda offset, length: bytes(whole[offset:offset + length]), size, header,
                    lambda: lazy.OpenEntry(fd).read_at)
    return read(lambda offset, length: os.pread(fd, length, offset), size, header, lambda: lazy.OpenEntry(fd).read_at)


def encode(value: Any, header: dict[str, Any]) -> bytes:
    """The entry bytes of ``value`` (``write`` into memory: for tests and small values)."""
    buffer = io.BytesIO()
    write(buffer, value, header)
    return buffer.getvalue()


def decode(data: bytes, header: dict[str, Any]) -> Any:
    """The value stored by ``encode``; ``BadEntry`` unless it is intact and its header equals ``header``."""
    view = memoryview(data)
    return read(lambda offset, length: bytes(view[offset:offset + length]), len(data), header)
