"""Placeholder objects the safe unpickler builds instead of real torch/numpy/user objects."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, cast

from ._pickle_budget import charge_items, note_call

# ---------------------------------------------------------------- placeholders

class Sealed(type):
    """Metaclass of every class a pickle can reach: its attributes cannot be set or deleted after creation.

    These classes are shared by every file read in the process, so a pickle that could set an attribute
    on one (BUILD with slot state calls ``setattr``) would change how later files are read.
    """

    def __setattr__(cls, name: str, value: Any) -> None:
        raise AttributeError(f"{cls.__name__} is read-only")

    def __delattr__(cls, name: str) -> None:
        raise AttributeError(f"{cls.__name__} is read-only")


class Inert(metaclass=Sealed):
    """A do-nothing object: calling it or reading attributes gives more of the same."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> "Inert":
        return Inert()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Inert()

    def __setstate__(self, state: Any) -> None:
        return None

    def __repr__(self) -> str:
        return "<inert>"


@dataclass(frozen=True, slots=True)
class TorchDtype:
    """A torch dtype named by a pickle (e.g. ``torch.float32``)."""

    name: str
    itemsize: int


@dataclass(frozen=True, slots=True)
class StorageType:
    """A torch storage class named by a pickle (e.g. ``torch.FloatStorage``)."""

    name: str
    dtype: str
    itemsize: int

    def __call__(self, *args: Any, **kwargs: Any) -> Inert:
        return Inert()


@dataclass(frozen=True, slots=True)
class StoragePlaceholder:
    """A tensor storage referenced by a persistent id; its bytes are never read."""

    dtype: str
    key: str
    location: str
    numel: int
    nbytes: int


@dataclass(frozen=True, slots=True)
class TensorPlaceholder:
    """A tensor described by dtype and shape, without its data."""

    dtype: str
    shape: tuple[int, ...]
    numel: int
    nbytes: int
    storage_key: str | None
    is_parameter: bool = False


class NumpyDtype(metaclass=Sealed):
    """A numpy dtype named by a pickle (``numpy.dtype('f8', False, True)`` + BUILD)."""

    __slots__ = ("spec", "byteorder")

    def __init__(self, spec: Any = "V", align: Any = False, copy: Any = False) -> None:
        self.spec = spec if isinstance(spec, str) else "V"
        self.byteorder = "="

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) > 1 and state[1] in ("<", ">", "|", "="):
            self.byteorder = state[1]

    @property
    def str(self) -> str:
        """numpy-style type string, e.g. ``<f8``."""
        return f"{self.byteorder}{self.spec}" if self.spec[:1] not in "<>|=" else self.spec

    @property
    def itemsize(self) -> int:
        """Bytes per element parsed from the spec (0 when unknown)."""
        digits = "".join(ch for ch in self.spec if ch.isdigit())
        return int(digits) if digits and len(digits) < 6 else 0

    def __repr__(self) -> builtins.str:
        return f"NumpyDtype({self.str!r})"


class ArrayPlaceholder(metaclass=Sealed):
    """A numpy array described by dtype, shape and byte count, without its data."""

    __slots__ = ("dtype", "shape", "nbytes")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.dtype = "unknown"
        self.shape: tuple[int, ...] = ()
        self.nbytes = 0

    def __setstate__(self, state: Any) -> None:
        # ndarray state: (version, shape, dtype, is_fortran, rawdata) or without version.
        if isinstance(state, tuple) and len(state) == 5:
            state = state[1:]
        if not (isinstance(state, tuple) and len(state) == 4):
            return
        shape, dtype, _, raw = state
        self.shape = _shape(shape)
        self.dtype = dtype.str if isinstance(dtype, NumpyDtype) else "unknown"
        self.nbytes = len(raw) if isinstance(raw, (bytes, bytearray, str)) else 0

    def __repr__(self) -> str:
        return f"ArrayPlaceholder({self.dtype!r}, {self.shape})"


