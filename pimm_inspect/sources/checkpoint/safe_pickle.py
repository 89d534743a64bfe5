"""An allow-listing unpickler that turns torch/numpy pickles into inert placeholders.

Nothing named by a pickle is ever imported or called: allowed globals map to our
own stand-ins (``_stand_ins``, building ``_placeholders``), every other global becomes an ``UnsafeGlobal``
class whose calls, ``__new__`` and ``__setstate__`` only record their arguments.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import struct
from dataclasses import dataclass
from typing import Any, Callable, ClassVar


from . import _stand_ins as si
from ._fast_pickle import fast_load
from ._pickle_budget import Budget, BudgetExceeded, activate, deactivate
from ._plain import key_text, to_plain  # re-exported: JSON-like views of unpickled trees
from ._placeholders import (  # re-exported: the public placeholder types
    ArrayPlaceholder,
    Inert,
    NumpyDtype,
    PickledGlobal,
    PickledObject,
    StoragePlaceholder,
    StorageType,
    TensorPlaceholder,
    TorchDtype,
    UnsafeGlobal,
)

__all__ = [
    "ArrayPlaceholder", "Inert", "NumpyDtype", "PickledObject", "StoragePlaceholder",
    "StorageType", "TensorPlaceholder", "TorchDtype", "UnsafeGlobal", "SafeLoad",
    "SafeUnpickler", "safe_loads", "to_plain", "key_text", "MAX_PICKLE_BYTES",
]

MAX_PICKLE_BYTES = 64 * 1024 * 1024
"""Pickles (data.pkl, .metadata, DCP byte items) larger than this are refused."""
MAX_RECORDED_GLOBALS = 200
"""At most this many distinct globals are listed (a hostile file could name millions)."""
MAX_GLOBAL_NAME = 300
"""A module or global name longer than this is never allowed and is recorded cut to this length."""
GLOBAL_CLASS_BYTES = 2048
"""What one placeholder class for a global is charged against the budget (a type object and its dict)."""
MAX_STORAGE_NUMEL = 2**62
"""A storage claiming more elements than this is treated as claiming none (no real machine holds it)."""


@dataclass(frozen=True, slots=True)
class SafeLoad:
    """The outcome of one safe unpickling: a value (maybe partial) and what was seen."""

    value: Any
    ok: bool
    """False when unpickling failed or was refused; ``value`` is then partial or None."""
    error: str | None = None
    truncated: bool = False
    """True when the input ended before the pickle's STOP opcode."""
    end_offset: int = 0
    """Offset just after the pickle (for pickle sequences such as the legacy torch format)."""


class _Recorder:
    """State shared by all pickles read from one file: globals, storages, tensors."""

    def __init__(self) -> None:
        self.unsafe_globals: list[str] = []
        self.globals_seen: list[str] = []
        self.storages: dict[str, StoragePlaceholder] = {}
        self.tensor_count = 0
        self.tensor_numel_bytes = 0

    def note_global(self, dotted: str, unsafe: bool) -> None:
        """Remember a referenced global once, keeping first-seen order, capped."""
        if dotted not in self.globals_seen and len(self.globals_seen) < MAX_RECORDED_GLOBALS:
            self.globals_seen.append(dotted)
        if unsafe and dotted not in self.unsafe_globals and len(self.unsafe_globals) < MAX_RECORDED_GLOBALS:
            self.unsafe_globals.append(dotted)

    @property
    def storage_bytes(self) -> int:
        """Bytes of all distinct storages referenced (what the file holds for tensors)."""
        return sum(s.nbytes for s in self.storages.values())


