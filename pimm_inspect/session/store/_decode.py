"""The cache codec's decoder: the JSON node tree ``_encode`` made, back into the value it was made from.

Only dataclasses and enums defined in already-imported ``pimm_inspect`` modules can be named (nothing is imported),
and a dataclass is rebuilt only when the stored field names are exactly its fields; anything else is ``BadEntry``.
The big columns of a few fields (``_LAZY_FIELDS``) may stay undecoded until first read (``lazy``).
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import lazy
from ._encode import _ARRAY_DTYPES, _PACKAGE, _type_name

if TYPE_CHECKING:
    import numpy as np


class BadEntry(Exception):
    """A stored entry does not decode into what it claims to be."""


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
