"""The cache codec's encoder: a value (reader result, row) as a tree of JSON nodes and a list of numpy arrays.

Exact built-in types are kept as they are; tuples, lists, dicts, sets, bytes, paths, numpy scalars, enums and
``pimm_inspect`` dataclasses become tagged nodes (``{"t": [...]}``, ``{"dc": name, "f": {...}}`` ...); two or more
dataclasses of one type become one table; an array becomes ``{"a": index}`` into ``_Encoder.arrays`` (an array held
twice, or an equal big one, is stored once). ``_decode`` rebuilds the value; ``codec`` writes and reads the entry.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from ... import lazy

if TYPE_CHECKING:
    import numpy as np

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


_AS_IS = frozenset((str, int, bool, type(None)))
"""The exact types ``_Encoder.enc`` stores as they are (a float is checked for NaN and infinity first)."""
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
            return self._rows(value, "t") or {"t": self._items(value)}
        if kind is dict:  # a config's mapping: its plain keys and values as they are, without a call each
            enc = self.enc
            return {"d": [[k if type(k) in _AS_IS else enc(k), v if type(v) in _AS_IS else enc(v)]
                          for k, v in value.items()]}
        if kind in _FIELDS:
            return {"dc": _type_name(kind), "f": self._fields(value, _FIELDS[kind])}
        if kind is list:
            plain = _plain_list(value)
            if plain is not None:
                return {"l": plain}
            return self._rows(value, "l") or {"l": self._items(value)}
        return self._general(value, kind)

    def _fields(self, value: Any, names: tuple[str, ...]) -> dict[str, Any]:
        """The fields ``names`` of the dataclass ``value``, encoded (a plain one as it is, without a call)."""
        enc = self.enc
        out = {}
        for name in names:
            x = getattr(value, name)
            out[name] = x if type(x) in _AS_IS else enc(x)
        return out

    def _items(self, values: tuple[Any, ...] | list[Any]) -> list[Any]:
        """Each of ``values`` encoded (a plain one as it is, without a call)."""
        enc = self.enc
        return [v if type(v) in _AS_IS else enc(v) for v in values]

    def _rows(self, values: tuple[Any, ...] | list[Any], container: str) -> dict[str, Any] | None:
        """Two or more dataclasses of one type as a table: the type and field names once, then one row each."""
        if len(values) < 2:
            return None
        first = type(values[0])
        kind = lazy.BASES.get(first, first)
        if kind not in _FIELDS and not (dataclasses.is_dataclass(kind) and kind.__module__.startswith(_PACKAGE)):
            return None  # (asked first: most sequences hold no dataclasses, and this needs no scan of them)
        if any(type(v) is not first for v in values):
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
            return {"dc": _type_name(kind), "f": self._fields(value, _field_names(kind))}
        if kind in (set, frozenset):
            return {"s" if kind is set else "fs": [self.enc(v) for v in value]}
        if kind is bytes:
            return {"b": value.hex()}
        if isinstance(value, PurePosixPath) or kind.__name__ in ("PosixPath", "WindowsPath"):
            return {"p": str(value)}
        raise NotCacheable(kind.__name__)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` (one dtype and shape) hold the same bytes, compared a slice at a time (no temporary the size of
    the arrays)."""
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    step = 1 << 17
    return all(flat_a[i:i + step].tobytes() == flat_b[i:i + step].tobytes() for i in range(0, flat_a.size, step))
