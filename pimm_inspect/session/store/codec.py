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

import hashlib
import io
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import lazy
from ._decode import BadEntry as BadEntry, _Decoder
from ._encode import _ARRAY_DTYPES, NotCacheable as NotCacheable, _dtype_name, _Encoder

if TYPE_CHECKING:
    import numpy as np

# numpy and ``columns`` are imported with the first array written or read: an entry without arrays (a ``show``
# document, most rows) is read by a process that never imports numpy. The value trees are made by ``_encode`` and
# rebuilt by ``_decode``; this module is the entry's layout (head, columns, meta) and its checks.

FORMAT = 3
"""Bumped whenever the encoding changes; entries of another format are ignored (3: short columns inline)."""
MAGIC = b"pimm-inspect cache 3\n"
"""File start; then meta offset and length (8 bytes each, little-endian), the meta's SHA-256 (hex, newline), padding
to ``_HEAD`` bytes, the column chunks, and the meta JSON at the end."""
_HEAD = 128
_SMALL_ENTRY = 1 << 18
"""Entries up to this size are read whole at once (one system call); bigger ones chunk by chunk."""


_dumps = json.JSONEncoder(allow_nan=False, separators=(",", ":"), check_circular=False).encode
"""``json.dumps`` of a node tree, without the check for reference cycles (40% of the time of a row's detail): a tree
is made of new containers by ``_Encoder``, so it holds none (a value that does recurses there first)."""


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
    return _dumps(tree)


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
    meta = _dumps({"format": FORMAT, "header": header, "tree": tree, "arrays": layout}).encode()
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
    return read_fd(fh.fileno(), header)


def read_fd(fd: int, header: dict[str, Any], size: int | None = None) -> Any:
    """``read_file`` of an open descriptor (``size``: its size, from an ``fstat`` made just now)."""
    if size is None:
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
