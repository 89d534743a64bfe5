"""Inert stand-ins for the globals a torch/numpy pickle may name (the allow-list).

Every stand-in is our own code: it builds a placeholder describing the object
(dtype, shape, sizes) and never imports torch, allocates from a size the file
chose, or calls anything the file names.
"""

from __future__ import annotations

import dataclasses
import posixpath
import struct
from typing import Any, Callable, cast

from ._pickle_budget import charge, charge_items
from ._placeholders import (ArrayPlaceholder, Inert, NumpyDtype, PickledGlobal, PickledObject, RecordGlobal, Sealed,
                            ShapeOutOfRange, StoragePlaceholder, StorageType, TensorPlaceholder, TorchDtype,
                            _shape, checked_shape, in_extent)


# ---------------------------------------------------------------- helpers

_TORCH_DTYPES: dict[str, tuple[str, int]] = {}
for _canon, _size, _aliases in (
    ("float64", 8, ("double",)), ("float32", 4, ("float",)), ("float16", 2, ("half",)),
    ("bfloat16", 2, ()), ("int64", 8, ("long",)), ("int32", 4, ("int",)), ("int16", 2, ("short",)),
    ("int8", 1, ()), ("uint8", 1, ()), ("uint16", 2, ()), ("uint32", 4, ()), ("uint64", 8, ()),
    ("bool", 1, ()), ("complex64", 8, ("cfloat",)), ("complex128", 16, ("cdouble",)),
    ("complex32", 4, ("chalf",)), ("qint8", 1, ()), ("quint8", 1, ()), ("qint32", 4, ()),
    ("quint4x2", 1, ()), ("quint2x4", 1, ()), ("float8_e4m3fn", 1, ()), ("float8_e5m2", 1, ()),
    ("float8_e4m3fnuz", 1, ()), ("float8_e5m2fnuz", 1, ()), ("float8_e8m0fnu", 1, ()),
):
    for _n in (_canon, *_aliases):
        _TORCH_DTYPES[_n] = (_canon, _size)

_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
    "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
    "UntypedStorage": "uint8", "TypedStorage": "unknown", "_UntypedStorage": "uint8",
}

_TORCH_CONSTANTS = {
    "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn",
    "jagged", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
}


def _tensor(storage: Any, size: Any, dtype: str | None = None, itemsize: int | None = None) -> TensorPlaceholder:
    """A tensor placeholder from a storage placeholder (or an explicit dtype) and a size."""
    checked = checked_shape(size)
    if checked is None:
        raise ShapeOutOfRange("a tensor size is out of range (over 64 dimensions or 2**63 elements)")
    shape, numel = checked
    charge_items(1 + len(shape))
    if isinstance(storage, StoragePlaceholder):
        dtype = storage.dtype
        itemsize = storage.nbytes // storage.numel if storage.numel else _TORCH_DTYPES.get(dtype, ("", 0))[1]
        key: str | None = storage.key
    else:
        key = None
    dtype = dtype or "unknown"
    itemsize = itemsize if itemsize is not None else _TORCH_DTYPES.get(dtype, ("", 0))[1]
    return TensorPlaceholder(dtype=dtype, shape=shape, numel=numel, nbytes=numel * itemsize, storage_key=key)


# ---------------------------------------------------------------- torch stand-ins

def _strided(storage: Any, storage_offset: Any, size: Any, stride: Any) -> TensorPlaceholder:
    if not (in_extent(storage_offset) and in_extent(stride)):
        raise ShapeOutOfRange("a tensor stride or storage offset is out of range (2**63 or more)")
    return _tensor(storage, size)


def _rebuild_tensor_v2(storage: Any, storage_offset: Any = 0, size: Any = (), stride: Any = (),
                       requires_grad: Any = False, backward_hooks: Any = None, metadata: Any = None) -> Any:
    if not (in_extent(storage_offset) and in_extent(stride)):  # ``_strided`` inline: once per tensor of a file
        raise ShapeOutOfRange("a tensor stride or storage offset is out of range (2**63 or more)")
    return _tensor(storage, size)


def _rebuild_tensor(storage: Any, storage_offset: Any = 0, size: Any = (), stride: Any = ()) -> Any:
    return _strided(storage, storage_offset, size, stride)