def _normalize(module: str, name: str) -> tuple[str, str]:
    """Map Python 2 names (``__builtin__.set``, ``copy_reg``) to Python 3 ones, as pickle does."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class _SafeMixin:
    """find_class/persistent_load shared by the C and the pure-Python unpickler."""

    recorder: _Recorder
    budget: Budget

    def find_class(self, module: Any, name: Any) -> Any:
        """Return our stand-in for an allowed global, else an inert ``UnsafeGlobal``."""
        module, name = str(module), str(name)  # both are str already (GLOBAL decodes, STACK_GLOBAL checks)
        if len(module) > MAX_GLOBAL_NAME or len(name) > MAX_GLOBAL_NAME:
            module, name = module[:MAX_GLOBAL_NAME], name[:MAX_GLOBAL_NAME]
            self.recorder.note_global(f"{module}.{name}", unsafe=True)
            self.budget.charge(GLOBAL_CLASS_BYTES, 1)
            return UnsafeGlobal(module, name)
        module, name = _normalize(module, name)
        stand_in = si.lookup(module, name)
        self.recorder.note_global(f"{module}.{name}", unsafe=stand_in is None)
        if stand_in is None or isinstance(stand_in, PickledGlobal):
            self.budget.charge(GLOBAL_CLASS_BYTES, 1)  # a new class object each time: ~2 KB, not 10 bytes
        if stand_in is None:
            return UnsafeGlobal(module, name)
        if stand_in in si.COUNTED_TENSOR_BUILDERS:
            return self._counting(stand_in)
        return stand_in

    def _counting(self, base: Any) -> Callable[..., Any]:
        """Wrap a tensor stand-in so each tensor the pickle builds is counted."""
        recorder = self.recorder

        def rebuild(*args: Any, **kwargs: Any) -> Any:
            result = base(*args, **kwargs)
            if isinstance(result, TensorPlaceholder):
                recorder.tensor_count += 1
                recorder.tensor_numel_bytes += result.nbytes
            return result

        return rebuild

    def persistent_load(self, pid: Any) -> Any:
        """Describe a tensor storage reference instead of reading its bytes."""
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            return Inert()
        storage_type, key, location, numel = pid[1], pid[2], pid[3], pid[4]
        if not isinstance(key, str) or len(key) > MAX_GLOBAL_NAME:
            return Inert()  # torch writes short string keys; anything else is not a storage we can name
        if key in self.recorder.storages:
            return self.recorder.storages[key]
        if isinstance(storage_type, StorageType):
            dtype, itemsize = str(storage_type.dtype), storage_type.itemsize
        else:
            dtype, itemsize = "unknown", 1
        # A pickle can BUILD new state into a stand-in: trust only plain non-negative ints.
        itemsize = itemsize if type(itemsize) is int and itemsize >= 0 else 1
        itemsize = itemsize if itemsize <= 64 else 1
        numel = numel if type(numel) is int and 0 <= numel <= MAX_STORAGE_NUMEL else 0
        location = location[:MAX_GLOBAL_NAME] if isinstance(location, str) else "unknown"
        self.budget.charge(256, 1)
        storage = StoragePlaceholder(dtype=dtype, key=key, location=location, numel=numel,
                                     nbytes=numel * itemsize)
        if len(self.recorder.storages) < 10_000_000:
            self.recorder.storages[key] = storage
        return storage


def _metered(code: int, op: Any) -> Any:
    """Wrap a calling opcode so it pays for its argument tuple (every opcode is counted by ``_PyUnpickler.load``).

    REDUCE/NEWOBJ hand ``*args`` to a stand-in or placeholder, which copies or keeps it: a memoised
    million-item tuple passed 3,000 times costs 3,000 copies, so each call is charged its length first.
    """
    if code not in (pickle.REDUCE[0], pickle.NEWOBJ[0], pickle.NEWOBJ_EX[0]):
        return op
    offsets = (2, 1) if code == pickle.NEWOBJ_EX[0] else (1,)

    def run_call(self: Any) -> None:
        budget = self.budget
        stack = self.stack
        for offset in offsets:
            if len(stack) >= offset and isinstance(stack[-offset], (tuple, list, dict)):
                budget.charge(8 * len(stack[-offset]), len(stack[-offset]))
        op(self)

    return run_call


class _PyUnpickler(_SafeMixin, pickle._Unpickler):
    """The pure-Python unpickler, the only one used: its memo is a dict and its stacks survive an error.

    CPython's C unpickler grows its memo array to twice any ``LONG_BINPUT`` index and zero-fills it, so
    10 hostile bytes claiming index 2**27 touch 2 GB (found by fuzzing). A byte scan could not tell such
    an index from text inside real pickles (every fixture pickle looked suspicious), so the C unpickler is
    not used at all; on checkpoints the pure-Python one costs ~10 ms more and stays flat in file size.
    """

    input_size = 0
    """Bytes in the whole input: no counted item can be longer (the BYTEARRAY8 guard)."""
    source: bytes | None = None
    """The whole input, for the fast loop (None: pickle's loop only)."""
    stream: io.BytesIO | None = None
    """The stream over ``source`` that pickle's loop reads (the fast loop keeps its position)."""

    # Set up by ``pickle._Unpickler``, which typeshed does not describe (annotations only, no values).
    read: Callable[[int], bytes]
    readinto: Callable[[bytearray], int]
    append: Callable[[Any], None]
    stack: list[Any]

    def load_bytearray8(self) -> None:
        """BYTEARRAY8, refusing a claimed length longer than the input before allocating.

        pickle's own version zero-fills ``bytearray(n)`` first, so 12 hostile bytes
        claiming 20 GB would touch 20 GB of memory before noticing the truncation.
        """
        (size,) = struct.unpack("<Q", self.read(8))
        if size > self.input_size:
            raise pickle.UnpicklingError("pickle data was truncated")
        buffer = bytearray(size)
        self.readinto(buffer)
        self.append(buffer)

    def load_build(self) -> None:
        """BUILD, applied only to an instance one of our constructors made; never to a class or function.

        pickle's own version calls ``setattr`` for slot state on whatever is on the stack: given a stand-in
        class, a function (``__defaults__``) or a placeholder type, that would change how every later file
        in the process is read. State goes through the placeholder's own ``__setstate__`` (looked up on its
        type), or into the instance ``__dict__`` for plain-attribute keys; dunder keys are dropped.
        """
        state = self.stack.pop()
        inst = self.stack[-1]
        kind = type(inst)
        if not (kind in si.BUILDABLE_TYPES or isinstance(inst, (PickledObject, Inert))):
            what = "class" if isinstance(inst, type) else "function" if callable(inst) else kind.__name__[:40]
            raise pickle.UnpicklingError(f"BUILD on a {what} refused (state may only be set on an object "
                                         "the pickle built)")
        setstate = getattr(kind, "__setstate__", None)
        if setstate is not None and setstate is not getattr(object, "__setstate__", None):
            setstate(inst, state)
            return
        parts = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        for part in parts:
            if isinstance(part, dict):
                for key, value in part.items():
                    if type(key) is str and not key.startswith("__"):
                        inst.__dict__[key] = value

    def load(self) -> Any:
        """``pickle._Unpickler.load`` with every opcode counted against the budget, read straight from the buffer.

        Given the whole input as bytes (``source``), the common opcodes run in ``_fast_pickle``'s loop, which
        hands the pickle back to this loop at the first opcode it does not handle plainly (a damaged or
        unusual input). This loop is pickle's own; what differs is only where the time goes: the opcode count
        is kept inline (not by a wrapper called per opcode), and until a FRAME opcode (protocol 4+; torch
        writes protocol 2) ``self.read`` is the buffer's own ``read`` rather than the unframer's, which would
        only forward to it.
        """
        self._unframer = pickle._Unframer(self._file_read, self._file_readline)  # type: ignore[attr-defined]
        self.read = self._file_read
        self.readinto = self._unframer.readinto
        self.readline = self._unframer.readline
        self.metastack: list[list[Any]] = []
        self.stack = []
        self.append = self.stack.append
        self.proto = 0
        if self.source is not None and self.stream is not None:
            done, value = fast_load(self, self.source, self.stream)
            if done:
                return value
        budget = self.budget
        max_ops = budget.max_ops
        dispatch = self.dispatch
        try:
            while True:
                key = self.read(1)
                if not key:
                    raise EOFError
                budget.ops += 1
                if budget.ops > max_ops:
                    budget.tick()  # raises BudgetExceeded with its message
                dispatch[key[0]](self)
        except pickle._Stop as stop:  # type: ignore[attr-defined]
            return stop.value

    def load_long1(self) -> None:
        """LONG1 (torch's storage sizes and offsets past 2**31, timestamps): pickle's own, ``decode_long`` inlined."""
        self.append(int.from_bytes(self.read(self.read(1)[0]), "little", signed=True))

    def load_frame(self) -> None:
        """FRAME: from now on every read goes through the unframer, as in pickle's own ``load``."""
        self.read = self._unframer.read
        pickle._Unpickler.load_frame(self)  # type: ignore[attr-defined]

    _file_read: Callable[[int], bytes]
    _file_readline: Callable[[], bytes]
    _unframer: Any
    proto: int

    dispatch: ClassVar[dict[int, Callable[..., Any]]] = dict(pickle._Unpickler.dispatch)
    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8
    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.FRAME[0]] = load_frame
    dispatch[pickle.LONG1[0]] = load_long1
    dispatch = {code: _metered(code, op) for code, op in dispatch.items()}


