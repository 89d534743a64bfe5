"""Columns of a cached result decoded on first use, so a warm open costs only what is looked at.

A warm ``show`` of a 1 GB train.log needs every tag's steps and times but none of its values, and nothing of the
line index; decoding them all took most of the time and memory of the open. The codec rebuilds the few dataclasses
that hold such columns (``LAZY_FIELDS``) as a subclass whose named fields are properties: each holds a
:class:`Pending` until first read, then the decoded array (read-only, like the readers' own). Everything else about
the object is the dataclass's: ``dataclasses.replace``, pickling and the fields' values are the same.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

LAZY_MIN_ELEMENTS = 1 << 16
"""Columns smaller than this are decoded at once (laziness would save nothing worth an open file)."""


class OpenEntry:
    """A cache entry's file kept open for columns still to decode (closed when the last of them is gone)."""

    def __init__(self, fd: int) -> None:
        self.fd = os.dup(fd)
        weakref.finalize(self, os.close, self.fd)

    def read_at(self, offset: int, length: int) -> bytes:
        return os.pread(self.fd, length, offset)


class Pending:
    """A column not decoded yet: ``load()`` decodes it (once)."""

    __slots__ = ("_load", "_lock")

    def __init__(self, load: Callable[[], np.ndarray]) -> None:
        self._load = load
        self._lock = threading.Lock()

    def load(self) -> np.ndarray:
        with self._lock:
            return self._load()


_SUBCLASSES: dict[type, type] = {}
BASES: dict[type, type] = {}
"""Lazy subclass -> the dataclass it stands for (the codec stores it as that class)."""


def lazy_class(cls: type, names: tuple[str, ...]) -> type:
    """The subclass of the slots dataclass ``cls`` whose fields ``names`` may hold a :class:`Pending`."""
    made = _SUBCLASSES.get(cls)
    if made is not None:
        return made
    namespace: dict[str, Any] = {"__slots__": (), "__module__": __name__,
                                 "__doc__": f"A {cls.__name__} from the disk cache whose {', '.join(names)} "
                                            "are decoded on first use."}
    for name in names:
        slot = cls.__dict__[name]  # the slot's member descriptor

        def get(self: Any, slot: Any = slot) -> Any:
            value = slot.__get__(self)
            if type(value) is Pending:
                value = value.load()
                slot.__set__(self, value)
            return value

        def put(self: Any, value: Any, slot: Any = slot) -> None:
            slot.__set__(self, value)

        namespace[name] = property(get, put)
    fields = tuple(f.name for f in dataclasses.fields(cls))

    def reduce(self: Any) -> tuple[type, tuple[Any, ...]]:  # pickled as the dataclass itself, columns decoded
        return cls, tuple(getattr(self, name) for name in fields)

    namespace["__reduce__"] = reduce
    made = type(f"Lazy{cls.__name__}", (cls,), namespace)
    _SUBCLASSES[cls] = made
    BASES[made] = cls
    return made


def replace(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` that leaves columns not decoded yet undecoded (a lazy object stays lazy)."""
    base = BASES.get(type(obj))
    if base is None:
        return dataclasses.replace(obj, **changes)
    fields = {f.name: (changes[f.name] if f.name in changes else base.__dict__[f.name].__get__(obj))
              for f in dataclasses.fields(base)}
    return type(obj)(**fields)