def _rebuild_qtensor(storage: Any, storage_offset: Any = 0, size: Any = (), stride: Any = (), *rest: Any) -> Any:
    return _strided(storage, storage_offset, size, stride)


def _rebuild_meta_tensor_no_storage(dtype: Any, size: Any = (), *rest: Any) -> Any:
    name, itemsize = (dtype.name, dtype.itemsize) if isinstance(dtype, TorchDtype) else ("unknown", 0)
    return dataclasses.replace(_tensor(None, size, name, itemsize), nbytes=0)


def _rebuild_wrapper_subclass(cls: Any, dtype: Any = None, size: Any = (), *rest: Any) -> Any:
    return _rebuild_meta_tensor_no_storage(dtype, size)


def _rebuild_device_tensor_from_numpy(data: Any, dtype: Any = None, *rest: Any) -> Any:
    name, itemsize = (dtype.name, dtype.itemsize) if isinstance(dtype, TorchDtype) else ("unknown", 0)
    shape = data.shape if isinstance(data, ArrayPlaceholder) else ()
    return _tensor(None, shape, name, itemsize)


def _rebuild_parameter(data: Any, *rest: Any) -> Any:
    return dataclasses.replace(data, is_parameter=True) if isinstance(data, TensorPlaceholder) else data


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    # ``func`` came from our find_class, so it is a stand-in, a PickledGlobal or Inert.
    return func(*args) if callable(func) and isinstance(args, tuple) else Inert()


def _torch_size(seq: Any = ()) -> tuple[Any, ...]:
    if not isinstance(seq, (list, tuple)):
        return ()
    charge_items(len(seq))
    return tuple(seq)


def _short_name(value: Any) -> str:
    """A device or layout name from the file: a short string, or a fixed mark (never ``str()`` of file data)."""
    return value[:64] if isinstance(value, str) else "unknown"


def _torch_device(kind: Any = "cpu", index: Any = None) -> str:
    ok_index = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < 1 << 20
    return f"{_short_name(kind)}:{index}" if ok_index else _short_name(kind)


def _get_layout(name: Any) -> str:
    return _short_name(name)