def _partial_from_stacks(unpickler: Any) -> Any:
    """Rebuild the outermost container from the stacks left by a failed load.

    Each MARK level holds the pending items of the dict or list just below it;
    folding them in from the deepest level up recovers what had been read.
    """
    levels = [list(s) for s in getattr(unpickler, "metastack", [])]
    levels.append(list(getattr(unpickler, "stack", [])))
    for depth in range(len(levels) - 1, 0, -1):
        below = levels[depth - 1]
        if not below:
            continue
        target, items = below[-1], levels[depth]
        try:
            if isinstance(target, dict):
                for i in range(0, len(items) - 1, 2):
                    target[items[i]] = items[i + 1]
            elif isinstance(target, list):
                target.extend(items)
        except TypeError:  # an unhashable placeholder as key: keep what we have
            continue
    return levels[0][0] if levels and levels[0] else None


class SafeUnpickler:
    """Reads one or several consecutive pickles from a byte buffer, safely."""

    def __init__(self, data: bytes | memoryview, *, fast: bool = True) -> None:
        self._data = bytes(data) if fast else None
        """The input for the fast loop (``fast=False``: pickle's loop only, as a reference for tests)."""
        self._stream = io.BytesIO(data)
        self._size = len(data)
        self.recorder = _Recorder()
        self.budget = Budget()
        """Shared by every pickle read from this buffer (the legacy format holds several)."""

    @property
    def unsafe_globals(self) -> tuple[str, ...]:
        """``module.name`` of every referenced global outside the allow-list."""
        return tuple(self.recorder.unsafe_globals)

    @property
    def called_globals(self) -> tuple[str, ...]:
        """Those of ``unsafe_globals`` the pickle called (constructed or invoked); the others it only names."""
        return tuple(self.budget.called)

    def seek(self, offset: int) -> None:
        """Continue reading at ``offset`` of the buffer."""
        self._stream.seek(offset)

    def load(self) -> SafeLoad:
        """Unpickle the next pickle; never raises (errors come back in the result, with a partial value)."""
        start = self._stream.tell()
        unpickler = _PyUnpickler(self._stream)
        unpickler.recorder = self.recorder
        unpickler.input_size = self._size
        unpickler.budget = self.budget
        unpickler.source, unpickler.stream = self._data, self._stream
        token = activate(self.budget)
        error: Exception
        partial: Any
        try:
            value = unpickler.load()
            return SafeLoad(value, True, end_offset=self._stream.tell())
        except BudgetExceeded as exc:
            return SafeLoad(_safe_partial(unpickler), False, f"{exc} (the per-file budget; the rest is not read)",
                            end_offset=self._stream.tell())
        except RecursionError as exc:
            error, partial = exc, None
        except MemoryError as exc:
            error, partial = exc, None
        except Exception as exc:  # noqa: BLE001 - any failure becomes a finding, never a crash
            error, partial = exc, _safe_partial(unpickler)
        finally:
            deactivate(token)
        if isinstance(error, (RecursionError, MemoryError)):
            what = "nesting too deep (recursion limit)" if isinstance(error, RecursionError) else \
                "out of memory while unpickling"
            return SafeLoad(None, False, what, end_offset=start)
        text = str(error).lower()
        at_end = self._stream.tell() >= self._size
        truncated = isinstance(error, EOFError) or _truncated_text(text) or at_end
        message = ("EOFError: pickle data was truncated" if at_end and not _truncated_text(text)
                   else f"{type(error).__name__}: {error}")[:300]
        return SafeLoad(partial, False, message, truncated=truncated, end_offset=self._stream.tell())


def _safe_partial(unpickler: Any) -> Any:
    """What ``_partial_from_stacks`` recovers, or None when even that fails."""
    try:
        return _partial_from_stacks(unpickler)
    except Exception:  # noqa: BLE001 - a partial value is a bonus, never a crash
        return None


def _truncated_text(text: str) -> bool:
    """Whether an unpickling error message already says the input ended early."""
    return "ran out of input" in text or "truncated" in text


def safe_loads(data: bytes | memoryview, cap: int = MAX_PICKLE_BYTES,
               budget: Budget | None = None) -> tuple[SafeLoad, SafeUnpickler]:
    """Unpickle one pickle from bytes with the allow-list; refuse buffers over ``cap``.

    ``budget`` is shared when several pickles make one checkpoint (DCP items); by default each gets its own.
    """
    if len(data) > cap:
        unpickler = SafeUnpickler(b"")
        return SafeLoad(None, False, f"pickle of {len(data)} bytes exceeds the {cap} byte cap"), unpickler
    unpickler = SafeUnpickler(data)
    if budget is not None:
        unpickler.budget = budget
    return unpickler.load(), unpickler
