"""Placeholder objects the safe unpickler builds instead of real torch/numpy/user objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------- placeholders

class Inert:
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


class NumpyDtype:
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

    def __repr__(self) -> str:
        return f"NumpyDtype({self.str!r})"


class ArrayPlaceholder:
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


class PickledObject:
    """An instance of a non-stand-in global: records args and state, runs nothing."""

    __slots__ = ("args", "kwargs", "state")

    def __new__(cls, *args: Any, **kwargs: Any) -> "PickledObject":
        obj = object.__new__(cls)
        obj.args, obj.kwargs, obj.state = args, kwargs, None
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        return None

    def __setstate__(self, state: Any) -> None:
        # dataclass/``__dict__`` state, or (dict_state, slot_state) for slotted classes.
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):
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


class PickledGlobal(type):
    """Metaclass of the classes we hand to pickle for globals we do not stand in for."""

    def __new__(mcls, module: str, name: str) -> "PickledGlobal":
        short = name.rpartition(".")[2] or "obj"
        cls = super().__new__(mcls, short if short.isidentifier() else "obj", (PickledObject,),
                              {"__slots__": (), "__module__": __name__})
        cls.global_module, cls.global_name_ = module, name
        return cls

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


def _shape(size: Any) -> tuple[int, ...]:
    """A tuple of ints from a pickled size, or () when it is not one."""
    if isinstance(size, (tuple, list)) and all(isinstance(d, int) and d >= 0 for d in size):
        return tuple(size)
    return ()