class TensorTypeMarker(metaclass=Sealed):
    """Stands for ``torch.Tensor``, ``torch.nn.Parameter`` or ``object`` when named as a type argument."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        return None


# ---------------------------------------------------------------- builtins / collections

class OrderedDictStandIn(dict[Any, Any], metaclass=Sealed):
    """``collections.OrderedDict`` as a plain dict that also accepts BUILD attributes (``_metadata``)."""

    def __init__(self, items: Any = ()) -> None:
        items = items if isinstance(items, (dict, list, tuple)) else ()
        charge_items(len(items))
        super().__init__(items)


class DefaultDictStandIn(dict[Any, Any], metaclass=Sealed):
    """``collections.defaultdict`` as a plain dict (the factory is never kept or called)."""

    def __init__(self, factory: Any = None, items: Any = ()) -> None:
        items = items if isinstance(items, (dict, list, tuple)) else ()
        charge_items(len(items))
        super().__init__(items)


def _set(items: Any = ()) -> set[Any]:
    if not isinstance(items, (list, tuple, set, frozenset)):
        return set()
    charge_items(len(items))
    return set(items)


def _frozenset(items: Any = ()) -> frozenset[Any]:
    if not isinstance(items, (list, tuple, set, frozenset)):
        return frozenset()
    charge_items(len(items))
    return frozenset(items)


def _complex(real: Any = 0, imag: Any = 0) -> Any:
    ok = all(isinstance(x, float) or (isinstance(x, int) and not isinstance(x, bool) and abs(x) < 2**1000)
             for x in (real, imag))
    return complex(real, imag) if ok else Inert()


def _slice(*args: Any) -> Any:
    return slice(*args[:3])


def _range(*args: Any) -> Any:
    return range(*args[:3]) if args and all(isinstance(a, int) for a in args[:3]) else range(0)


_TEXT_CODECS = {"latin1": "latin-1", "latin-1": "latin-1", "iso-8859-1": "latin-1", "iso8859-1": "latin-1",
                "utf-8": "utf-8", "utf8": "utf-8", "ascii": "ascii"}


def _encode(obj: Any, encoding: Any = "utf-8", errors: Any = "strict") -> Any:
    """``_codecs.encode`` limited to text codecs (protocol 2 stores bytes this way)."""
    codec = _TEXT_CODECS.get(str(encoding).lower())
    if not isinstance(obj, str) or codec is None:
        return Inert()
    charge(len(obj) * (4 if codec == "utf-8" else 1))
    return obj.encode(codec, errors if errors in ("strict", "replace", "ignore", "surrogateescape") else "strict")


def _bytearray(source: Any = b"", encoding: Any = None, errors: Any = None) -> Any:
    if isinstance(source, str):
        encoded = _encode(source, encoding or "utf-8")
        return bytearray(encoded) if isinstance(encoded, bytes) else Inert()
    if isinstance(source, (bytes, bytearray)):
        charge(len(source))
        return bytearray(source)
    if isinstance(source, int) and 0 <= source <= 1 << 20:  # a size chosen by the file: keep it small
        charge(source)
        return bytearray(source)
    return Inert()


def _path(*parts: Any) -> str:
    """``pathlib`` paths as POSIX strings."""
    strings = [p for p in parts if isinstance(p, str)]
    charge(sum(len(p) + 1 for p in strings))
    return posixpath.join(*strings) if strings else ""


_OUR_CLASSES: tuple[type, ...] = (OrderedDictStandIn, DefaultDictStandIn, ArrayPlaceholder, NumpyDtype,
                                  TensorTypeMarker)


BUILDABLE_TYPES: frozenset[type] = frozenset({OrderedDictStandIn, DefaultDictStandIn, ArrayPlaceholder, NumpyDtype,
                                             TensorTypeMarker})
"""Instances the unpickler may BUILD state into (besides ``PickledObject`` and ``Inert``)."""


def _reconstructor(cls: Any, base: Any = None, state: Any = None) -> Any:
    """``copyreg._reconstructor`` building only our own placeholder classes."""
    if isinstance(cls, PickledGlobal):
        obj_cls = cast("type[PickledObject]", cls)  # a PickledGlobal is a PickledObject subclass
        return obj_cls.__new__(obj_cls, state) if state is not None else obj_cls.__new__(obj_cls)
    if isinstance(cls, type) and issubclass(cls, _OUR_CLASSES):
        return cls()
    return Inert()


def _newobj(cls: Any, *args: Any) -> Any:
    """``copyreg.__newobj__`` building only our own placeholder classes."""
    if isinstance(cls, PickledGlobal):
        obj_cls = cast("type[PickledObject]", cls)  # a PickledGlobal is a PickledObject subclass
        return obj_cls.__new__(obj_cls, *args)
    if isinstance(cls, type) and issubclass(cls, _OUR_CLASSES):
        return cls.__new__(cls)
    return Inert()


def _newobj_ex(cls: Any, args: Any = (), kwargs: Any = None) -> Any:
    return _newobj(cls, *(args if isinstance(args, tuple) else ()))


# ---------------------------------------------------------------- numpy stand-ins

def _np_reconstruct(subtype: Any = None, shape: Any = (0,), typecode: Any = b"b") -> ArrayPlaceholder:
    return ArrayPlaceholder()


def _np_frombuffer(buf: Any, dtype: Any = None, shape: Any = (), order: Any = "C") -> ArrayPlaceholder:
    array = ArrayPlaceholder()
    array.dtype = dtype.str if isinstance(dtype, NumpyDtype) else "unknown"
    array.shape = _shape(shape)
    array.nbytes = len(buf) if isinstance(buf, (bytes, bytearray)) else 0
    return array


_STRUCT_CODES = {("f", 2): "e", ("f", 4): "f", ("f", 8): "d", ("i", 1): "b", ("i", 2): "h", ("i", 4): "i",
                 ("i", 8): "q", ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q", ("b", 1): "?"}


def _np_scalar(dtype: Any, data: Any = None) -> Any:
    """``numpy.core.multiarray.scalar``: decode numeric scalars with struct (no numpy import)."""
    if not isinstance(dtype, NumpyDtype):
        return Inert()
    spec = dtype.spec.lstrip("<>|=")
    kind, size = spec[:1], dtype.itemsize
    if kind == "O":
        return data
    if isinstance(data, str):
        data = data.encode("latin-1", errors="replace")
    if not isinstance(data, (bytes, bytearray)):
        return Inert()
    order = ">" if dtype.byteorder == ">" else "<"
    try:
        if kind == "c" and size in (8, 16):
            real, imag = struct.unpack(order + ("ff" if size == 8 else "dd"), bytes(data[:size]))
            return complex(real, imag)
        code = _STRUCT_CODES.get((kind, size))
        if code is not None:
            return struct.unpack(order + code, bytes(data[:size]))[0]
    except struct.error:
        return Inert()
    return Inert()


# ---------------------------------------------------------------- the allow-list

_FIXED: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_qtensor"): _rebuild_qtensor,
    ("torch._utils", "_rebuild_meta_tensor_no_storage"): _rebuild_meta_tensor_no_storage,
    ("torch._utils", "_rebuild_wrapper_subclass"): _rebuild_wrapper_subclass,
    ("torch._utils", "_rebuild_device_tensor_from_numpy"): _rebuild_device_tensor_from_numpy,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch", "Size"): _torch_size,
    ("torch", "device"): _torch_device,
    ("torch", "Tensor"): TensorTypeMarker,
    ("torch._tensor", "Tensor"): TensorTypeMarker,
    ("torch.nn.parameter", "Parameter"): TensorTypeMarker,
    ("torch.nn", "Parameter"): TensorTypeMarker,
    ("torch.serialization", "_get_layout"): _get_layout,
    ("collections", "OrderedDict"): OrderedDictStandIn,
    ("collections", "defaultdict"): DefaultDictStandIn,
    ("builtins", "set"): _set,
    ("builtins", "frozenset"): _frozenset,
    ("builtins", "complex"): _complex,
    ("builtins", "slice"): _slice,
    ("builtins", "range"): _range,
    ("builtins", "bytearray"): _bytearray,
    ("_codecs", "encode"): _encode,
    ("codecs", "encode"): _encode,
    ("copyreg", "_reconstructor"): _reconstructor,
    ("copyreg", "__newobj__"): _newobj,
    ("copyreg", "__newobj_ex__"): _newobj_ex,
    ("builtins", "object"): TensorTypeMarker,  # copyreg._reconstructor's base for protocol 0/1 objects
    ("pathlib", "PosixPath"): _path,
    ("pathlib", "PurePosixPath"): _path,
    ("pathlib", "WindowsPath"): _path,
    ("pathlib", "PureWindowsPath"): _path,
    ("pathlib", "Path"): _path,
    ("numpy", "ndarray"): ArrayPlaceholder,
    ("numpy", "dtype"): NumpyDtype,
}
for _np_mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _FIXED[(_np_mod, "_reconstruct")] = _np_reconstruct
    _FIXED[(_np_mod, "scalar")] = _np_scalar
for _np_mod in ("numpy.core.numeric", "numpy._core.numeric"):
    _FIXED[(_np_mod, "_frombuffer")] = _np_frombuffer

COUNTED_TENSOR_BUILDERS: frozenset[Callable[..., Any]] = frozenset({
    _rebuild_tensor_v2, _rebuild_tensor, _rebuild_qtensor, _rebuild_meta_tensor_no_storage,
    _rebuild_wrapper_subclass, _rebuild_device_tensor_from_numpy,
})
"""Stand-ins that each build one tensor (parameter wrappers are not counted twice)."""

_RECORD_MODULES = ("torch.distributed.checkpoint.metadata",)
_RECORD_NAMES = {("torch.distributed.checkpoint.filesystem", "_StorageInfo")}


def lookup(module: str, name: str) -> Any:
    """The stand-in for an allowed global, or None when the global is not allowed."""
    if (module, name) in _RECORD_NAMES or (module in _RECORD_MODULES and name.isidentifier()):
        return RecordGlobal(module, name)
    found = _FIXED.get((module, name))
    if found is not None:
        return found
    if module in ("torch", "torch.cuda", "torch.storage") and name in _STORAGE_DTYPES:
        dtype = _STORAGE_DTYPES[name]
        return StorageType(name, dtype, _TORCH_DTYPES.get(dtype, ("", 1))[1])
    if module == "torch" and name in _TORCH_DTYPES:
        canon, size = _TORCH_DTYPES[name]
        return TorchDtype(canon, size)
    if module == "torch" and name in _TORCH_CONSTANTS:
        return f"torch.{name}"
    return None