class PickledObject(metaclass=Sealed):
    """An instance of a non-stand-in global: records args and state, runs nothing."""

    __slots__ = ("args", "kwargs", "state")
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    state: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> "PickledObject":
        charge_items(1 + len(args) + len(kwargs))
        if isinstance(cls, UnsafeGlobal):  # the pickle calls a global outside the allow-list (we run nothing)
            note_call(cast(Any, cls).dotted)
        obj = object.__new__(cls)
        obj.args, obj.kwargs, obj.state = args, kwargs, None
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        return None

    def __setstate__(self, state: Any) -> None:
        # dataclass/``__dict__`` state, or (dict_state, slot_state) for slotted classes.
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):
            charge_items(len(state[1]) + (len(state[0]) if isinstance(state[0], dict) else 0))
            merged = dict(state[0]) if isinstance(state[0], dict) else {}
            merged.update(state[1])
            state = merged
        self.state = state

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in PickledObject.__slots__:
            raise AttributeError(name)
        state = object.__getattribute__(self, "state")
        if isinstance(state, dict) and name in state:
            return state[name]
        return Inert()

    def __repr__(self) -> str:
        return f"<{type(self).dotted} placeholder>"  # type: ignore[attr-defined]


class PickledGlobal(Sealed):
    """Metaclass of the classes we hand to pickle for globals we do not stand in for."""

    def __new__(mcls, module: str, name: str) -> "PickledGlobal":
        short = name.rpartition(".")[2] or "obj"
        return super().__new__(mcls, short if short.isidentifier() else "obj", (PickledObject,),
                               {"__slots__": (), "__module__": __name__, "global_module": module,
                                "global_name_": name})

    def __init__(cls, module: str, name: str) -> None:
        super().__init__(cls.__name__, (PickledObject,), {})

    @property
    def dotted(cls) -> str:
        """``module.name`` as named in the pickle."""
        return f"{cls.global_module}.{cls.global_name_}"

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Inert()

    def __repr__(cls) -> str:
        return f"<global {cls.dotted}>"


class UnsafeGlobal(PickledGlobal):
    """A global outside the allow-list: recorded by the caller, never imported or called."""


class RecordGlobal(PickledGlobal):
    """A known data class (DCP metadata) rebuilt generically from its pickled state."""


MAX_NDIM = 64
"""Tensors have at most 64 dimensions (torch's own limit); a longer size is refused."""
MAX_EXTENT = 2**63
"""Every dimension, stride, offset and element count must be below this (an int64 in torch)."""


class ShapeOutOfRange(ValueError):
    """A pickled tensor size, stride or offset beyond what any tensor can have."""


def checked_shape(size: Any) -> tuple[tuple[int, ...], int] | None:
    """(shape, element count) from a pickled size; ``((), 1)`` when it is not a list of ints at all.

    None when it is out of range: more than 64 dimensions, a dimension of 2**63 or more, or a product
    of 2**63 or more. Checked before any arithmetic, so a 64 KiB integer costs nothing (``bit_length``
    is O(1)), and the running product stops as soon as it passes the bound.
    """
    if not isinstance(size, (tuple, list)):
        return (), 1
    for d in size:  # plain loops, not all()/any() over generators: this runs once per tensor of a checkpoint
        if type(d) is not int or d < 0:
            return (), 1
    if len(size) > MAX_NDIM:
        return None
    numel = 1
    for d in size:
        if d.bit_length() > 63:  # before multiplying: a huge int never enters the product
            return None
        numel *= d
        if numel >= MAX_EXTENT:
            return None  # (a later dimension of 2**63 or more would give None too: the same answer)
    return tuple(size), numel


def in_extent(value: Any) -> bool:
    """Whether a pickled offset or stride list is within int64 (non-ints are ignored, as torch's are unused here)."""
    if type(value) is int:  # a storage offset: the common case, answered without building a tuple
        return value.bit_length() <= 63
    values = value if isinstance(value, (tuple, list)) else (value,)
    if len(values) > MAX_NDIM:
        return False
    for v in values:
        if isinstance(v, int) and v.bit_length() > 63:
            return False
    return True


def _shape(size: Any) -> tuple[int, ...]:
    """A tuple of ints from a pickled size, or () when it is not one; raises when it is out of range."""
    checked = checked_shape(size)
    if checked is None:
        raise ShapeOutOfRange("a tensor or array size is out of range (over 64 dimensions or 2**63 elements)")
    return checked[0]
