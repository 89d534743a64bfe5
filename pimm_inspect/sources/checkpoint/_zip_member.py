"""One zip member, inflated with its output bounded by what it actually produces, never by its header.

``zipfile`` hands a whole compressed chunk to the bzip2/LZMA decompressor with no output limit and
trusts the declared size, so a 2.7 KB bzip2 member declaring 55 bytes inflates to 3 GiB in one call.
Here the raw bytes are streamed through a decompressor asked for at most ``limit + 1`` bytes at a time.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zipfile
import zlib
from typing import BinaryIO, Iterator, Mapping

from ._zip_dir import MemberInfo

CHUNK_BYTES = 64 * 1024
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
"""signature, versions, flags, method, time, date, crc, sizes, name length, extra length (30 bytes)."""


class MemberError(Exception):
    """A zip member that cannot be read within its bounds; the message names what is wrong."""


def read_member(fh: BinaryIO, info: MemberInfo, cap: int) -> bytes:
    """The inflated bytes of one member, at most ``cap`` and at most its declared size, CRC-checked."""
    if info.flag_bits & 0x1:
        raise MemberError("is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        raise MemberError(f"uses compression method {info.compress_type}, which torch never writes")
    declared = info.file_size
    if declared > cap:
        raise MemberError(f"declares {declared} bytes, over the {cap} byte cap; not read")
    fh.seek(info.header_offset)
    header = fh.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise MemberError("has no local header where the directory says")
    name_len, extra_len = _LOCAL_HEADER.unpack(header)[-2:]
    fh.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
    try:
        data = _inflate(_raw_chunks(fh, info.compress_size), info.compress_type, declared)
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError) as exc:
        raise MemberError(f"cannot be inflated ({type(exc).__name__}: {exc})") from None
    if len(data) > declared:
        raise MemberError(f"inflates past its declared {declared} bytes (a decompression bomb); not read")
    if len(data) < declared:
        raise MemberError(f"ends after {len(data)} of its declared {declared} bytes")
    if zlib.crc32(data) != info.CRC:
        raise MemberError("fails its CRC check")
    return bytes(data)


def _raw_chunks(fh: BinaryIO, size: int) -> Iterator[bytes]:
    """The member's compressed bytes in bounded chunks (a short file just ends the stream)."""
    left = size
    while left > 0:
        chunk = fh.read(min(CHUNK_BYTES, left))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _inflate(chunks: Iterator[bytes], method: int, limit: int) -> bytearray:
    """Up to ``limit + 1`` output bytes (one more than allowed shows the member is longer than declared)."""
    out = bytearray()
    if method == zipfile.ZIP_STORED:
        for chunk in chunks:
            out += chunk[: limit + 1 - len(out)]
            if len(out) > limit:
                break
        return out
    if method == zipfile.ZIP_DEFLATED:
        inflater = zlib.decompressobj(-15)
        for chunk in chunks:
            pending = chunk
            while pending and len(out) <= limit and not inflater.eof:
                out += inflater.decompress(pending, limit + 1 - len(out))
                pending = inflater.unconsumed_tail
            if len(out) > limit or inflater.eof:
                break
        return out
    decompressor: bz2.BZ2Decompressor | lzma.LZMADecompressor | None = \
        bz2.BZ2Decompressor() if method == zipfile.ZIP_BZIP2 else None
    head = b""
    for chunk in chunks:
        if decompressor is None:  # LZMA in zip: 2-byte version, 2-byte properties size, LZMA1 properties
            head += chunk
            if len(head) < 4 or len(head) < 4 + struct.unpack("<H", head[2:4])[0]:
                continue
            decompressor, chunk = _lzma_decompressor(head)
        out += decompressor.decompress(chunk, limit + 1 - len(out))
        while len(out) <= limit and not decompressor.eof and not decompressor.needs_input:
            out += decompressor.decompress(b"", limit + 1 - len(out))
        if len(out) > limit or decompressor.eof:
            break
    return out


def _lzma_decompressor(head: bytes) -> tuple[lzma.LZMADecompressor, bytes]:
    """A raw LZMA1 decompressor from the zip LZMA header, and the compressed bytes after it."""
    props_size = struct.unpack("<H", head[2:4])[0]
    props = head[4:4 + props_size]
    if props_size != 5:
        raise MemberError("has an LZMA header of an unexpected size")
    lc_lp_pb, dict_size = props[0], struct.unpack("<I", props[1:5])[0]
    if lc_lp_pb >= 9 * 5 * 5:
        raise MemberError("has invalid LZMA properties")
    filters = [{"id": lzma.FILTER_LZMA1, "lc": lc_lp_pb % 9, "lp": (lc_lp_pb // 9) % 5, "pb": lc_lp_pb // 45,
                "dict_size": dict_size}]
    return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters), head[4 + props_size:]


def small_text(fh: BinaryIO, members: Mapping[str, MemberInfo], name: str) -> str | None:
    """A tiny text record of the archive (byteorder, version), or None when absent or unreadable."""
    try:
        info = members[name]
        return read_member(fh, info, 64).decode("utf-8", errors="replace").strip()
    except (KeyError, MemberError, OSError, ValueError, EOFError, zlib.error, lzma.LZMAError):
        return None
